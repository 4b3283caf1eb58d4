"""The watcher's state on disk, so a separate `theus status` can tell whether one runs.

One small JSON file per project (`<data dir>/watch.json`), replaced atomically. A file left
behind by a process that died is recognised by its pid (and, on Linux, the process start
time, so a reused pid does not look like a live watcher).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from knowledge.core import atomic
from knowledge.core.paths import ProjectPaths

STATE_FILE = "watch.json"


def state_path(paths: ProjectPaths) -> Path:
    return paths.home / STATE_FILE


def process_start(pid: int) -> str:
    """An opaque start stamp for `pid` ("" when unknown), to tell a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # Field 22 (starttime); the command name in field 2 may hold spaces, so split after ')'.
    return stat.rsplit(")", 1)[-1].split()[19]


def alive(pid: int, start: str) -> bool:
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except OSError:
        return False
    return not start or process_start(pid) in ("", start)


def write_state(paths: ProjectPaths, state: dict[str, Any]) -> None:
    atomic.write_state(state_path(paths), state)


def read_state(paths: ProjectPaths) -> dict[str, Any]:
    return atomic.read_state(state_path(paths))


def clock(stamp: float | None) -> str | None:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp)) if stamp else None


def describe(state: dict[str, Any]) -> dict[str, Any]:
    """The status section for a persisted state: a dead writer means not running."""
    pid = state.get("pid")
    running = (
        bool(state.get("running"))
        and isinstance(pid, int)
        and alive(pid, str(state.get("pid_start", "")))
    )
    return {
        "running": running,
        "mode": state.get("mode") if running else None,
        "pid": pid if running else None,
        "started": clock(state.get("started")) if running else None,
        "last_update": clock(state.get("last_update")),
        "last_change": state.get("last_change"),
        "updates": state.get("updates", 0),
        "rescans": state.get("rescans", 0),
        "warning": state.get("warning") if running else None,
    }
