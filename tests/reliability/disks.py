"""Real faulty disks for the reliability tests: a small tmpfs that fills up, a folder mounted
read-only. As root (CI, this machine) they are real mounts; without root a full disk is a file
size limit of zero for this process (every write that grows a file fails, as on a full disk)
and a read-only folder is its permissions."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

SIZE = "4m"


def _can_mount() -> bool:
    return os.geteuid() == 0 and shutil.which("mount") is not None


class Disk(type(Path())):  # type: ignore[misc]
    """The mount point of a small filesystem; `fill` uses up its free space."""

    mounted: bool = False
    _limit: tuple[int, int] | None = None

    def fill(self) -> None:
        if self.mounted:
            with contextlib.suppress(OSError), open(self / ".filler", "wb") as fh:  # close too
                block = b"\0" * 65536
                while True:
                    fh.write(block)
                    fh.flush()
            return
        self._limit = resource.getrlimit(resource.RLIMIT_FSIZE)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, self._limit[1]))

    def preexec(self) -> None:
        """For a child process: without a real full disk, the same zero file-size limit."""
        if not self.mounted:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))

    def release(self) -> None:
        if self._limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, self._limit)
            signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
            self._limit = None


@contextlib.contextmanager
def full_disk(path: Path) -> Iterator[Disk]:
    """A folder on a filesystem that `fill()` makes full (a 4 MB tmpfs when we can mount)."""
    path.mkdir(parents=True, exist_ok=True)
    disk = Disk(path)
    if _can_mount():
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(path)], check=True
        )
        disk.mounted = True
    try:
        yield disk
    finally:
        disk.release()
        if disk.mounted:
            subprocess.run(["umount", "-l", str(path)], check=False)


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[Path]:
    """`path` read-only for this block: a read-only bind mount as root, else permissions."""
    if _can_mount():
        subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
        try:
            subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], check=True)
            yield path
        finally:
            subprocess.run(["umount", "-l", str(path)], check=False)
        return
    modes = {p: p.stat().st_mode for p in [path, *path.rglob("*")]}
    for p in modes:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        yield path
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
