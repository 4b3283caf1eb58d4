"""Walk a project: every file worth indexing, and every file skipped with its reason."""

from __future__ import annotations

import errno
import os
import stat
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
            if not _decodable(entry.name):  # bytes that are not UTF-8: one reason, shown safely
                out.skipped[printable(rel)] = "undecodable-name"
                continue
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
            try:  # the tree may change under us: anything odd skips the entry, never the walk
                if is_link:
                    reason = _link_problem(root, Path(entry.path))
                    if not reason and is_dir:
                        reason = _folder_link(Path(entry.path))
                    if reason:
                        out.skipped[rel] = reason
                        continue
                st = entry.stat(follow_symlinks=True)
                inside_skip = (
                    is_dir and skip is not None and _inside(Path(entry.path).resolve(), skip)
                )
            except (OSError, RuntimeError):
                out.skipped[rel] = "unreadable"
                continue
            if is_dir:
                ident = (st.st_dev, st.st_ino)
                if ident in seen_dirs:
                    out.skipped[rel] = "symlink-loop"
                    continue
                if inside_skip:
                    continue
                seen_dirs.add(ident)
                out.dirs.append(rel)
                stack.append((Path(entry.path), rel))
            elif stat.S_ISREG(st.st_mode):
                out.files.append(FileEntry(rel, st.st_size, st.st_mtime_ns))
            else:  # a FIFO (opening it would block), a socket, a device
                out.skipped[rel] = "not-a-regular-file"
    out.files.sort(key=lambda f: f.rel)
    return out


def _decodable(name: str) -> bool:
    """Whether a name from the OS is real text (undecodable bytes arrive as surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(path: str) -> str:
    """`path` with undecodable bytes written as `\\xff`: safe to store and to print."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _folder_link(link: Path) -> str:
    """A link to a folder inside the project: to one of its own parents it is a loop; to any
    other folder a duplicate, walked under its own path only, so that its files are indexed
    once, where they live."""
    target, parent = link.resolve(), link.parent.resolve()
    return "symlink-loop" if target == parent or target in parent.parents else "symlink-duplicate"


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
