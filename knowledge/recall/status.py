"""Counters of the per-request injection, for `theus status`: how many blocks were attached,
found nothing above the threshold, missed the deadline or failed, and the last failure.

The agent's process counts (`InjectionStats`, starting from what the file holds) and writes
them to `<data dir>/recall.json` after every request; `theus status` reads that file.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from knowledge import atomic
from knowledge.paths import ProjectPaths

STATE_FILE = "recall.json"
OUTCOMES = ("injected", "empty", "late", "failed")


class HasPaths(Protocol):
    @property
    def paths(self) -> ProjectPaths: ...


@dataclass
class InjectionStats:
    injected: int = 0  # a block was attached
    empty: int = 0  # nothing above the threshold
    late: int = 0  # recall missed its deadline: dropped, the turn went on
    failed: int = 0  # recall raised: logged, the turn went on
    last_error: str = ""
    path: Path | None = None  # where to persist; None keeps the counts in memory
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, outcome: str, error: str = "") -> None:
        with self.lock:
            setattr(self, outcome, getattr(self, outcome) + 1)
            if error:
                self.last_error = error
            state = self.as_dict()
        if self.path is not None:
            atomic.write_state(self.path, {**state, "updated": time.time()})

    @classmethod
    def load(cls, path: Path) -> InjectionStats:
        """Counting on from what earlier runs recorded at `path`."""
        state = atomic.read_state(path)
        counts = {n: int(state.get(n, 0) or 0) for n in OUTCOMES}
        return cls(**counts, last_error=str(state.get("last_error", "")), path=path)

    def as_dict(self) -> dict[str, Any]:
        return {**{name: getattr(self, name) for name in OUTCOMES},
                "last_error": self.last_error}


def state_path(paths: ProjectPaths) -> Path:
    return paths.home / STATE_FILE


def status_section(project: HasPaths) -> dict[str, Any]:
    state = atomic.read_state(state_path(project.paths))
    out: dict[str, Any] = {name: int(state.get(name, 0)) for name in OUTCOMES}
    if state.get("last_error"):
        out["last_error"] = state["last_error"]
    if state.get("updated"):
        out["updated"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state["updated"]))
    return out
