"""Programs the end-to-end tests drive (Chromium, tmux), installed from Debian when missing.

CI runs as root on a fresh image whose package lists are empty, so `apt-get update` comes
first. Elsewhere a missing program fails the test with what to install: never a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess


def ensure(package: str, *commands: str) -> str:
    """The path of the first of `commands` found, installing `package` first if none is."""
    for name in commands:
        found = shutil.which(name)
        if found:
            return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
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
        for name in commands:
            found = shutil.which(name)
            if found:
                return found
    raise RuntimeError(f"{commands[0]} not found: install Debian's `{package}` package")
