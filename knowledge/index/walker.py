"""Walk a project: every file worth indexing, and every file skipped with its reason."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from knowledge.index.ignore import IgnoreRules, is_secret, is_temp


@dataclass(frozen=True, slots=True)
class FileEntry:
    rel: str  # POSIX path relative to the root
    size: int
    mtime_ns: int


@dataclass(slots=True)
class Walk:
    files: list[FileEntry] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # rel -> reason
    dirs: list[str] = field(default_factory=list)  # folders walked into, "" for the root


def walk(root: Path, rules: IgnoreRules | None = None, skip: Path | None = None) -> Walk:
    """Depth-first walk that never leaves `root` and never loops.

    Symlinks are followed only when they resolve inside the root; a directory whose real
    path was already walked is a loop (or a duplicate) and is skipped. `skip` is a folder
    never entered: the Theus data dir when it sits inside the project.
    """
    root = root.resolve()
    rules = rules or IgnoreRules(root)
    out = Walk(dirs=[""])
    seen_dirs: set[tuple[int, int]] = set()
    st = root.stat()
    seen_dirs.add((st.st_dev, st.st_ino))
    stack: list[tuple[Path, str]] = [(root, "")]
    while stack:
        directory, rel_dir = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            if rel_dir:
                out.skipped[rel_dir] = "unreadable"
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError as exc:
                out.skipped[rel] = "symlink-loop" if exc.errno == errno.ELOOP else "unreadable"
                continue
            if not is_dir and is_secret(entry.name):
                out.skipped[rel] = "secret"
                continue
            if not is_dir and is_temp(entry.name):
                continue
            if rules.ignored(rel, is_dir):
                continue
            if is_link:
                reason = _link_problem(root, Path(entry.path))
                if reason:
                    out.skipped[rel] = reason
                    continue
            try:
                st = entry.stat(follow_symlinks=True)
            except OSError:
                out.skipped[rel] = "unreadable"
                continue
            if is_dir:
                ident = (st.st_dev, st.st_ino)
                if ident in seen_dirs:
                    out.skipped[rel] = "symlink-loop"
                    continue
                if skip is not None and _inside(Path(entry.path).resolve(), skip):
                    continue
                seen_dirs.add(ident)
                out.dirs.append(rel)
                stack.append((Path(entry.path), rel))
            elif entry.is_file(follow_symlinks=True):
                out.files.append(FileEntry(rel, st.st_size, st.st_mtime_ns))
    out.files.sort(key=lambda f: f.rel)
    return out


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _link_problem(root: Path, link: Path) -> str:
    try:
        target = link.resolve(strict=True)
    except RuntimeError:
        return "symlink-loop"
    except OSError as exc:
        return "symlink-loop" if exc.errno == errno.ELOOP else "broken-symlink"
    if target != root and root not in target.parents:
        return "symlink-outside"
    return ""
