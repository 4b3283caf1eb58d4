"""Which paths Theus never looks at: ignore files, secrets, build and dependency folders.

The walker and the watcher share these rules so the live graph equals a fresh index.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

# Folders that are dependencies, caches or build output in every ecosystem we index.
DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".next",
        ".nuxt",
        ".turbo",
        ".cache",
        ".gradle",
        ".idea",
        "dist",
        "build",
        "target",
        "bower_components",
        ".terraform",
        ".eggs",
        "site-packages",
        ".theus",
    }
)

# Data and config formats a credentials or secrets file comes in. Source code named
# `credentials.py` is code about credentials, and is indexed.
_DATA_FORMATS = (
    "",
    ".json",
    ".yaml",
    ".yml",
    ".toml",
    ".ini",
    ".cfg",
    ".conf",
    ".xml",
    ".csv",
    ".txt",
    ".properties",
    ".env",
)
# Never read at all, whatever the ignore files say.
_SECRET_PATTERNS = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*credentials*.json",
    ".netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    "*.kdbx",
    ".htpasswd",
    *(f"{stem}{ext}" for stem in ("credentials", "secrets") for ext in _DATA_FORMATS),
)

# Editor and tool temp files: saved-by-rename artefacts that must never enter the graph.
_TEMP_PATTERNS = (
    "*.swp",
    "*.swo",
    "*.swx",
    "*~",
    ".#*",
    "#*#",
    "*.tmp",
    "*.temp",
    "*.bak",
    "*.orig",
    "4913",
    ".*.kate-swp",
    "*.crdownload",
    "*___jb_tmp___",
    "*___jb_old___",
)


_SECRET = re.compile("|".join(fnmatch.translate(p) for p in _SECRET_PATTERNS))


def is_secret(name: str) -> bool:
    return _SECRET.match(name.lower()) is not None


def is_temp(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in _TEMP_PATTERNS)


def _spec(lines: list[str]) -> pathspec.GitIgnoreSpec | None:
    """Compile ignore lines; a line git would reject (a lone `!`) is skipped, as git does."""
    import pathspec  # here: the agent's tools import this module, `theus -p` before its request

    try:
        return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
    except ValueError:
        valid = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except ValueError:
                continue
            valid.append(line)
        return pathspec.GitIgnoreSpec.from_lines(valid) if valid else None


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


class IgnoreRules:
    """Git-style ignore rules for one project root, nested `.gitignore` files included.

    Rules are loaded per directory on first use and cached; a changed ignore file means a new
    `IgnoreRules`.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        top = _read_lines(root / ".git" / "info" / "exclude") + _read_lines(root / ".theusignore")
        self._top = _spec(top)
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}

    def _spec_for(self, rel_dir: str) -> pathspec.GitIgnoreSpec | None:
        if rel_dir not in self._specs:
            self._specs[rel_dir] = _spec(_read_lines(self.root / rel_dir / ".gitignore"))
        return self._specs[rel_dir]

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """True when `rel` (POSIX, relative to root) is excluded. Parents are not checked:
        the walker never descends into an excluded folder, and the watcher checks each part."""
        name = rel.rsplit("/", 1)[-1]
        if is_dir and name in DEFAULT_EXCLUDED_DIRS:
            return True
        if not is_dir and (is_secret(name) or is_temp(name)):
            return True
        suffix = "/" if is_dir else ""
        decision: bool | None = None
        if self._top is not None:
            decision = self._top.check_file(rel + suffix).include
        # Deeper .gitignore files override shallower ones, as in git.
        parts = rel.split("/")[:-1]
        for depth in range(len(parts) + 1):
            rel_dir = "/".join(parts[:depth])
            spec = self._spec_for(rel_dir)
            if spec is None:
                continue
            sub = rel[len(rel_dir) + 1 :] if rel_dir else rel
            verdict = spec.check_file(sub + suffix).include
            if verdict is not None:
                decision = verdict
        return bool(decision)

    def ignored_path(self, rel: str, is_dir: bool) -> bool:
        """Like `ignored`, but also true when any parent folder is excluded (for the watcher)."""
        parts = rel.split("/")
        for i in range(1, len(parts)):
            if self.ignored("/".join(parts[:i]), True):
                return True
        return self.ignored(rel, is_dir)


def relpath(root: Path, path: str | os.PathLike[str]) -> str:
    return Path(os.path.relpath(path, root)).as_posix()
