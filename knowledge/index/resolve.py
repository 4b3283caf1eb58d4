"""Import resolution to in-repo files.

Placeholder with the agreed API (Python only) so the indexer runs; the full per-language
resolver replaces this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

from knowledge.index.model import Import


class RepoFiles:
    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = frozenset(paths)


def resolve(importer: str, imp: Import, language: str, files: RepoFiles) -> list[str]:
    if language != "python":
        return []
    base = PurePosixPath(importer).parent
    for _ in range(max(imp.level - 1, 0)):
        base = base.parent
    stem = imp.module.replace(".", "/")
    prefix = f"{base.as_posix()}/" if imp.level and base.as_posix() != "." else ""
    found = []
    for candidate in (f"{prefix}{stem}.py", f"{prefix}{stem}/__init__.py"):
        if candidate in files.paths:
            found.append(candidate)
            break
    for name in imp.names:
        sub = f"{prefix}{stem}/{name}.py" if stem else f"{prefix}{name}.py"
        if sub in files.paths:
            found.append(sub)
    return found
