"""The semantic re-ranker: recall's candidates re-scored with real embeddings, within a deadline.

Per request: embed the request (about 4 ms with the local model), score every node that has a
vector (one matrix product over `NodeVectors`; brute force is fine up to ~100k vectors), and
blend with the lexical/graph score already on each candidate:

    score = (1 - WEIGHT) * lexical + WEIGHT * meaning

`meaning` is the cosine of the request with the node, mixed with the best cosine of any node of
its file (a file is about what its symbols are about), mapped to [0, 1] between `LOW` and
`HIGH`, so scores stay in [0, 1]. Candidates without a vector are looked up in the vector cache
by text and, while time allows, a few are embedded. When the lexical signal is weak (best score
below `WEAK`), the files nearest in meaning join the candidate set.

Failing open: a request that cannot be embedded by the deadline, or an embedder error, returns
the candidates unchanged and is counted (`RerankStats`); nothing is raised.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from knowledge import keys
from knowledge.embed.base import Embedder, EmbeddingError
from knowledge.embed.cache import VectorCache
from knowledge.embed.indexer import NodeVectors, embed_text
from knowledge.graph import Graph, Node
from knowledge.recall import Hit

WEIGHT = 0.35
NODE_SHARE = 0.5  # of a candidate's meaning from its own vector; the rest from its file's best
LOW, HIGH = 0.15, 0.65  # cosine mapped to 0 and 1 (all-MiniLM: unrelated ~0.1, close ~0.6)
WEAK = 0.5  # below this best lexical score, nearest files may join the candidates
NEIGHBOURS = 10
EMBED_MISSING = 16  # candidates without a vector embedded per request, time allowing
MISSING_COST_S = 0.05  # time kept in hand before embedding missing candidates
MAX_IN_FLIGHT = 2  # query embeddings still running (a hung endpoint) before we stop asking

Vector = npt.NDArray[np.float32]


@dataclass
class Ready:
    """What a re-rank needs: the embedder, the node vectors, and the cache if one is open."""

    embedder: Embedder
    vectors: NodeVectors
    cache: VectorCache | None = None


@dataclass
class RerankStats:
    """Counts for `theus status`; the layer persists them."""

    used: int = 0  # requests re-ranked
    skipped: int = 0  # layer not ready (model loading, off)
    late: int = 0  # the request's embedding missed the deadline
    failed: int = 0  # the embedder raised
    last_error: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, what: str, error: str = "") -> None:
        with self.lock:
            setattr(self, what, getattr(self, what) + 1)
            if error:
                self.last_error = error

    def as_dict(self) -> dict[str, object]:
        with self.lock:
            return {"used": self.used, "skipped": self.skipped, "late": self.late,
                    "failed": self.failed, "last_error": self.last_error}


class _Late(Exception):
    pass


class SemanticReranker:
    """The recall `Reranker`. `ready(deadline)` returns what it needs, or None when the layer
    is not usable (yet): then the candidates pass through unchanged."""

    def __init__(
        self, ready: Callable[[float], Ready | None], stats: RerankStats | None = None
    ) -> None:
        self._ready = ready
        self.stats = stats or RerankStats()
        self._in_flight = threading.Semaphore(MAX_IN_FLIGHT)

    @classmethod
    def fixed(cls, embedder: Embedder, vectors: NodeVectors,
              cache: VectorCache | None = None) -> SemanticReranker:
        state = Ready(embedder, vectors, cache)
        return cls(lambda _deadline: state)

    def rerank(self, query: str, candidates: list[Hit], graph: Graph, deadline: float
               ) -> list[Hit]:
        state = self._ready(deadline)
        if state is None:
            self.stats.count("skipped")
            return candidates
        try:
            q = self._embed([query], state.embedder, deadline)[0]
            hits = _Scorer(q, state, graph, deadline, self).score(candidates)
        except _Late:
            self.stats.count("late")
            return candidates
        except EmbeddingError as exc:
            self.stats.count("failed", f"{type(exc).__name__}: {exc}")
            return candidates
        self.stats.count("used")
        return hits

    def _embed(self, texts: list[str], embedder: Embedder, deadline: float) -> Vector:
        """Embed on a daemon thread and wait until `deadline`: a hung endpoint costs this
        request its semantic part, never the turn."""
        if not self._in_flight.acquire(blocking=False):
            raise _Late
        box: list[Vector] = []
        failed: list[EmbeddingError] = []
        done = threading.Event()

        def work() -> None:
            try:
                box.append(embedder.embed(texts))
            except EmbeddingError as exc:
                failed.append(exc)
            except Exception as exc:  # an adapter bug must not escape into recall
                failed.append(EmbeddingError(f"{type(exc).__name__}: {exc}"))
            finally:
                self._in_flight.release()
                done.set()

        threading.Thread(target=work, name="theus-embed-query", daemon=True).start()
        if not done.wait(max(0.0, deadline - time.perf_counter())):
            raise _Late
        if failed:
            raise failed[0]
        return box[0]


class _Scorer:
    def __init__(self, q: Vector, state: Ready, graph: Graph, deadline: float,
                 owner: SemanticReranker) -> None:
        self.q = q
        self.state = state
        self.graph = graph
        self.deadline = deadline
        self.owner = owner
        self.node_sim: dict[str, float] = {}
        self.file_best: dict[str, float] = {}

    def score(self, candidates: list[Hit]) -> list[Hit]:
        self._scan_all()
        with self.graph.lock:
            nodes = {h.key: n for h in candidates if (n := self.graph.get(h.key)) is not None}
        self._fill_missing(list(nodes.values()))
        out = [self._blend(h) for h in candidates]
        best_lexical = max((h.score for h in candidates), default=0.0)
        if best_lexical < WEAK:
            out += self._neighbours({h.path for h in candidates})
        out.sort(key=lambda h: (-h.score, h.key))
        return out

    def _scan_all(self) -> None:
        """Cosine of the request with every stored vector; best per file."""
        nodes, rows = self.state.vectors.matrix()
        if not nodes:
            return
        sims = (rows @ self.q).tolist()
        node_sim, file_best = self.node_sim, self.file_best
        for node, sim in zip(nodes, sims, strict=True):
            node_sim[node.key] = sim
            if node.path and sim > file_best.get(node.path, -1.0):
                file_best[node.path] = sim

    def _fill_missing(self, nodes: list[Node]) -> None:
        missing = [n for n in nodes if n.key not in self.node_sim]
        if not missing:
            return
        texts = {n.key: t for n in missing if (t := embed_text(n, self.graph)) is not None}
        cache = self.state.cache
        found = cache.get_many(texts.values()) if cache is not None and texts else {}
        todo = [k for k, t in texts.items() if t not in found][:EMBED_MISSING]
        if todo and self.deadline - time.perf_counter() > MISSING_COST_S:
            try:
                rows = self.owner._embed([texts[k] for k in todo], self.state.embedder,
                                         self.deadline)
            except (_Late, EmbeddingError):
                rows = None  # the request's own vector is enough to go on with
            if rows is not None:
                found.update(zip((texts[k] for k in todo), rows, strict=True))
                if cache is not None:
                    _put_quietly(cache, [texts[k] for k in todo], rows)
        for key, text in texts.items():
            vec = found.get(text)
            if vec is not None:
                sim = float(vec @ self.q)
                self.node_sim[key] = sim
                path = self.graph.get(key).path if key in self.graph else ""
                if path and sim > self.file_best.get(path, -1.0):
                    self.file_best[path] = sim

    def meaning(self, key: str, path: str) -> float | None:
        own = self.node_sim.get(key)
        best = self.file_best.get(path) if path else None
        if own is None and best is None:
            return None
        own = own if own is not None else best
        assert own is not None
        sim = NODE_SHARE * own + (1.0 - NODE_SHARE) * max(own, best if best is not None else own)
        return min(1.0, max(0.0, (sim - LOW) / (HIGH - LOW)))

    def _blend(self, hit: Hit) -> Hit:
        meaning = self.meaning(hit.key, hit.path)
        if meaning is None:
            return replace(hit, score=round((1.0 - WEIGHT) * hit.score, 4))
        score = (1.0 - WEIGHT) * hit.score + WEIGHT * meaning
        return replace(hit, score=round(min(1.0, max(0.0, score)), 4))

    def _neighbours(self, known_paths: set[str]) -> list[Hit]:
        ranked = sorted(self.file_best.items(), key=lambda kv: -kv[1])
        out: list[Hit] = []
        for path, _sim in ranked:
            if len(out) >= NEIGHBOURS:
                break
            if path in known_paths:
                continue
            node = self.graph.get(keys.file_key(path))
            meaning = self.meaning(node.key, path) if node is not None else None
            if node is None or meaning is None:
                continue
            out.append(Hit(key=node.key, kind=node.kind, path=path, name=node.label,
                           line=node.line, score=round(WEIGHT * meaning, 4),
                           why=f"close in meaning ({_sim:.2f})", layer="WARM"))
        return out


def _put_quietly(cache: VectorCache, texts: list[str], rows: Vector) -> None:
    # Only a cache: a locked or full disk costs a re-embedding later, not this request.
    with contextlib.suppress(Exception):  # sqlite3 raises several kinds
        cache.put_many(texts, rows)
