"""Hybrid recall: request text in, ranked graph nodes with a score and a reason out.

Signals (see the modules): IDF-weighted keywords over labels, paths, signatures, summaries and
memory text (`lexical`); BM25 over the indexed files' contents (`content`), which is also the
fallback when no label matches; a hash-embedding tie-break (`hashvec`); spreading along edges
(`traverse`); `fuse` combines them; then an optional semantic re-ranker (`Reranker`, filled by
the embedding layer). Pure over the graph except `content`, which reads indexed files only.

Score scale: every `Hit.score` is in [0, 1] and comparable across requests. Internally a
candidate's score is a *share*: how much of the request's IDF-weighted words the node and its
file explain (a word in a name counts fully, in a signature or docstring about half, in the
file's text through BM25), blended 80/20 with the hash-embedding similarity; a neighbour
reached by traversal gets its source's share times the edge weight and a 0.6 decay per hop.
`calibrate` then reports half that share plus half a saturating function of the IDF mass it
stands for (1 - e^(-mass/8), about two rare words), so a long request whose rare words all
point at one place still scores well. The injection threshold 0.35 needs about a third of
the request's informative words found together in one place (a one-word request that names a
symbol passes; "fix the bug in the thing" finds nothing to match).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from knowledge.graph import Graph
from knowledge.recall.content import ContentIndex
from knowledge.recall.fuse import HashCache, Scored, fuse
from knowledge.recall.lexical import LexicalIndex
from knowledge.recall.tokens import query_terms
from knowledge.recall.track import NodeTracker

PER_FILE = 3
EVIDENCE_SCALE = 8.0  # IDF mass (about two rare words) worth 1 - 1/e of the absolute half
CONTENT_CATCH_UP_S = 0.04  # per call, reading files the content index has not seen yet
WARM_SLICE_S = 0.05  # the background reader holds the content index's lock this long at most
RERANK_BUDGET_S = 0.8  # the semantic layer's extra budget (DESIGN: +800 ms when it is on)
__all__ = ["Hit", "Recall", "Recaller", "Reranker"]
log = logging.getLogger(__name__)


@dataclass
class Hit:
    key: str
    kind: str
    path: str  # repo-relative; "" for memories and episodes
    name: str
    line: int
    score: float  # in [0, 1], see the module docstring
    why: str
    layer: str  # "HOT" | "WARM" | "COLD"


@dataclass
class Recall:
    query: str
    hits: list[Hit]
    took_ms: float
    best_score: float
    timed_out: bool = False
    notes: list[str] = field(default_factory=list)


class Reranker(Protocol):
    """Re-orders (and may re-score, within [0, 1]) candidates; must return by `deadline`
    (a `time.perf_counter()` value) with whatever it has."""

    def rerank(self, query: str, candidates: list[Hit], graph: Graph, deadline: float
               ) -> list[Hit]: ...


class Recaller:
    """One per graph: keeps the scoring index in step with the graph between calls."""

    def __init__(self, graph: Graph, root: Path, reranker: Reranker | None = None) -> None:
        self.graph = graph
        self.root = Path(root)
        self.reranker = reranker
        self._tracker = NodeTracker()
        self.index = LexicalIndex()
        self._hashes = HashCache()
        self.content = ContentIndex(self.root)
        self._warmer: threading.Thread | None = None

    def warm(self, budget_s: float | None = None) -> bool:
        """Bring both indexes up to date (e.g. from a background thread at start); file
        contents are read for at most `budget_s` seconds if given. True when complete."""
        deadline = None if budget_s is None else time.perf_counter() + budget_s
        self.sync()
        return self.content.read(deadline)

    def sync(self) -> int:
        """Bring both indexes in step with the graph (free when its version has not moved);
        returns how many nodes changed."""
        with self.graph.lock:
            found = self._tracker.changes(self.graph)
            if found is None:
                return 0
            self.content.apply(*found)
            return self.index.apply(*found)

    def _warm_in_background(self) -> None:
        """Finish reading file contents on a daemon thread, in short slices so that recalls
        (which need the content index's lock) wait at most one slice."""
        if self._warmer is not None and self._warmer.is_alive():
            return

        def run() -> None:
            try:
                while not self.content.read(time.perf_counter() + WARM_SLICE_S):
                    time.sleep(0.001)
            except Exception:  # the content signal is optional: recall goes on without it
                log.exception("reading file contents for recall failed")

        self._warmer = threading.Thread(target=run, name="theus-recall-warm", daemon=True)
        self._warmer.start()

    def recall(self, query: str, top: int = 10, path_prefix: str | None = None) -> Recall:
        start = time.perf_counter()
        notes: list[str] = []
        words = query_terms(query)
        if not words:
            return Recall(query, [], _ms(start), 0.0, notes=["no searchable words"])
        graph = self.graph
        with graph.lock:
            self.sync()
            if not self.content.read(time.perf_counter() + CONTENT_CATCH_UP_S):
                notes.append("file contents not fully read yet")
                self._warm_in_background()
            match = self.index.search(words, path_prefix)
            content = self.content.search(words, path_prefix)
            ranked = fuse(graph, query, match, self._hashes, content)
            hits = _diverse(graph, ranked, max(top, 1) * 2, match.total)
        if path_prefix:  # traversal may have stepped outside the prefix
            hits = [h for h in hits if h.path.startswith(path_prefix)]
        late = False
        # Even with no lexical hit: the semantic layer can answer from nearest neighbours.
        if self.reranker is not None:
            hits, late = self._rerank(self.reranker, query, hits, notes)
        hits = hits[:top]
        best = max((h.score for h in hits), default=0.0)
        return Recall(query, hits, _ms(start), best, timed_out=late, notes=notes)

    def _rerank(
        self, reranker: Reranker, query: str, hits: list[Hit], notes: list[str]
    ) -> tuple[list[Hit], bool]:
        """The re-ranked hits, or the keyword order when the layer fails or answers past its
        deadline (then the second value is True)."""
        deadline = time.perf_counter() + RERANK_BUDGET_S
        try:
            ranked = reranker.rerank(query, hits, self.graph, deadline)
        except Exception as exc:  # a failing layer must not fail recall
            notes.append(f"semantic re-rank skipped: {type(exc).__name__}")
            return hits, False
        if time.perf_counter() > deadline:
            notes.append("semantic re-rank missed its deadline; keyword order kept")
            return hits, True
        return ranked, False


def calibrate(share: float, total: float) -> float:
    """Map a share of the request's IDF mass to the reported score (monotone, in [0, 1]).

    Half is the share itself, half a saturating function of the IDF mass it stands for, so a
    long request whose rare words all point at one place still reaches the threshold.
    """
    share = min(1.0, max(0.0, share))
    return 0.5 * share + 0.5 * (1.0 - math.exp(-share * total / EVIDENCE_SCALE))


def _diverse(graph: Graph, ranked: list[Scored], limit: int, total: float) -> list[Hit]:
    """The best hits, at most `PER_FILE` from one file, so a long file cannot fill the list."""
    per_file: dict[str, int] = {}
    hits: list[Hit] = []
    for scored in ranked:
        hit = _hit(graph, scored, total)
        if hit is None:
            continue
        seen = per_file.get(hit.path, 0)
        if hit.path and seen >= PER_FILE:
            continue
        per_file[hit.path] = seen + 1
        hits.append(hit)
        if len(hits) >= limit:
            break
    return hits


def _hit(graph: Graph, scored: Scored, total: float) -> Hit | None:
    node = graph.get(scored.key)
    if node is None:
        return None
    return Hit(
        key=node.key, kind=node.kind, path=node.path, name=node.label, line=node.line,
        score=round(calibrate(scored.score, total), 4), why=scored.why, layer=scored.layer,
    )


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 2)
