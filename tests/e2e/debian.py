"""Programs the end-to-end tests drive (Chromium, tmux), installed from Debian when missing.

CI runs as root on a fresh image whose package lists are empty, so `apt-get update` comes
first. Elsewhere a missing program fails the test with what to install: never a skip.
Parallel test workers install one at a time: apt-get fails while another holds dpkg's lock.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

LOCK = Path(tempfile.gettempdir()) / "theus-tests-apt.lock"


def ensure(package: str, *commands: str) -> str:
    """The path of the first of `commands` found, installing `package` first if none is."""
    found = _which(commands)
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        with LOCK.open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            found = _which(commands)  # another worker may have installed it meanwhile
            if found:
                return found
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            subprocess.run(
                ["apt-get", "update", "-q"], check=True, env=env, capture_output=True, timeout=600
            )
            subprocess.run(
                ["apt-get", "install", "-y", "-q", package],
                check=True,
                env=env,
                capture_output=True,
                timeout=900,
            )
        found = _which(commands)
        if found:
            return found
    raise RuntimeError(f"{commands[0]} not found: install Debian's `{package}` package")


def _which(commands: tuple[str, ...]) -> str | None:
    for name in commands:
        found = shutil.which(name)
        if found:
            return found
    return None
