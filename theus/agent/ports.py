"""The memory layers the agent uses but does not own: the project (graph), the recaller, the
episodes port and the watcher. One `Project` is shared by all of them, so what the watcher
re-indexes is what the next recall sees. Each part fails open: missing, switched off or
broken means None, one log line, and the agent goes on without it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from theus.config import switched_off

log = logging.getLogger(__name__)

WATCHER_STOP_S = 0.2


@dataclass
class Memory:
    project: Any | None = None
    watcher: Any | None = None
    episodes: Any | None = None
    semantic: Any | None = None  # knowledge.embed.layer.SemanticLayer
    indexed_now: bool = False  # the project was indexed for the first time on opening
    one_shot: bool = False  # a run that answers and exits (headless): see `open_memory`
    # Called when the graph moved under a recaller read from the snapshot (the injector then
    # builds a live one for the next request).
    on_stale: Callable[[], None] | None = None
    _frozen_in_use: bool = False

    @property
    def semantic_on(self) -> bool:
        """Whether the semantic re-ranker is configured: it earns recall its extra 800 ms."""
        try:
            return bool(self.semantic is not None and self.semantic.on)
        except Exception as exc:
            log.warning("semantic layer state unknown, treating it as off: %s", exc)
            return False

    def recaller(self) -> Any:
        """Recaller factory for the Injector (runs on a worker thread, may be slow once)."""
        if self.project is None:
            raise RuntimeError("the project memory could not be opened")
        from knowledge.recall import make_recaller

        reranker = self.semantic.reranker if self.semantic is not None else None
        recaller = make_recaller(self.project, reranker=reranker,
                                 one_shot=self.one_shot and not self._frozen_in_use)
        self._frozen_in_use = recaller.frozen
        return recaller

    def injection_stats(self) -> Any:
        """Injection counters that persist for `theus status` (in memory without a project)."""
        from knowledge.recall.status import InjectionStats, state_path

        if self.project is None:
            return InjectionStats()
        return InjectionStats.load(state_path(self.project.paths))

    def on_update(self, update: Any) -> None:
        """Watcher callback: re-embed what changed first; a snapshot recaller is stale now."""
        if self._frozen_in_use and self.on_stale is not None:
            self.on_stale()
        if self.semantic is not None:
            try:
                self.semantic.notify_changed(getattr(update, "changed", ()))
            except Exception as exc:
                log.warning("semantic layer missed an update: %s", exc)

    def start_watcher(self) -> None:
        """Keep the graph fresh from now on (once; unless switched off or no project)."""
        if self.watcher is not None or self.project is None or switched_off("watch"):
            return
        try:
            from knowledge.watch import maybe_start

            self.watcher = maybe_start(self.project, on_update=self.on_update)
        except Exception as exc:
            log.warning("watcher not started: %s", exc)

    def close(self) -> None:
        if self.semantic is not None:
            try:
                self.semantic.stop()
            except Exception as exc:
                log.warning("semantic layer did not stop cleanly: %s", exc)
        if self.watcher is not None:
            try:
                # Bounded, and short: an exit must not wait for a catch-up rescan (it is done
                # again next start; saves are atomic, the thread is a daemon).
                self.watcher.stop(timeout=WATCHER_STOP_S)
            except Exception as exc:
                log.warning("watcher did not stop cleanly: %s", exc)
        if self.project is not None:
            try:
                self.project.close()
            except Exception as exc:
                log.warning("project store did not close cleanly: %s", exc)


def open_memory(
    root: Path, *, one_shot: bool = False, index_if_missing: bool = False, watch: bool = True
) -> Memory:
    """`one_shot` for runs that answer and exit (headless): recall starts from the saved
    scoring index and the embedding model loads at once (quick to open) with the saved
    vectors, while the whole project is not embedded for a run that ends in seconds;
    `theus index` and the chat app do that. `index_if_missing` indexes a project that never
    was, before the watcher starts on it (`memory.indexed_now` says so). `watch=False` leaves
    the watcher to `Memory.start_watcher`, for a run that may never need it."""
    memory = Memory(one_shot=one_shot)
    try:
        from knowledge.project import Project

        memory.project = Project(root)
        if index_if_missing and not memory.project.has_index:
            memory.project.index()
            memory.indexed_now = True
    except Exception as exc:
        log.warning("project memory unavailable, continuing without it: %s", exc)
        return memory
    if not switched_off("embeddings"):
        try:
            from knowledge.embed.layer import SemanticLayer

            memory.semantic = SemanticLayer(memory.project, one_shot=one_shot)
            if one_shot:
                memory.semantic.start_loading()
            else:
                memory.semantic.start_background()
        except Exception as exc:
            log.warning("semantic layer unavailable: %s", exc)
            memory.semantic = None
    if watch:
        memory.start_watcher()
    if not switched_off("episodes"):
        try:
            from knowledge.episodes import episode_sink

            memory.episodes = episode_sink(memory.project)
        except Exception as exc:
            log.warning("episodes unavailable: %s", exc)
    return memory
