"""`SemanticLayer`: the one object the app, the agent, the watcher and `theus index` use.

    layer = SemanticLayer(project)          # cheap: selects nothing, loads nothing
    layer.start_background()                # daemon thread: load, embed what is missing
    Recaller(graph, root, reranker=layer.reranker)   # None when the layer is off
    layer.notify_changed(paths_or_keys)     # from the watcher's on_update
    deadline_ms = 150 + (800 if layer.on else 0)
    layer.stop()

The embedder is chosen lazily (`select_embedder`, local model with one intra-op thread for
background work) on the background thread, or on the first re-rank, which then waits at most
its own deadline. THEUS_NO_EMBEDDINGS=1 makes the layer inert: nothing imported or loaded,
`reranker` is None. Every failure is recorded for `theus status` and otherwise ignored.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from knowledge.credentials import ChatCredentials, load_credentials
from knowledge.embed.base import DimensionMismatch, Embedder, EmbeddingError
from knowledge.embed.cache import VectorCache
from knowledge.embed.indexer import NodeVectors, PassReport, Progress, embed_pass
from knowledge.embed.select import Selection, select_embedder
from knowledge.embed.status import HasGraph, configured, killed, register_live, write_state
from knowledge.recall.semantic import Ready, RerankStats, SemanticReranker

log = logging.getLogger(__name__)

RETRY_S = 60.0  # after a failed start (endpoint down), try again no sooner than this
PERSIST_S = 5.0  # counters reach the state file at most this often
_UNSET: Any = object()


class SemanticLayer:
    def __init__(
        self,
        project: HasGraph,
        *,
        env: Mapping[str, str] | None = None,
        credentials: ChatCredentials | None = _UNSET,
        threads: int | None = 1,
        local_loader: Callable[[], Embedder] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.project = project
        self._env = dict(os.environ if env is None else env)
        self._credentials = credentials
        self._threads = threads
        self._local_loader = local_loader
        self._timeout = timeout
        self.stats = RerankStats()
        self.selection: Selection | None = None
        self.load_error = ""
        self.cache_error = ""
        self.last_pass: PassReport | None = None
        self._ready: Ready | None = None
        self._prepare_lock = threading.Lock()
        self._thread_lock = threading.Lock()
        self._prepared = threading.Event()
        self._failed_at = 0.0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._changed: set[str] = set()
        self._thread: threading.Thread | None = None
        self._embedding = False  # the thread embeds (start_background), not only prepares
        self._persisted: dict[str, object] = {}
        self._persisted_at = 0.0
        self._reranker: SemanticReranker | None = None
        if not self.killed:
            self._reranker = SemanticReranker(self._ready_by, self.stats)

    # -- what callers read -----------------------------------------------------------------
    @property
    def killed(self) -> bool:
        return killed(self._env)

    @property
    def on(self) -> bool:
        """Whether the layer is (or will be) active: decides the extra 800 ms of injection.
        Before the embedder is chosen this answers from the settings, loading nothing."""
        if self.killed:
            return False
        if self.selection is not None:
            return self.selection.embedder is not None
        return configured(self._env, self._credentials_now()).embedder is not None

    @property
    def reranker(self) -> SemanticReranker | None:
        return self._reranker

    # -- preparing ---------------------------------------------------------------------------
    def prepare(self) -> Ready | None:
        """Choose the embedder and open the cache (once; idempotent, thread-safe)."""
        if self.killed:
            return None
        with self._prepare_lock:
            if self._ready is not None or (self._prepared.is_set() and not self._may_retry()):
                return self._ready
            self._ready = self._prepare()
            if self._ready is None:
                self._failed_at = time.monotonic()
            self._prepared.set()
            self._persist(force=True)
            return self._ready

    def _may_retry(self) -> bool:
        return self.selection is not None and self.selection.embedder is not None and (
            time.monotonic() - self._failed_at > RETRY_S)

    def _prepare(self) -> Ready | None:
        loader = self._local_loader or self._load_local
        self.selection = select_embedder(self._env, self._credentials_now(),
                                         local_loader=loader, timeout=self._timeout)
        embedder = self.selection.embedder
        if embedder is None:
            self.load_error = self.selection.reason
            return None
        try:
            dim = embedder.dim  # a hosted embedder learns it with one request
        except EmbeddingError as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            log.info("semantic layer not ready: %s", self.load_error)
            return None
        self.load_error = ""
        vectors = NodeVectors(dim)
        return Ready(embedder, vectors, self._open_cache(embedder.model_id, dim), self.project.root)

    def _load_local(self) -> Embedder:
        from knowledge.embed.local import load_local

        return load_local(threads=self._threads)

    def _open_cache(self, model_id: str, dim: int) -> VectorCache | None:
        try:
            cache = VectorCache(self.project.paths.vectors, model_id, dim)
        except DimensionMismatch as exc:
            # Refused, not repaired: the vectors stay in memory only and status says why.
            self.cache_error = str(exc)
            log.warning("vector cache not used: %s", exc)
            return None
        except sqlite3.Error as exc:
            self.cache_error = f"{type(exc).__name__}: {exc}"
            return None
        self.cache_error = ""
        return cache

    def _credentials_now(self) -> ChatCredentials | None:
        if self._credentials is _UNSET:
            self._credentials = load_credentials()
        return self._credentials  # type: ignore[no-any-return]

    def _ready_by(self, deadline: float) -> Ready | None:
        """For the re-ranker: ready state, preparing in the background for at most the
        request's deadline (the first request after start may find the model loading)."""
        if self._ready is not None:
            return self._ready
        if not self._prepared.is_set() or self._may_retry():
            self._ensure_thread(embed=False)
        self._prepared.wait(max(0.0, deadline - time.perf_counter()))
        return self._ready

    # -- embedding -----------------------------------------------------------------------------
    def embed_all(self, progress: Progress | None = None,
                  cancel: threading.Event | None = None) -> PassReport | None:
        """Embed every node that has no vector yet, now (for `theus index`); None when off."""
        ready = self.prepare()
        if ready is None:
            return None
        first, self._changed = self._changed, set()
        report = embed_pass(self.project.graph, self.project.root, ready.embedder,
                            ready.cache, ready.vectors, progress=progress, cancel=cancel,
                            first=first)
        if report.failed:
            self.stats.count("failed", report.errors[-1] if report.errors else "")
        self.last_pass = report
        self._persist(force=True)
        return report

    def start_background(self) -> None:
        """Start the daemon thread that embeds what is missing, most central first."""
        if not self.killed:
            register_live(self.project.paths.root, self.state)
            self._ensure_thread(embed=True)

    def notify_changed(self, changed: Iterable[str] = ()) -> None:
        """Nodes or files changed (keys or repo-relative paths): embed them first, soon."""
        self._changed.update(changed)
        self._idle.clear()
        self._wake.set()

    def wait_idle(self, timeout: float) -> bool:
        """Block until the background thread has nothing left to embed (tests, benches)."""
        return self._idle.wait(timeout)

    def stop(self, timeout: float = 2.0) -> None:
        register_live(self.project.paths.root, None)
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        self._persist(force=True)
        if self._ready is not None and self._ready.cache is not None and (
                thread is None or not thread.is_alive()):
            self._ready.cache.close()

    def _ensure_thread(self, embed: bool) -> None:
        with self._thread_lock:
            if self._thread is not None and self._thread.is_alive():
                if embed:
                    self._embedding = True
                    self._wake.set()
                return
            self._embedding = embed
            self._thread = threading.Thread(target=self._run, name="theus-semantic",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        done_version, done_embedding = -1, False
        try:
            while not self._stop.is_set():
                ready = self.prepare()
                wait = RETRY_S if ready is None else PERSIST_S
                graph = self.project.graph
                due = ready is not None and (graph.version != done_version or bool(self._changed)
                                             or (self._embedding and not done_embedding))
                if ready is not None and due:
                    self._wake.clear()
                    version = graph.version
                    if self._embedding:
                        report = self.embed_all(cancel=self._stop)
                        done_embedding = True
                        if report is not None and report.failed:
                            version, wait = -1, RETRY_S  # endpoint trouble: later
                    else:  # what the cache holds, for nearest neighbours; embeds nothing
                        self._changed.clear()
                        embed_pass(graph, self.project.root, ready.embedder, ready.cache,
                                   ready.vectors, compute=False)
                    done_version = version
                    if self._changed:
                        continue
                self._idle.set()
                self._wake.wait(wait)
                self._persist()
        except Exception:  # a background failure is logged and recorded, never raised
            log.exception("semantic layer background thread failed")
            self.load_error = "background thread failed (see log)"
            self._persist(force=True)
        finally:
            self._idle.set()

    # -- status --------------------------------------------------------------------------------
    def state(self) -> dict[str, object]:
        selection = self.selection
        ready = self._ready
        last = self.last_pass
        return {
            "provider": selection.provider if selection else None,
            "reason": selection.reason if selection else None,
            "model_id": ready.embedder.model_id if ready else (
                selection.embedder.model_id if selection and selection.embedder else None),
            "dim": ready.vectors.dim if ready else None,
            "loaded": ready is not None,
            "load_error": self.load_error,
            "cache_error": self.cache_error,
            "vectors_in_memory": len(ready.vectors) if ready else 0,
            "pending": last.pending if last is not None else None,
            "stats": self.stats.as_dict(),
            "last_pass": None if last is None else {
                "seen": last.seen, "cached": last.cached, "embedded": last.embedded,
                "failed": last.failed, "seconds": round(last.seconds, 2),
            },
        }

    def _persist(self, force: bool = False) -> None:
        state = self.state()
        if not force and (state == self._persisted
                          or time.monotonic() - self._persisted_at < PERSIST_S):
            return
        self._persisted, self._persisted_at = state, time.monotonic()
        write_state(self.project.paths, {**state, "pid": os.getpid(), "updated": time.time()})
