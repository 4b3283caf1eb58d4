"""Every memory layer of one project, owned by one object: the graph (`Project`), the watcher,
the semantic layer, the episodes, the MEMORY.md bridge, the run history (few-shot examples),
and the one recaller they feed. The chat
app, `theus -p`, the one-shot commands and the dashboard all open it with `open_memory` (or
`Memory(...).open()` when the opening must wait for a worker thread), so they rank, remember
and report alike.

Each layer fails open: missing, switched off (`THEUS_NO_<LAYER>=1`) or broken means None, one
log line, and the rest goes on without it. Layer state lives here, not in module globals:
`knowledge.memory.status.gather(project, memory)` reads it from the `Memory` a process holds.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from knowledge.core.settings import current, is_off

if TYPE_CHECKING:  # the layers are imported when opened: a one-shot run needs few of them
    from knowledge.core.paths import ProjectPaths
    from knowledge.core.runs import RunSummary
    from knowledge.embed.layer import SemanticLayer
    from knowledge.episodes import Episode, EpisodeStore
    from knowledge.facts.layer import FactsLayer
    from knowledge.facts.status import ExtractionStats
    from knowledge.index.project import Project
    from knowledge.memdir import MemdirWatcher, SyncReport
    from knowledge.recall.recaller import Recaller
    from knowledge.recall.status import Counters, InjectionStats
    from knowledge.run_history.layer import Example, KnownVector, RunHistory
    from knowledge.run_history.record import RunRecord
    from knowledge.watch.watcher import Update, Watcher

log = logging.getLogger(__name__)

CountersT = TypeVar("CountersT", bound="Counters")

WATCHER_STOP_S = 0.2
HISTORY_STOP_S = 2.0  # a run's point on a slow server; longer and it is kept locally only


class Memory:
    """Opened once, closed once. `one_shot` is for runs that answer and exit (headless, `theus
    recall`): recall starts from the saved scoring index, the embedding model loads at once
    with the saved vectors, and nothing is embedded, watched or bridged in the background
    (`theus index` and the chat app do that). `index_if_missing` indexes a project that never
    was, before the watcher starts on it (`indexed_now` says so); with `index_wait_s` it waits
    that long at most, and `index_pending` says the index goes on in the background (a
    one-shot run answers without the project's context rather than stall on a large
    repository). `watch=False` leaves the watcher to `start_watcher`, for a run that may never
    need it; `load_model=False` leaves a one-shot's embedding model to load when a re-rank or
    an embedding first asks for it (`theus -p` whose first block another process built)."""

    def __init__(
        self,
        root: Path,
        *,
        one_shot: bool = False,
        index_if_missing: bool = False,
        index_wait_s: float | None = None,
        watch: bool = True,
        load_model: bool = True,
    ) -> None:
        self.root = Path(root)
        self.one_shot = one_shot
        self._load_model = load_model
        self._index_if_missing = index_if_missing
        self._index_wait_s = index_wait_s
        self.index_pending = False
        self._watch = watch
        self.project: Project | None = None
        self.watcher: Watcher | None = None
        self.semantic: SemanticLayer | None = None
        self.episodes: EpisodeStore | None = None
        self.bridge: MemdirWatcher | None = None
        self.facts: FactsLayer | None = None  # opened on first use (`facts_layer`)
        self.history: RunHistory | None = None  # opened on first use (`run_history`)
        self._recording: list[threading.Thread] = []
        self.indexed_now = False
        self.error: str | None = None  # why the project could not be opened
        self.index_error: str | None = None  # why a first index could not be saved
        self.on_indexing: Callable[[], object] | None = None  # a first index is starting
        # Called (from a worker thread) when MEMORY.md was synced into the graph.
        self.on_memories: Callable[[], object] | None = None
        self._opened = False
        self._lock = threading.RLock()
        self._recaller: Recaller | None = None
        # A one-shot recaller reads the saved snapshot until a watcher update moves the graph
        # under it: then a live one is built. (What any process saved, MEMORY.md included,
        # joins the snapshot on disk when the next one-shot loads it: `recall.saved`.)
        self._snapshot_ok = True
        self._settled = False  # `settle` found everything in place: later calls return at once
        self._history_server = _history_server_first()
        self._borrowed: Callable[[], KnownVector | None] | None = None

    # -- opening -------------------------------------------------------------------------------
    def open(self) -> Memory:
        """Open every layer that is on (blocking: SQLite, maybe a first index). Idempotent."""
        with self._lock:
            if self._opened:
                return self
            self._opened = True
            try:
                from knowledge.index.project import Project

                self.project = Project(self.root)
            except Exception as exc:
                log.warning("project memory unavailable, continuing without it: %s", exc)
                self.error = str(exc)
                return self
            if self._index_if_missing and not self.project.has_index:
                self._first_index_within(self.project, self._index_wait_s)
            self._open_semantic(self.project)
            if self._history_server:
                _start_import("knowledge.vectors.qdrant")
            if self._watch:
                self.start_watcher()
            if not self.one_shot:  # a one-shot run opens them when it records (`_episodes`)
                self._open_episodes(self.project)
            self._open_bridge(self.project)
            return self

    def _first_index_within(self, project: Project, wait_s: float | None) -> None:
        if wait_s is None:
            self._first_index(project)
            return
        # A daemon: a run that ends first leaves it unsaved (the store commits whole, so
        # nothing is half-written), and the next run indexes again.
        indexing = threading.Thread(
            target=self._first_index, args=(project,), daemon=True, name="theus-first-index"
        )
        indexing.start()
        indexing.join(wait_s)
        self.index_pending = indexing.is_alive()

    def _first_index(self, project: Project) -> None:
        from knowledge.core.store import StoreError

        if self.on_indexing is not None:
            self.on_indexing()
        try:
            project.index()
            self.indexed_now = True
        except StoreError as exc:  # the graph is built; only saving it failed
            log.warning("the first index could not be saved: %s", exc)
            self.index_error = str(exc)

    @property
    def is_open(self) -> bool:
        return self._opened

    def _open_semantic(self, project: Project) -> None:
        if is_off("embeddings"):
            return
        try:
            from knowledge.embed.layer import SemanticLayer

            self.semantic = SemanticLayer(project, one_shot=self.one_shot)
            if not self.one_shot:
                self.semantic.start_background()
            elif self._load_model:
                self.semantic.start_loading()
        except Exception as exc:
            log.warning("semantic layer unavailable: %s", exc)
            self.semantic = None

    def _open_episodes(self, project: Project) -> None:
        if is_off("episodes"):
            return
        try:
            from knowledge.episodes import EpisodeStore

            self.episodes = EpisodeStore(project)
            if not self.one_shot:  # link episode files into the graph (loads the graph)
                self.episodes.load()
        except Exception as exc:
            log.warning("episodes unavailable: %s", exc)

    def _open_bridge(self, project: Project) -> None:
        """MEMORY.md -> graph now (hand edits since the last run), then, for a long-lived
        memory, on every change to the memory folder."""
        if is_off("memdir"):
            return
        try:
            from knowledge import memdir

            # A change saved here joins the scoring snapshot when the recaller loads it.
            memdir.sync_if_changed(project)
            if not self.one_shot:
                self.bridge = memdir.MemdirWatcher(project, on_sync=self._synced)
                self.bridge.start()
        except Exception as exc:
            log.warning("memory bridge not started: %s", exc)

    def _synced(self, report: SyncReport) -> None:
        if self.on_memories is not None:
            self.on_memories()

    def start_watcher(self) -> None:
        """Keep the graph fresh from now on (once; unless switched off or no project)."""
        self.open()
        with self._lock:
            if self.watcher is not None or self.project is None or is_off("watch"):
                return
            try:
                from knowledge.watch import maybe_start

                self.watcher = maybe_start(self.project, on_update=self._updated)
            except Exception as exc:
                log.warning("watcher not started: %s", exc)

    def _updated(self, update: Update) -> None:
        """Watcher callback: re-embed what changed first; a snapshot recaller is stale now."""
        with self._lock:
            self._snapshot_ok = False
            if self._recaller is not None and self._recaller.frozen:
                self._recaller = None
        if self.semantic is not None:
            try:
                self.semantic.notify_changed(update.changed)
            except Exception as exc:
                log.warning("semantic layer missed an update: %s", exc)

    # -- what the front ends use ---------------------------------------------------------------
    @property
    def semantic_on(self) -> bool:
        """Whether the semantic re-ranker is configured: it earns recall its extra 800 ms."""
        try:
            return bool(self.semantic is not None and self.semantic.on)
        except Exception as exc:
            log.warning("semantic layer state unknown, treating it as off: %s", exc)
            return False

    def recaller(self) -> Recaller:
        """The project's one recaller (opens the memory first; may be slow once). Raises when
        the project could not be opened."""
        self.open()
        with self._lock:
            if self.project is None:
                raise RuntimeError(f"the project memory could not be opened: {self.error}")
            if self._recaller is None:
                from knowledge.recall.recaller import make_recaller

                reranker = self.semantic.reranker if self.semantic is not None else None
                self._recaller = make_recaller(
                    self.project, reranker=reranker, one_shot=self.one_shot and self._snapshot_ok
                )
            return self._recaller

    def settle(self, budget_s: float) -> None:
        """Wait, at most `budget_s` in all, for what a cold start lacks before a recall that
        nobody time-boxes (a tool call): the file contents read and the semantic model loaded,
        so the first answer ranks as later ones do. A recall after it says in its notes what
        was still missing. Once all is in place, a call costs nothing (warming asks git for
        HEAD, which a tool call need not pay each time)."""
        if self._settled:
            return
        deadline = time.perf_counter() + budget_s
        read = self.recaller().warm(budget_s=budget_s)
        semantic = self.semantic
        loaded = semantic is None or not semantic.on or semantic.embedder_by(deadline) is not None
        self._settled = read and loaded

    def facts_layer(self) -> FactsLayer | None:
        """What the conversation told: opened when first asked for (it needs the whole graph,
        which a one-shot run does not load before its first request). None when off."""
        self.open()
        with self._lock:
            if self.facts is None and self.project is not None and not is_off("facts"):
                try:
                    from knowledge.facts.layer import FactsLayer

                    self.facts = FactsLayer(self.project)
                except Exception as exc:
                    log.warning("facts layer unavailable: %s", exc)
            return self.facts

    def entity_labels(self, limit: int = 100) -> list[str]:
        """What the conversation layer already knows, for an extraction prompt: from the
        facts layer when open, else straight from the store (no graph load)."""
        if self.facts is not None:
            return self.facts.known_labels(limit)
        self.open()
        if self.project is None:
            return []
        try:
            return self.project.store.labels("entity", limit)
        except Exception as exc:
            log.warning("entity labels unavailable: %s", exc)
            return []

    def fact_lines(self, request: str, conversation: str = "") -> list[str]:
        """The block's facts: from the layer once this process opened it (it ages them turn by
        turn), else the subjects the conversation so far and `request` name, from the store
        (no graph load), so a one-shot or resumed run gets them too. Fails open."""
        if self.facts is not None:
            return self.facts.block_lines(request)
        if self.project is None or is_off("facts"):
            return []
        from knowledge.facts.layer import stored_lines

        try:
            return stored_lines(self.project.store, f"{conversation}\n{request}")
        except Exception as exc:
            log.warning("facts unavailable for the block: %s", exc)
            return []

    def extraction_stats(self) -> ExtractionStats:
        """The fact extraction's counters that persist for `theus status`."""
        from knowledge.facts.status import ExtractionStats, stats_path

        return self._counters(ExtractionStats, stats_path, "fact extraction")

    def injection_stats(self) -> InjectionStats:
        """Injection counters that persist for `theus status`."""
        from knowledge.recall.status import InjectionStats, state_path

        return self._counters(InjectionStats, state_path, "injection")

    def _counters(
        self, kind: type[CountersT], path_of: Callable[[ProjectPaths], Path], what: str
    ) -> CountersT:
        """`kind`'s counts as earlier runs left them at `path_of` (kept in memory only when
        the data folder is unusable). Needs only the paths: never waits for the memory to
        open."""
        from knowledge.core.paths import ProjectPaths

        try:
            return kind.load(path_of(ProjectPaths.for_root(self.root)))
        except Exception as exc:
            log.warning("%s counters kept in memory only: %s", what, exc)
            return kind()

    # The agent's episodes port: a no-op while episodes are off or unavailable.
    def record(
        self,
        kind: str,
        text: str,
        session_id: str | None,
        files: Sequence[str] = (),
        title: str | None = None,
    ) -> Episode | None:
        episodes = self._episodes()
        return episodes.record(kind, text, session_id, files, title) if episodes else None

    def record_run(self, run: RunSummary, session_id: str) -> Episode | None:
        episodes = self._episodes()
        return episodes.record_run(run, session_id) if episodes else None

    # The agent's run-history port: examples for a request, a point per finished run.
    def run_history(self) -> RunHistory | None:
        """The run-history layer (None when switched off: THEUS_NO_HISTORY=1, or no project).
        Without an embedder it still keeps the local record; the points wait for one."""
        if is_off("history"):
            return None
        self.open()
        with self._lock:
            if self.history is None and self.project is not None:
                from knowledge.run_history.layer import RunHistory, no_embedder

                semantic = self.semantic
                self.history = RunHistory.for_project(
                    self.project.paths,
                    semantic.embedder_by if semantic is not None else no_embedder,
                )
                if self._borrowed is not None:
                    self._adopt(self.history, self._borrowed)
            return self.history

    @staticmethod
    def _adopt(history: RunHistory, borrowed: Callable[[], KnownVector | None]) -> None:
        try:
            known = borrowed()
        except Exception as exc:  # the run is still recorded, without its point
            log.warning("the request's embedding did not arrive: %s", exc)
            return
        if known is not None:
            history.adopt(known)

    def request_vector(self, request: str) -> KnownVector | None:
        """`request`'s embedding, if this process made it, for another to record its run."""
        try:
            history = self.run_history()
            return history.known_vector(request) if history is not None else None
        except Exception as exc:
            log.warning("run history unavailable: %s", exc)
            return None

    def borrow_request_vector(self, source: Callable[[], KnownVector | None]) -> None:
        """This run's request was embedded by another process (`theus -p`'s forked child):
        the run history, when it opens, records the run with `source()`'s vector. Asked
        then, under the memory's lock, so no record can be made before it arrives."""
        self._borrowed = source

    def examples(self, request: str, deadline: float) -> list[Example]:
        """Past runs like `request` (best effort: [] on any failure, counted)."""
        try:
            history = self.run_history()
            return history.examples(request, deadline) if history is not None else []
        except Exception as exc:
            log.warning("run history unavailable, no examples: %s", exc)
            return []

    def record_turn(self, run: RunSummary, request: str, session_id: str, model: str) -> None:
        """Keep a finished run, on a thread of its own (a store on a server must not hold up
        the turn); `close` waits for it, bounded."""
        history = self.run_history()
        if history is None:
            return
        from knowledge.run_history.record import RunRecord

        record = RunRecord.of_run(
            run, request=request, project=history.project, session=session_id, model=model
        )
        thread = threading.Thread(
            target=_record_quietly, args=(history, record), daemon=True, name="theus-history-record"
        )
        with self._lock:
            self._recording = [t for t in self._recording if t.is_alive()] + [thread]
        thread.start()

    def _episodes(self) -> EpisodeStore | None:
        self.open()
        with self._lock:
            if self.episodes is None and self.one_shot and self.project is not None:
                self._open_episodes(self.project)
            return self.episodes

    # -- closing -------------------------------------------------------------------------------
    def close(self, patience_s: float | None = None, *, exiting: bool = False) -> None:
        """Stop every layer, all at once (each bounded, each failing open: an exit waits for
        the slowest, not their sum), then close the store. `patience_s` bounds every wait,
        for a process that ends with `os._exit` right after (the chat app): no teardown can
        crash it, and every layer is crash-safe (saves are atomic; work resumes next start).
        `exiting`: such a process, which still lets a run's record finish (`theus -p`): only
        an embedding model still loading is not waited for."""
        stopping = [
            threading.Thread(
                target=_stop_quietly,
                args=(name, stop, patience_s),
                daemon=True,
                name=f"theus-stop-{name.split()[0]}",
            )
            for name, stop in (
                ("semantic layer", partial(self._stop_semantic, exiting=exiting)),
                ("memory bridge", self._stop_bridge),
                ("watcher", self._stop_watcher),
            )
        ]
        for thread in stopping:
            thread.start()
        for thread in stopping:
            thread.join()
        self._stop_history(patience_s)
        if self.project is not None:
            try:
                self.project.close(fold_wal=patience_s is None)
            except Exception as exc:
                log.warning("project store did not close cleanly: %s", exc)

    def _stop_semantic(self, patience_s: float | None, *, exiting: bool) -> None:
        if self.semantic is not None:
            if patience_s is None:
                self.semantic.stop(wait_for_load=not exiting)
            else:
                self.semantic.stop(timeout=patience_s, wait_for_load=False)

    def _stop_history(self, patience_s: float | None) -> None:
        with self._lock:
            recording = list(self._recording)
        for thread in recording:  # a run's record is small: worth a short wait at exit
            thread.join(HISTORY_STOP_S if patience_s is None else min(patience_s, HISTORY_STOP_S))
        if self.history is not None:
            self.history.close()

    def _stop_bridge(self, patience_s: float | None) -> None:
        if self.bridge is not None:
            self.bridge.stop(timeout=5.0 if patience_s is None else patience_s)

    def _stop_watcher(self, patience_s: float | None) -> None:
        # Bounded, and short: an exit must not wait for a catch-up rescan (it is done again
        # next start; saves are atomic, the thread is a daemon).
        if self.watcher is not None:
            self.watcher.stop(timeout=min(WATCHER_STOP_S, patience_s or WATCHER_STOP_S))


def _history_server_first() -> bool:
    """Whether the run history is on a Qdrant server. Then its client (a second to import)
    loads beside the opening, so a request's examples need not wait for it; but what it shares
    with the chat model's client is imported here first, on the thread that builds the memory:
    openai reads `sys.modules["httpx"]` as it starts, and must never find it half imported by
    another thread."""
    if is_off("history") or not current().qdrant_url:
        return False
    for shared in ("httpx", "pydantic"):
        _import_quietly(shared)
    return True


def _start_import(module: str) -> None:
    threading.Thread(
        target=_import_quietly, args=(module,), daemon=True, name="theus-history-client"
    ).start()


def _import_quietly(module: str) -> None:
    try:
        importlib.import_module(module)
    except Exception as exc:  # the store then fails open when it is used
        log.warning("run history server client unavailable: %s", exc)


def _record_quietly(history: RunHistory, record: RunRecord) -> None:
    from knowledge.core.paths import report_unwritable

    try:
        history.record(record)
    except OSError as exc:  # a read-only or full data folder is said once, not per layer
        if not report_unwritable(exc):
            log.warning("run history: run %s not recorded: %s", record.id, exc)
    except Exception as exc:
        log.warning("run history: run %s not recorded: %s", record.id, exc)


def _stop_quietly(
    name: str, stop: Callable[[float | None], None], patience_s: float | None
) -> None:
    try:
        stop(patience_s)
    except Exception as exc:
        log.warning("%s did not stop cleanly: %s", name, exc)


def open_memory(
    root: Path,
    *,
    one_shot: bool = False,
    index_if_missing: bool = False,
    index_wait_s: float | None = None,
    watch: bool = True,
) -> Memory:
    """Open the project's memory (see `Memory`)."""
    return Memory(
        root,
        one_shot=one_shot,
        index_if_missing=index_if_missing,
        index_wait_s=index_wait_s,
        watch=watch,
    ).open()
