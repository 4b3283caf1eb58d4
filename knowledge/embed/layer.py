"""`SemanticLayer`: the one object the app, the agent, the watcher and `theus index` use.

    layer = SemanticLayer(project)          # cheap: selects nothing, loads nothing
    layer.start_background()                # daemon thread: load, embed what is missing
    Recaller(graph, root, reranker=layer.reranker)   # None when the layer is off
    layer.notify_changed(paths_or_keys)     # from the watcher's on_update
    deadline_ms = 150 + (800 if layer.on else 0)
    layer.stop()

A one-shot command (`one_shot=True`) calls `start_loading()` first: the model loads on a daemon
thread while the command opens the project, and the vectors come from the saved snapshot
(`frozen`) when it is as new as the store.

A process that exits while onnxruntime loads or computes on another thread aborts ("terminate
called without an active exception"), so `stop()` closes the embedder (a batch in progress ends
at once; the pass resumes next run from the cache) and waits for a model still loading.

The embedder is chosen lazily (`select_embedder`, local model with one intra-op thread for
background work) on the background thread, or on the first re-rank, which then waits at most
its own deadline. THEUS_NO_EMBEDDINGS=1 makes the layer inert: nothing imported or loaded,
`reranker` is None. Every failure is recorded for `theus status` and otherwise ignored.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from knowledge.core.credentials import ChatCredentials, load_credentials
from knowledge.core.settings import MemorySettings, current
from knowledge.core.store import Store, StoreError
from knowledge.embed import frozen
from knowledge.embed.base import DimensionMismatch, Embedder, EmbeddingError
from knowledge.embed.cache import VectorCache
from knowledge.embed.indexer import NodeVectors, PassReport, Progress, VectorSet, embed_pass
from knowledge.embed.select import Selection, select_embedder
from knowledge.embed.semantic import Ready, RerankStats, SemanticReranker
from knowledge.embed.status import HasGraph, configured, read_state, saved_point, write_state
from knowledge.vectors.port import VectorStoreUnavailable

log = logging.getLogger(__name__)

RETRY_S = 60.0  # after a failed start (endpoint down), try again no sooner than this
PERSIST_S = 5.0  # counters reach the state file at most this often
PASS_FIELDS = ("pending", "pending_at", "last_pass")  # what the last embedding pass found
LOAD_WAIT_S = 30.0  # how long `stop()` waits for a model still loading
_UNSET: Any = object()


class LayerProject(HasGraph, Protocol):
    @property
    def store(self) -> Store: ...

    @property
    def unsaved(self) -> bool: ...


class SemanticLayer:
    def __init__(
        self,
        project: LayerProject,
        *,
        settings: MemorySettings | None = None,
        credentials: ChatCredentials | None = _UNSET,
        threads: int | None = 1,
        local_loader: Callable[[], Embedder] | None = None,
        timeout: float | None = None,
        one_shot: bool = False,
    ) -> None:
        self.project = project
        self._one_shot = one_shot
        self._settings = settings or current()
        self._credentials = credentials
        self._threads = threads
        self._local_loader = local_loader
        self._timeout = timeout
        self.stats = RerankStats()
        self.selection: Selection | None = None
        self.load_error = ""
        self.cache_error = ""
        self.last_pass: PassReport | None = None
        self._pass_point: list[int] | None = None  # `saved_point` the last pass saw
        # (texts embedded, texts to embed) while the background pass embeds, for the app
        self.progress: tuple[int, int] | None = None
        self._ready: Ready | None = None
        self._vectors: NodeVectors | None = None  # the live set `embed_all` keeps up to date
        self._prepare_lock = threading.Lock()
        self._native_load = threading.Lock()  # held while the local model loads
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
        return self._settings.is_off("embeddings")

    @property
    def on(self) -> bool:
        """Whether the layer is (or will be) active: decides the extra 800 ms of injection.
        Before the embedder is chosen this answers from the settings, loading nothing."""
        if self.killed:
            return False
        if self.selection is not None:
            return self.selection.embedder is not None
        return configured(self._settings, self._credentials_now()).embedder is not None

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
        return (
            self.selection is not None
            and self.selection.embedder is not None
            and (time.monotonic() - self._failed_at > RETRY_S)
        )

    def _prepare(self) -> Ready | None:
        loader = self._local_loader or self._load_local
        self.selection = select_embedder(
            self._settings, self._credentials_now(), local_loader=loader, timeout=self._timeout
        )
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
        cache = self._open_cache(embedder.model_id, dim)
        vectors: VectorSet
        if self._one_shot:
            vectors = self._saved_vectors(embedder, dim, cache)
        else:
            vectors = self._vectors = NodeVectors(dim)
        return Ready(embedder, vectors, cache, self.project.root)

    def _saved_vectors(self, embedder: Embedder, dim: int, cache: VectorCache | None) -> VectorSet:
        """One-shot: the saved vectors when they are as new as the store; else what the cache
        holds for the graph, saved for the next command."""
        generation = self._generation()
        if generation is not None:
            found = frozen.load(
                self.project.paths.vector_index,
                generation=generation,
                model_id=embedder.model_id,
                dim=dim,
            )
            if found is not None:
                return found
        vectors = NodeVectors(dim)
        embed_pass(self.project.graph, self.project.root, embedder, cache, vectors, compute=False)
        self._save_vectors(vectors, generation, embedder.model_id)
        return vectors

    def _generation(self) -> int | None:
        try:
            return self.project.store.generation()
        except StoreError:
            return None

    def _save_vectors(self, vectors: NodeVectors, generation: int | None, model_id: str) -> None:
        """Save what one-shot commands map, when it stands for a saved generation of the graph
        (read before the pass: a save during it leaves the snapshot stale, never wrong)."""
        if generation is not None and not self.project.unsaved:
            frozen.save(
                self.project.paths.vector_index,
                vectors.matrix(),
                generation=generation,
                model_id=model_id,
            )

    def _load_local(self) -> Embedder:
        from knowledge.embed.local import load_local

        with self._native_load:
            # One request and exit: a session that opens fast beats one that runs fast.
            return load_local(threads=self._threads, optimize=not self._one_shot)

    def _open_cache(self, model_id: str, dim: int) -> VectorCache | None:
        try:
            cache = VectorCache(self.project.paths.vectors, model_id, dim)
        except DimensionMismatch as exc:
            # Refused, not repaired: the vectors stay in memory only and status says why.
            self.cache_error = str(exc)
            log.warning("vector cache not used: %s", exc)
            return None
        except VectorStoreUnavailable as exc:
            self.cache_error = f"{type(exc).__name__}: {exc}"
            return None
        self.cache_error = ""
        return cache

    def _credentials_now(self) -> ChatCredentials | None:
        if self._credentials is _UNSET:
            self._credentials = load_credentials()
        return self._credentials

    def _ready_by(self, deadline: float) -> Ready | None:
        """For the re-ranker: ready state, preparing in the background for at most the
        request's deadline (the first request after start may find the model loading)."""
        if self._ready is not None:
            return self._ready
        if not self._prepared.is_set() or self._may_retry():
            self._ensure_thread(embed=False)
        self._prepared.wait(max(0.0, deadline - time.perf_counter()))
        return self._ready

    def embedder_by(self, deadline: float) -> Embedder | None:
        """The embedder, if ready by `deadline` (perf_counter time): for the run history."""
        ready = self._ready_by(deadline)
        return ready.embedder if ready is not None else None

    # -- embedding -----------------------------------------------------------------------------
    def embed_all(
        self, progress: Progress | None = None, cancel: threading.Event | None = None
    ) -> PassReport | None:
        """Embed every node that has no vector yet, now (for `theus index`); None when off."""
        ready = self.prepare()
        vectors = self._vectors
        if ready is None or vectors is None:
            return None
        first, self._changed = self._changed, set()
        generation = self._generation()
        point = None if self.project.unsaved else saved_point(self.project.store)
        report = embed_pass(
            self.project.graph,
            self.project.root,
            ready.embedder,
            ready.cache,
            vectors,
            progress=progress,
            cancel=cancel,
            first=first,
        )
        self._pass_point = point
        if report.failed and not self._stop.is_set():  # a batch cut short by `stop` is no fault
            self.stats.count("failed", report.errors[-1] if report.errors else "")
        elif report.seen and not report.cancelled:
            self._save_vectors(vectors, generation, ready.embedder.model_id)
        self.last_pass = report
        self._persist(force=True)
        return report

    def start_background(self) -> None:
        """Start the daemon thread that embeds what is missing, most central first."""
        if not self.killed:
            self._ensure_thread(embed=True)

    def start_loading(self) -> None:
        """Choose and load the embedder (and the vectors) on a daemon thread now, so that the
        first re-rank finds them ready; embeds nothing."""
        if not self.killed:
            self._ensure_thread(embed=False)

    def notify_changed(self, changed: Iterable[str] = ()) -> None:
        """Nodes or files changed (keys or repo-relative paths): embed them first, soon."""
        self._changed.update(changed)
        self._idle.clear()
        self._wake.set()

    def wait_idle(self, timeout: float) -> bool:
        """Block until the background thread has nothing left to embed (tests, benches)."""
        return self._idle.wait(timeout)

    def stop(self, timeout: float = 2.0, wait_for_load: bool = True) -> None:
        """`wait_for_load=False` only for a process that ends with `os._exit` next: an
        interpreter teardown while onnxruntime loads aborts the process; `_exit` does not."""
        self._stop.set()
        self._wake.set()
        deadline = time.monotonic() + timeout  # one bound for both threads, not one each
        if self._ready is not None:
            self._ready.embedder.close()
        if self._reranker is not None:
            self._reranker.join(max(0.0, deadline - time.monotonic()))
        thread = self._thread
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
        if self._native_load.acquire(timeout=LOAD_WAIT_S if wait_for_load else 0):
            self._native_load.release()
        self._persist(force=True)
        if (
            self._ready is not None
            and self._ready.cache is not None
            and (thread is None or not thread.is_alive())
        ):
            self._ready.cache.close()

    def _ensure_thread(self, embed: bool) -> None:
        with self._thread_lock:
            if self._thread is not None and self._thread.is_alive():
                if embed:
                    self._embedding = True
                    self._wake.set()
                return
            self._embedding = embed
            target = self.prepare if self._one_shot else self._run
            self._thread = threading.Thread(target=target, name="theus-semantic", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        done_version, done_embedding = -1, False
        try:
            while not self._stop.is_set():
                ready = self.prepare()
                wait = RETRY_S if ready is None else PERSIST_S
                graph = self.project.graph
                due = ready is not None and (
                    graph.version != done_version
                    or bool(self._changed)
                    or (self._embedding and not done_embedding)
                )
                if ready is not None and due:
                    self._wake.clear()
                    version = graph.version
                    if self._embedding:
                        try:
                            report = self.embed_all(progress=self._track, cancel=self._stop)
                        finally:
                            self.progress = None
                        done_embedding = True
                        if report is not None and report.failed:
                            version, wait = -1, RETRY_S  # endpoint trouble: later
                    elif self._vectors is not None:  # what the cache holds; embeds nothing
                        self._changed.clear()
                        embed_pass(
                            graph,
                            self.project.root,
                            ready.embedder,
                            ready.cache,
                            self._vectors,
                            compute=False,
                        )
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

    def _track(self, done: int, total: int) -> None:
        self.progress = (done, total) if done < total else None

    # -- status --------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        selection = self.selection
        ready = self._ready
        last = self.last_pass
        return {
            "provider": selection.provider if selection else None,
            "reason": selection.reason if selection else None,
            "model_id": ready.embedder.model_id
            if ready
            else (selection.embedder.model_id if selection and selection.embedder else None),
            "dim": ready.vectors.dim if ready else None,
            "loaded": ready is not None,
            "load_error": self.load_error,
            "cache_error": self.cache_error,
            "vectors_in_memory": len(ready.vectors) if ready else 0,
            "pending": last.pending if last is not None else None,
            "pending_at": self._pass_point if last is not None else None,
            "stats": self.stats.as_dict(),
            "last_pass": None
            if last is None
            else {
                "seen": last.seen,
                "cached": last.cached,
                "embedded": last.embedded,
                "failed": last.failed,
                "seconds": round(last.seconds, 2),
            },
        }

    def _persist(self, force: bool = False) -> None:
        state = self.state()
        if not force and (
            state == self._persisted or time.monotonic() - self._persisted_at < PERSIST_S
        ):
            return
        self._persisted, self._persisted_at = state, time.monotonic()
        if self.last_pass is None:  # no pass here (a one-shot): the last one's count stands
            before = read_state(self.project.paths)
            if before.get("model_id") == state["model_id"]:
                state = {**state, **{k: before.get(k) for k in PASS_FIELDS}}
        write_state(self.project.paths, {**state, "pid": os.getpid(), "updated": time.time()})
