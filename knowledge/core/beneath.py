"""Open a path beneath a root without ever leaving it, even while the tree changes.

A check of the path followed by an open of the same path loses a race against a folder
swapped for a symlink in between (the open follows it outside). Here every component is
opened relative to its parent's descriptor with O_NOFOLLOW, starting from the root: a symlink
met on the way fails the open instead of being followed. Callers pass the real path's parts
(symlinks inside the root already resolved), so a link found now was planted by a race.

    fd = open_beneath(root, ("src", "app.py"), os.O_RDONLY)
    fd = open_beneath(root, ("new", "dir", "f.py"), os.O_WRONLY | os.O_CREAT, make_dirs=True)
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def open_beneath(
    root: Path | str,
    parts: Sequence[str],
    flags: int,
    mode: int = 0o644,
    *,
    make_dirs: bool = False,
) -> int:
    """A descriptor for root/parts[0]/.../parts[-1] opened with `flags` (plus O_NOFOLLOW),
    never outside `root`. Missing folders are created when `make_dirs`. Raises OSError (ELOOP
    or ENOTDIR for a component that is a symlink or no folder now)."""
    if any(p in ("", ".", "..") or "/" in p for p in parts):
        raise OSError(22, f"not a plain relative path: {'/'.join(parts)}")
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in parts[:-1]:
            child = _folder(fd, name, make_dirs)
            os.close(fd)
            fd = child
        if not parts:
            return os.dup(fd)
        return os.open(
            parts[-1], flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode, dir_fd=fd
        )
    finally:
        os.close(fd)


def _folder(parent: int, name: str, make_dirs: bool) -> int:
    """The folder `name` in `parent`, created first if asked and missing."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not make_dirs:
            raise
    with contextlib.suppress(FileExistsError):  # made meanwhile: opened (and checked) below
        os.mkdir(name, 0o755, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


def read_beneath(root: Path | str, rel: str, limit: int = -1) -> bytes:
    """The bytes of the regular file at `rel` (symlinks inside the root allowed), at most
    `limit` (-1: all). Raises OSError when it is gone, outside the root now, or no file."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, rel))
    if os.path.commonpath([real_root, real]) != real_root:
        raise OSError(18, f"{rel}: leads outside the project")
    parts = Path(os.path.relpath(real, real_root)).parts
    fd = open_beneath(real_root, parts, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(21, f"{rel}: not a regular file")
        return fh.read(limit)
