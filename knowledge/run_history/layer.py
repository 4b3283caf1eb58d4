"""The run-history layer: examples for a request, a point for every finished run, and the
strict operations that keep the local record and the vector store agreeing.

Reads and writes during a run are best effort (seed: "ninguno puede hacerla fallar"): no
embedder, or the store down, means no examples and the run goes on; one log line and a counter
each. A run's point reuses the embedding its examples were looked up with (the same request
text), so recording it costs no model time at exit; when there was none (the embedder was
still loading), the local record waits with `stored` false and a later run stores it.

Consistency operations (invalidate, restore, delete, delete a session's runs) are strict: the
store first, by id; if it cannot be reached they raise `VectorStoreUnavailable` and change nothing,
so the record and the store never disagree about what is valid.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from knowledge.core.frontmatter import shorten
from knowledge.core.paths import ProjectPaths
from knowledge.core.settings import MemorySettings, current
from knowledge.recall.status import Counters
from knowledge.run_history import settings as settings_file
from knowledge.run_history.journal import Journal
from knowledge.run_history.record import RunRecord, lineage
from knowledge.run_history.settings import HistorySettings
from knowledge.run_history.stores import open_store, project_id
from knowledge.vectors.port import (
    Filter,
    Hit,
    Point,
    StoreMismatch,
    Vector,
    VectorStore,
    VectorStoreUnavailable,
)

if TYPE_CHECKING:
    from knowledge.embed.base import Embedder  # the embed package is imported when used

log = logging.getLogger(__name__)

REMEMBERED_VECTORS = 256  # requests' embeddings kept for their runs' points
BACKFILL_PER_RUN = 5  # records stored late per run, so no run pays for a long backlog
REPEATS = 3  # candidates fetched per example wanted, so repeats of one request can be merged
# Under the block's own head, which says it is quoted data, not instructions.
HEAD = "Similar past runs in this project (what was asked → what was done):"


STATS_FILE = "history-stats.json"


@dataclass
class HistoryStats(Counters):
    """For `theus status`: lookups that found examples in time (`used`), found none, found
    them past the request's deadline (`late`: the block went without them), had no embedding
    or store (`skipped`), or failed; points stored and stores that failed."""

    used: int = 0
    none: int = 0
    late: int = 0
    skipped: int = 0
    failed: int = 0
    stored: int = 0
    store_failed: int = 0


@dataclass(frozen=True, slots=True)
class Example:
    request: str
    done: str
    similarity: float
    score: float | None = None  # the judge's, when one ran
    run_id: str = ""

    def render(self, number: int) -> str:
        judged = f" (judge score {self.score:g})" if self.score is not None else ""
        done = "\n".join(f"   {line}" for line in self.done.splitlines())
        return f"{number}. Request{judged}: {shorten(self.request, 400)}\n   Done:\n{done}"


def render_examples(examples: list[Example]) -> str:
    if not examples:
        return ""
    return "\n".join([HEAD, *(e.render(i) for i, e in enumerate(examples, 1))])


EmbedderSource = Callable[[float], "Embedder | None"]  # the embedder if ready by that deadline


def no_embedder(_deadline: float) -> None:
    return None


@dataclass(frozen=True)
class KnownVector:
    """A request's embedding that another process made (`theus -p`'s first block is built in
    a child, which embeds the request for its examples), with the model that made it: this
    process's record of the run needs no model of its own."""

    request: str
    model_id: str
    dim: int
    vector: Vector


@dataclass(frozen=True)
class _StandIn:
    """The model that made a `KnownVector`, where it is not loaded: `_embed` finds the kept
    vector first, and any other text is refused."""

    model_id: str
    dim: int

    def embed(self, texts: list[str], max_tokens: int | None = None) -> Vector:
        from knowledge.embed.base import EmbedderUnavailable

        raise EmbedderUnavailable("the embedding model is not loaded in this process")

    def close(self) -> None:
        return None


@dataclass
class RunHistory:
    journal: Journal
    project: str  # `stores.project_id`
    home: Path  # the project's data folder (its settings file)
    embedder_by: EmbedderSource
    config: MemorySettings  # where the store is (THEUS_QDRANT_*)
    stats: HistoryStats = field(default_factory=HistoryStats)  # persisted by `for_project`
    _stores: dict[tuple[str, int], VectorStore] = field(default_factory=dict)
    _vectors: dict[str, Vector] = field(default_factory=dict)  # lineage → request embedding
    _known: KnownVector | None = None  # `adopt`ed
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def for_project(
        cls,
        paths: ProjectPaths,
        embedder_by: EmbedderSource = no_embedder,
        config: MemorySettings | None = None,
    ) -> RunHistory:
        """The project's history; without `embedder_by` it finds no examples and stores no
        points (what the strict operations and listing need: the records know their store)."""
        return cls(
            Journal(paths.home / "runs"),
            project_id(paths.root),
            paths.home,
            embedder_by,
            config or current(),
            HistoryStats.load(paths.home / STATS_FILE),
        )

    @property
    def settings(self) -> HistorySettings:
        return settings_file.load(self.home)

    # -- during a run: best effort --------------------------------------------------------

    def examples(self, request: str, deadline: float) -> list[Example]:
        """Up to `limit` finished runs of this project at least `threshold` similar to
        `request`, never one marked invalid (or not marked at all), never one of the same
        lineage. [] when off, or when the embedder or the store is not there in time."""
        chosen = self.settings
        if not chosen.enabled or not request.strip():
            return []
        try:
            found = self._lookup(request, deadline, chosen)
        except Exception as exc:  # best effort: whatever the store or the embedder raised
            log.warning("run history unavailable, no examples: %s", exc)
            self.stats.count("failed", f"{type(exc).__name__}: {exc}")
            return []
        if found is None:
            self.stats.count("skipped")
            return []
        if found and time.perf_counter() > deadline:  # the block was built without them
            self.stats.count("late")
            return []
        self.stats.count("used" if found else "none")
        return found

    def _lookup(
        self, request: str, deadline: float, chosen: HistorySettings
    ) -> list[Example] | None:
        embedder = self.embedder_by(deadline)
        if embedder is None:
            return None
        vector = self._embed(embedder, request)
        store = self._store(embedder)
        where = Filter(
            must={"project": self.project, "invalid": False}, must_not={"lineage": lineage(request)}
        )
        # The same request asked twice is one example: its best run.
        hits = store.nearest(
            vector, limit=chosen.limit * REPEATS, where=where, threshold=chosen.threshold
        )
        best: dict[object, Hit] = {}
        for hit in hits:
            best.setdefault(hit.payload.get("lineage"), hit)
        return [_example(hit) for hit in list(best.values())[: chosen.limit]]

    def record(self, record: RunRecord) -> RunRecord:
        """Keep a finished run: the local record always (raises OSError when even that fails),
        the point when the embedder is ready (the request's embedding is usually at hand from
        its examples) and the store answers; then a few runs that had to wait."""
        stored = record
        # Kept first, as waiting for its point: a process that must exit while the point is
        # still on its way (a slow or unreachable store) loses nothing; a later run stores it.
        self.journal.write(record)
        # A vector another process made needs no model here (asking for one loads it).
        borrowed = self._stand_in(record.request)
        embedder = borrowed or self.embedder_by(time.perf_counter())
        if embedder is not None and self.settings.enabled:
            try:
                stored = self._put(record, self._embed(embedder, record.request), embedder)
            except Exception as exc:  # the embedder failed: the record stays, not stored
                log.info("run history: run %s kept locally, not embedded: %s", record.id, exc)
        if stored != record:
            self.journal.write(stored)
        if stored.stored and borrowed is None:
            self.backfill(time.perf_counter())
        return stored

    def known_vector(self, request: str) -> KnownVector | None:
        """`request`'s embedding, if this process made it (its examples were looked up) and
        the model is loaded."""
        embedder = self.embedder_by(time.perf_counter())
        with self._lock:
            vector = self._vectors.get(lineage(request))
        if embedder is None or vector is None:
            return None
        return KnownVector(request, embedder.model_id, embedder.dim, vector)

    def adopt(self, known: KnownVector) -> None:
        """Keep `known` for the run of its request, recorded without a model of its own."""
        with self._lock:
            self._vectors[lineage(known.request)] = known.vector
            self._known = known

    def _stand_in(self, request: str) -> Embedder | None:
        known = self._known
        if known is None or lineage(known.request) != lineage(request):
            return None
        return _StandIn(known.model_id, known.dim)

    def _put(self, record: RunRecord, vector: Vector, embedder: Embedder) -> RunRecord:
        with_model = record.but(embed_model=embedder.model_id, dim=embedder.dim)
        try:
            self._store(embedder).put([Point(record.id, vector, with_model.payload())])
        except Exception as exc:  # best effort: the record stays, marked not stored
            log.warning("run history: run %s kept locally, not stored: %s", record.id, exc)
            self.stats.count("store_failed", f"{type(exc).__name__}: {exc}")
            return with_model
        self.stats.count("stored")
        return with_model.but(stored=True)

    def backfill(self, deadline: float) -> int:
        """Store a few runs recorded while no embedding was at hand; how many were stored."""
        embedder = self.embedder_by(deadline)
        if embedder is None or not self.settings.enabled:
            return 0
        done = 0
        for record in self.journal.waiting(BACKFILL_PER_RUN):
            try:
                vector = self._embed(embedder, record.request)
            except Exception as exc:
                log.info("run history backfill stopped: %s", exc)
                break
            stored = self._put(record, vector, embedder)
            if not stored.stored:
                break
            self.journal.write(stored)
            done += 1
        return done

    # -- consistency operations: strict ----------------------------------------------------

    def set_invalid(self, ref: str, invalid: bool) -> RunRecord:
        """Mark a run invalid (or valid again) in the store by id, then in the record."""
        record = self.journal.find(ref)
        if record.stored:
            store = self._strict_store(record)
            if not store.set_payload(record.id, {"invalid": invalid}):
                log.info("run %s was not in the store; the record alone changes", record.id)
        changed = record.but(invalid=invalid)
        self.journal.write(changed)
        return changed

    def delete(self, ref: str) -> RunRecord:
        record = self.journal.find(ref)
        if record.stored:
            self._strict_store(record).delete([record.id])
        self.journal.remove(record.id)
        return record

    def delete_session(self, session_id: str) -> list[RunRecord]:
        """Remove every run of a session: the store's points first (all, or none changes)."""
        records = [r for r in self.journal.records() if r.session == session_id]
        by_store: dict[tuple[str, int], list[RunRecord]] = {}
        for record in records:
            if record.stored:
                by_store.setdefault((record.embed_model, record.dim), []).append(record)
        stores = {key: self._strict_store(rs[0]) for key, rs in by_store.items()}
        for key, store in stores.items():
            store.delete([r.id for r in by_store[key]])
        for record in records:
            self.journal.remove(record.id)
        return records

    def _strict_store(self, record: RunRecord) -> VectorStore:
        """The store holding `record`'s point; `VectorStoreUnavailable` if it cannot be reached."""
        try:
            return self._store_for(record.embed_model, record.dim)
        except StoreMismatch as exc:
            raise VectorStoreUnavailable(str(exc)) from exc

    # -- plumbing --------------------------------------------------------------------------

    def _embed(self, embedder: Embedder, text: str) -> Vector:
        key = lineage(text)
        with self._lock:
            known = self._vectors.get(key)
        if known is not None:
            return known
        vector: Vector = np.asarray(embedder.embed([text])[0], dtype=np.float32)
        with self._lock:
            if len(self._vectors) >= REMEMBERED_VECTORS:  # a long chat: the oldest go
                self._vectors.pop(next(iter(self._vectors)))
            self._vectors[key] = vector
        return vector

    def _store(self, embedder: Embedder) -> VectorStore:
        return self._store_for(embedder.model_id, embedder.dim)

    def _store_for(self, model_id: str, dim: int) -> VectorStore:
        with self._lock:
            store = self._stores.get((model_id, dim))
            if store is None:
                store = self._stores[(model_id, dim)] = open_store(self.config, model_id, dim)
            return store

    def close(self) -> None:
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            try:
                store.close()
            except Exception as exc:  # closing fails open, as every layer's stop does
                log.info("run history store close: %s", exc)


def _example(hit: Hit) -> Example:
    payload = hit.payload
    score = payload.get("score")
    return Example(
        request=str(payload.get("request", "")),
        done=str(payload.get("done", "")),
        similarity=hit.score,
        score=float(score)
        if isinstance(score, int | float) and not isinstance(score, bool)
        else None,
        run_id=hit.id,
    )


def status_section(paths: ProjectPaths, config: MemorySettings | None = None) -> dict[str, Any]:
    """`theus status`: where the history lives, how many runs it keeps, and the counters."""
    config = config or current()
    if config.is_off("history"):
        return {"state": "off: THEUS_NO_HISTORY=1"}
    records = Journal(paths.home / "runs").records()
    server = config.qdrant_url
    return {
        "store": f"qdrant {server}" if server else "embedded",
        **asdict(settings_file.load(paths.home)),
        "runs": len(records),
        "stored": sum(r.stored for r in records),
        "invalid": sum(r.invalid for r in records),
        **HistoryStats.section(paths.home / STATS_FILE),
    }
