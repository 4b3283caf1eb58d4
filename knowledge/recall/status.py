"""Counters of the per-request injection, for `theus status`: how many blocks were attached,
found nothing above the threshold, missed the deadline or failed, and the last failure.

The agent's process counts (`InjectionStats`, starting from what the file holds) and writes
them to `<data dir>/recall.json` after every request; `theus status` reads that file.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol, Self

from knowledge.core import atomic, state_writer
from knowledge.core.paths import ProjectPaths

STATE_FILE = "recall.json"


class HasPaths(Protocol):
    @property
    def paths(self) -> ProjectPaths: ...


_NOT_COUNTED = {"counted": False}  # a field of a `Counters` that is not one of its counts


@dataclass
class Counters:
    """Outcome counts kept under one lock, and the last failure; subclasses name the
    outcomes as `int` fields. With a `path` (see `load`) every count is also written there,
    for `theus status` in another process."""

    last_error: str = ""
    lock: threading.Lock = field(
        default_factory=threading.Lock, repr=False, compare=False, metadata=_NOT_COUNTED
    )
    path: Path | None = field(default=None, metadata=_NOT_COUNTED)  # None: counts in memory

    def count(self, outcome: str, error: str = "") -> dict[str, Any]:
        """One more `outcome` (and `error` as the last failure); the counts after it."""
        with self.lock:
            setattr(self, outcome, getattr(self, outcome) + 1)
            if error:
                self.last_error = error
            state = self._snapshot()
        if self.path is not None:  # off the request's path: see knowledge.core.state_writer
            state_writer.write_soon(self.path, {**state, "updated": time.time()})
        return state

    @classmethod
    def load(cls, path: Path) -> Self:
        """Counting on from what earlier runs recorded at `path`."""
        state = atomic.read_state(path)
        stats = cls(last_error=str(state.get("last_error", "")), path=path)
        for name in stats.outcomes():
            setattr(stats, name, int(state.get(name, 0) or 0))
        return stats

    @classmethod
    def outcomes(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.type in ("int", int)]

    @classmethod
    def section(cls, path: Path) -> dict[str, Any]:
        """What `theus status` shows of the counts recorded at `path`."""
        state = atomic.read_state(path)
        out: dict[str, Any] = {name: int(state.get(name, 0)) for name in cls.outcomes()}
        if state.get("last_error"):
            out["last_error"] = state["last_error"]
        if state.get("updated"):
            out["updated"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state["updated"]))
        return out

    def as_dict(self) -> dict[str, Any]:
        with self.lock:
            return self._snapshot()

    def _snapshot(self) -> dict[str, Any]:
        return {
            f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get("counted", True)
        }


@dataclass
class InjectionStats(Counters):
    injected: int = 0  # a block was attached
    empty: int = 0  # nothing above the threshold
    late: int = 0  # recall missed its deadline: dropped, the turn went on
    failed: int = 0  # recall raised: logged, the turn went on
    chat: int = 0  # small talk or a follow-up with nothing new (`gate`): nothing recalled
    known: int = 0  # all it recalled was in the conversation's earlier blocks: none attached


def state_path(paths: ProjectPaths) -> Path:
    return paths.home / STATE_FILE


def status_section(project: HasPaths) -> dict[str, Any]:
    return InjectionStats.section(state_path(project.paths))
