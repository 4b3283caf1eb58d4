"""The memory layers the agent uses but does not own: the project (graph), the recaller, the
episodes port and the watcher. One `Project` is shared by all of them, so what the watcher
re-indexes is what the next recall sees. Each part fails open: missing, switched off or
broken means None, one log line, and the agent goes on without it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from theus.config import switched_off

log = logging.getLogger(__name__)


@dataclass
class Memory:
    project: Any | None = None
    watcher: Any | None = None
    episodes: Any | None = None

    def recaller(self) -> Any:
        """Recaller factory for the Injector (runs on a worker thread, may be slow once)."""
        if self.project is None:
            raise RuntimeError("the project memory could not be opened")
        from knowledge.recall import Recaller

        return Recaller(self.project.graph, self.project.root)

    def close(self) -> None:
        if self.watcher is not None:
            try:
                self.watcher.stop()
            except Exception as exc:
                log.warning("watcher did not stop cleanly: %s", exc)
        if self.project is not None:
            try:
                self.project.close()
            except Exception as exc:
                log.warning("project store did not close cleanly: %s", exc)


def open_memory(root: Path, *, watch: bool = True) -> Memory:
    memory = Memory()
    try:
        from knowledge.project import Project

        memory.project = Project(root)
    except Exception as exc:
        log.warning("project memory unavailable, continuing without it: %s", exc)
        return memory
    if watch and not switched_off("watch"):
        try:
            from knowledge.watch import maybe_start

            memory.watcher = maybe_start(memory.project)
        except Exception as exc:
            log.warning("watcher not started: %s", exc)
    if not switched_off("episodes"):
        try:
            from knowledge.episodes import episode_sink

            memory.episodes = episode_sink(memory.project)
        except Exception as exc:
            log.warning("episodes unavailable: %s", exc)
    return memory
