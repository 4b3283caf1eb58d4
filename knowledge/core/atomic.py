"""Crash-safe file writes: a `kill -9` at any instant leaves the old file or the new one.

The recipe git and SQLite-era editors use: write a temp file in the same directory, fsync it,
`os.replace` it over the target (atomic on POSIX and Windows), then fsync the directory so the
rename itself survives a power cut. A killed writer leaves only its temp file behind;
`clean_orphans` removes those at start. Temp names carry the writer's pid, so a cleaner never
deletes the temp file of a writer that is still running.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# `.<target name>.<pid>.<random>.tmp`: hidden, and `*.tmp` is a temp name to every watcher.
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.tmp$")
_STALE_SECONDS = 3600.0  # a temp file this old is orphaned even if its pid was reused


def write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` atomically; the parent directory must exist."""
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_text(path: Path, text: str, mode: int | None = None) -> None:
    write_bytes(path, text.encode("utf-8"), mode)


def write_state(path: Path, state: dict[str, Any]) -> None:
    """A layer's small JSON state file, for `theus status` in another process. Best effort:
    a read-only data dir must not stop the layer that reports."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(state, sort_keys=True))


def read_state(path: Path) -> dict[str, Any]:
    """The state written by `write_state`; {} when missing or unreadable."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}


def remove(path: Path) -> bool:
    """Delete a file durably; False when it was already gone."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    fsync_dir(path.parent)
    return True


def fsync_dir(directory: Path) -> None:
    """Make a rename or unlink in `directory` durable (a no-op where directories can't open)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; the rename is still atomic
    finally:
        os.close(fd)


def is_temp_name(name: str) -> bool:
    return _TEMP.match(name) is not None


def clean_orphans(directory: Path) -> list[Path]:
    """Delete temp files left by writers that died; returns what was removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        match = _TEMP.match(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False):
            continue
        try:
            stale = now - entry.stat(follow_symlinks=False).st_mtime > _STALE_SECONDS
        except OSError:
            continue
        if stale or not _alive(int(match["pid"])):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":
        return True  # on Windows os.kill(pid, 0) would terminate the process: rely on age
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists but not ours, or the platform can't tell: leave its file alone
    return True


@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Exclusive advisory lock across processes for a read-modify-write of shared files.

    Without it, `theus memory add` in a shell and the app's memories panel could each read
    MEMORY.md, append their line and replace the file, losing one of the two lines.
    """
    try:
        import fcntl
    except ImportError:  # Windows: no flock; a lost race there costs one line, not the file
        yield
        return
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
