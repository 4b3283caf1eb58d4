"""The semantic re-ranker: recall's file ranking fused with real embeddings, within a deadline.

Per request: embed the request's start (`QUERY_CHARS`, `QUERY_TOKENS`; 4-26 ms with the local
model on one thread) beside the keyword search, take the cosine with every stored row (one
matrix product over `NodeVectors`; brute force is fine up to ~100k rows), and score each file
by its best passage: a dense ranking over file chunks. Only files of the kinds the request
wants count (`kinds.wanted_kinds`: code, and tests or docs when asked for), as in recall
itself. The two are fused by score, each on a 0..1 scale for this request:

    fused(file) = trust * lexical / best lexical + DENSE * meaning
    meaning     = (cosine - median cosine) / (best cosine - median cosine), at least 0

so a file far above the typical similarity gains up to `DENSE`, one below it gains nothing.
Score fusion beat reciprocal-rank fusion on the benchmark's tuning repositories (R@5 0.823 vs
0.815, MRR 0.727 vs 0.720, bench/recall.py), as recall's scores say how far ahead its best
files are; once recall read the project's history, 0.3 beat 0.5 for `DENSE` (R@5 0.839 vs
0.830, MRR 0.763 vs 0.758). `trust` is 1 when the keywords' best score reaches the injection
threshold and falls with its square below it, so a request that shares no word with the
right file can still find it by meaning. The files nearest in meaning join the candidates.
Scores stay on recall's scale, so the threshold keeps its meaning: the best file keeps the
larger of its score and its blend with its meaning, and every other file scores that times
its fused score relative to the best. Memories and episodes keep their own score, lifted by
their closeness in meaning. Candidates without vectors are looked up in the vector cache
and, while time allows, a few are embedded.

Failing open: a request that cannot be embedded by the deadline, or an embedder error, returns
the candidates unchanged and is counted (`RerankStats`); nothing is raised.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from knowledge.core import keys
from knowledge.core.errors import TheusError
from knowledge.core.graph import GraphReader, Node
from knowledge.embed.base import Embedder, EmbeddingError
from knowledge.embed.cache import VectorCache
from knowledge.embed.indexer import VectorSet, embed_texts
from knowledge.recall.intent import intent_of
from knowledge.recall.kinds import kind_of, wanted_kinds
from knowledge.recall.recaller import THRESHOLD, Hit, Rerank
from knowledge.recall.status import Counters
from knowledge.vectors.port import VectorStoreUnavailable

DENSE = 0.3  # the weight of meaning against recall's own ranking (bench/recall.py)
WEIGHT = 0.5  # how much meaning lifts a memory's (or the best file's) own score
LOW, HIGH = 0.1, 0.5  # cosine mapped to 0 and 1 (all-MiniLM on code: unrelated ~0.1)
NEIGHBOURS = 10
EMBED_MISSING = 8  # candidate files without a vector embedded per request, time allowing
MISSING_COST_S = 0.05  # time kept in hand before embedding missing candidates
MAX_IN_FLIGHT = 2  # query embeddings still running (a hung endpoint) before we stop asking
# A request's meaning is in its first sentences: embedding only these scored as well on the
# tuning repositories (bench/recall.py --query full: R@5 0.840 and MRR 0.766 with 250
# characters, 0.840 and 0.765 with 400, 0.840 and 0.763 with the whole request), and a long
# request costs the model a fraction of the time. The local model reads at most its first
# `QUERY_TOKENS` word pieces: the same R@5 0.849 (MRR 0.766 against 0.767 uncut; 48: 0.849 /
# 0.766), and a long request's embedding takes ~26 ms on one thread instead of up to 47.
QUERY_CHARS = 250
QUERY_TOKENS = 64

Vector = npt.NDArray[np.float32]


@dataclass
class Ready:
    """What a re-rank needs: the embedder, the node vectors, the cache if one is open, and
    the project root (to read a candidate file the background pass has not reached)."""

    embedder: Embedder
    vectors: VectorSet
    cache: VectorCache | None = None
    root: Path | None = None


@dataclass
class RerankStats(Counters):
    """Counts for `theus status`; the layer persists them."""

    used: int = 0  # requests re-ranked
    skipped: int = 0  # layer not ready (model loading, off)
    late: int = 0  # the request's embedding missed the deadline
    failed: int = 0  # the embedder raised


class _Late(TheusError):
    pass


class _Job:
    """One embedding on a daemon thread, waited for until a deadline: a hung endpoint (or a
    model still loading) costs the request its semantic part, never the turn."""

    def __init__(
        self,
        prepare: Callable[[], Ready | None],
        texts: list[str],
        max_tokens: int | None,
        slots: threading.Semaphore,
    ) -> None:
        self.state: Ready | None = None
        self._prepare = prepare
        self._texts = texts
        self._max_tokens = max_tokens
        self._slots = slots
        self._vectors: Vector | None = None
        self._error: EmbeddingError | None = None
        self._done = threading.Event()
        self.thread = threading.Thread(target=self._work, name="theus-embed-query", daemon=True)

    def _work(self) -> None:
        try:
            self.state = self._prepare()
            if self.state is not None:
                self._vectors = self.state.embedder.embed(self._texts, self._max_tokens)
        except EmbeddingError as exc:
            self._error = exc
        except Exception as exc:  # an adapter bug must not escape into recall
            self._error = EmbeddingError(f"{type(exc).__name__}: {exc}")
        finally:
            self._slots.release()
            self._done.set()

    def result(self, deadline: float) -> Vector | None:
        """The vectors (None when the layer is not ready); `_Late` past the deadline."""
        if not self._done.wait(max(0.0, deadline - time.perf_counter())):
            raise _Late
        if self._error is not None:
            raise self._error
        return self._vectors


class SemanticReranker:
    """The recall `Reranker`. `ready(deadline)` returns what it needs, or None when the layer
    is not usable (yet): then the candidates pass through unchanged. `begin` embeds the
    request on a thread while the keyword search runs (the runtime leaves the GIL), and waits
    for the model to load there too."""

    def __init__(
        self, ready: Callable[[float], Ready | None], stats: RerankStats | None = None
    ) -> None:
        self._ready = ready
        self.stats = stats or RerankStats()
        self._in_flight = threading.Semaphore(MAX_IN_FLIGHT)
        self._threads: list[threading.Thread] = []
        self._threads_lock = threading.Lock()

    @classmethod
    def fixed(
        cls,
        embedder: Embedder,
        vectors: VectorSet,
        cache: VectorCache | None = None,
        root: Path | None = None,
    ) -> SemanticReranker:
        state = Ready(embedder, vectors, cache, root)
        return cls(lambda _deadline: state)

    def begin(self, query: str, deadline: float) -> Rerank:
        job = self._start(lambda: self._ready(deadline), [query[:QUERY_CHARS]], QUERY_TOKENS)

        def rerank(candidates: list[Hit], graph: GraphReader) -> list[Hit]:
            try:
                if job is None:
                    raise _Late
                vectors = job.result(deadline)
                if vectors is None or job.state is None:
                    self.stats.count("skipped")
                    return candidates
                hits = _Scorer(vectors[0], job.state, graph, deadline, self).score(
                    query, candidates
                )
            except _Late:
                self.stats.count("late")
                return candidates
            except EmbeddingError as exc:
                self.stats.count("failed", f"{type(exc).__name__}: {exc}")
                return candidates
            self.stats.count("used")
            return hits

        return rerank

    def join(self, timeout: float) -> None:
        """Wait (at most `timeout` in all) for request embeddings still running."""
        end = time.monotonic() + timeout
        with self._threads_lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, end - time.monotonic()))

    def _start(
        self, prepare: Callable[[], Ready | None], texts: list[str], max_tokens: int | None = None
    ) -> _Job | None:
        """A running job, or None when `MAX_IN_FLIGHT` are still running (a hung endpoint)."""
        if not self._in_flight.acquire(blocking=False):
            return None
        job = _Job(prepare, texts, max_tokens, self._in_flight)
        with self._threads_lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [job.thread]
        job.thread.start()
        return job

    def _embed(self, texts: list[str], state: Ready, deadline: float) -> Vector | None:
        job = self._start(lambda: state, texts)
        if job is None:
            raise _Late
        return job.result(deadline)


class _Scorer:
    def __init__(
        self, q: Vector, state: Ready, graph: GraphReader, deadline: float, owner: SemanticReranker
    ) -> None:
        self.q = q
        self.state = state
        self.graph = graph
        self.deadline = deadline
        self.owner = owner
        self.node_sim: dict[str, float] = {}  # nodes without a path (memories, episodes)
        self.file_best: dict[str, float] = {}  # path -> best cosine of its chunks

    def score(self, query: str, candidates: list[Hit]) -> list[Hit]:
        self._scan_all()
        self._fill_missing(candidates)
        intent = intent_of(query)
        counted = wanted_kinds(intent)
        wanted = {p: c for p, c in self.file_best.items() if kind_of(p) in counted}
        files = [h for h in candidates if h.path]
        texts = [h for h in candidates if not h.path]
        best = max((h.score for h in files), default=0.0)
        # Below the injection threshold the keywords found no real signal: they count in
        # proportion, so a request that shares no word with the right file can still find
        # it by meaning.
        trust = min(1.0, best / THRESHOLD) ** 2
        meaning = _spread(wanted)
        fused = {
            h.path: trust * h.score / (best or 1.0) + DENSE * meaning.get(h.path, 0.0)
            for h in files
        }
        hits = files + self._neighbours(set(fused), wanted)
        for hit in hits[len(files) :]:
            fused[hit.path] = DENSE * meaning.get(hit.path, 0.0)
        ranked = sorted(hits, key=lambda h: -fused[h.path])  # stable: ties keep their order
        top = fused[ranked[0].path] if ranked else 0.0
        scale = max((self._blend(h) for h in ranked[:1]), default=0.0)
        out = [
            h.rescored(round(scale * fused[h.path] / top, 4) if top > 0 else 0.0) for h in ranked
        ]
        out += [h.rescored(round(self._blend(h), 4)) for h in texts]
        return sorted(out, key=lambda h: -h.score)  # stable: files keep their fused order

    def _take(self, node: Node, sims: Iterable[float]) -> None:
        best = max(sims, default=None)
        if best is None:
            return
        if node.path:
            if best > self.file_best.get(node.path, -1.0):
                self.file_best[node.path] = best
        else:
            self.node_sim[node.key] = best

    def _scan_all(self) -> None:
        """Cosine of the request with every stored row; best per file (or per memory)."""
        self.file_best, self.node_sim = self.state.vectors.matrix().best(self.q)

    def _fill_missing(self, candidates: list[Hit]) -> None:
        """Vectors for candidates the background pass has not reached: from the cache, else
        embedded (the first chunk of a file only) while time allows."""
        root = self.state.root
        graph = self.graph
        nodes: dict[str, Node] = {}
        with graph.lock:
            for hit in candidates:
                key = keys.file_key(hit.path) if hit.path else hit.key
                if hit.path in self.file_best or key in self.node_sim or key in nodes:
                    continue
                node = graph.get(key)
                if node is not None:
                    nodes[key] = node
        if not nodes or root is None:
            return
        texts = {k: t for k, n in nodes.items() if (t := embed_texts(n, root))}
        cache = self.state.cache
        found = cache.get_many(x for t in texts.values() for x in t) if cache is not None else {}
        todo = [t[0] for t in texts.values() if not any(x in found for x in t)]
        todo = todo[:EMBED_MISSING]
        if todo and self.deadline - time.perf_counter() > MISSING_COST_S:
            try:
                rows = self.owner._embed(todo, self.state, self.deadline)
            except (_Late, EmbeddingError):
                rows = None  # the request's own vector is enough to go on with
            if rows is not None:
                found.update(zip(todo, rows, strict=True))
                if cache is not None:
                    _put_quietly(cache, todo, rows)
        for key, node_texts in texts.items():
            self._take(nodes[key], (float(found[t] @ self.q) for t in node_texts if t in found))

    def meaning(self, hit: Hit) -> float | None:
        """The hit's closeness to the request in [0, 1]: its file's best chunk (a symbol is
        as close as the code around it), or its own text for memories and episodes."""
        sim = self.file_best.get(hit.path) if hit.path else self.node_sim.get(hit.key)
        if sim is None:
            return None
        return min(1.0, max(0.0, (sim - LOW) / (HIGH - LOW)))

    def _blend(self, hit: Hit) -> float:
        meaning = self.meaning(hit) or 0.0
        return min(1.0, max(hit.score, (1.0 - WEIGHT) * hit.score + WEIGHT * meaning))

    def _neighbours(self, known_paths: set[str], wanted: dict[str, float]) -> list[Hit]:
        """The files nearest in meaning (of the kinds the request wants) not yet candidates."""
        ranked = sorted(wanted.items(), key=lambda kv: -kv[1])
        out: list[Hit] = []
        for path, sim in ranked[: NEIGHBOURS + len(known_paths)]:
            if len(out) >= NEIGHBOURS:
                break
            node = None if path in known_paths else self.graph.get(keys.file_key(path))
            if node is not None:
                out.append(
                    Hit(
                        key=node.key,
                        kind=node.kind,
                        path=path,
                        name=node.label,
                        line=node.line,
                        score=0.0,
                        why=f"close in meaning ({sim:.2f})",
                        layer="WARM",
                    )
                )
        return out


def _spread(cosines: dict[str, float]) -> dict[str, float]:
    """Each file's cosine on this request's scale: 0 at the median, 1 at the best."""
    if not cosines:
        return {}
    values = np.fromiter(cosines.values(), dtype=np.float64, count=len(cosines))
    low, high = _median(values), float(values.max())
    span = high - low
    if span <= 0:
        return dict.fromkeys(cosines, 0.0)
    return {p: max(0.0, (c - low) / span) for p, c in cosines.items()}


def _median(values: npt.NDArray[np.float64]) -> float:
    """np.median's value without np.median, whose first call imports numpy.ma (75 ms of a
    one-shot recall)."""
    half = len(values) // 2
    if len(values) % 2:
        return float(np.partition(values, half)[half])
    low, high = np.partition(values, (half - 1, half))[half - 1 : half + 1]
    return float((low + high) / 2)


def _put_quietly(cache: VectorCache, texts: list[str], rows: Vector) -> None:
    # Only a cache: a locked or full disk costs a re-embedding later, not this request.
    with contextlib.suppress(VectorStoreUnavailable):
        cache.put_many(texts, rows)
