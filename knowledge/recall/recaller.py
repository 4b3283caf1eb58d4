"""Hybrid recall: request text in, ranked files and graph nodes with a score and a reason out.

Signals (see the modules): BM25 over the indexed files' contents (`content`), IDF-weighted
keywords over node labels, paths, signatures, summaries and memory text (`lexical`), the
identifiers a request spells out, the kind of file against what the request wants (`intent`,
`kinds`), a hash-embedding tie-break (`hashvec`) and spreading along edges (`traverse`);
`rank` combines them into a file ranking, then the nodes within each file that show why;
then an optional semantic re-ranker (`Reranker`, filled by the embedding layer) re-orders the
files. Pure over the graph except `content`, which reads indexed files only.

Score scale: every `Hit.score` is in [0, 1] and comparable across requests. The best file's
score says how much of the request it explains: half the share of the request's weighted IDF
mass whose words it contains (its text or its labels), half a saturating function of the IDF
mass that share stands for (1 - e^(-mass/8), about two rare words), so a long request whose
rare words all point at one place still scores well. Every other hit scores the best's score
times its file's ranking score relative to the best file, so scores fall down the list. The
injection threshold (`THRESHOLD`, 0.35) needs about a third of the request's informative
words found together in one place.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from knowledge.core import keys
from knowledge.core.graph import RELATION_EDGE, Graph, GraphReader
from knowledge.core.store import StoreGraph
from knowledge.recall import kinds, saved
from knowledge.recall.content import ContentIndex, FrozenContentIndex
from knowledge.recall.definitions import Definition, rank_definitions
from knowledge.recall.history import FrozenHistoryIndex, HistoryIndex
from knowledge.recall.intent import Intent, intent_of
from knowledge.recall.lexical import FrozenLexicalIndex, LexicalIndex, Match, file_stem
from knowledge.recall.rank import RankedFile, RecallTuning, Signals, rank_files
from knowledge.recall.tokens import (
    fold,
    head,
    mentioned_identifiers,
    query_terms,
    query_weights,
    terms,
)
from knowledge.recall.track import NodeTracker
from knowledge.recall.traverse import DECAY, EDGE_WEIGHTS, FAN_OUT

MAX_FILES = 50  # files listed in `Recall.files`
EVIDENCE_SCALE = 8.0  # IDF mass (about two rare words) worth 1 - 1/e of the absolute half
CONTENT_CATCH_UP_S = 0.04  # per call, reading files the content index has not seen yet
WARM_SLICE_S = 0.05  # the background reader holds the content index's lock this long at most
RERANK_BUDGET_S = 0.8  # the semantic layer's extra budget (DESIGN: +800 ms when it is on)
THRESHOLD = 0.35  # the best score a recall needs before anything is injected
# A PERSONAL entity (what the user said) on a request about their own world.
PERSONAL_BOOST = 1.25
__all__ = [
    "THRESHOLD",
    "Definition",
    "Hit",
    "Recall",
    "RecallTuning",
    "Recaller",
    "Rerank",
    "Reranker",
    "make_recaller",
]
log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from knowledge.index.project import Project


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

    def as_json(self) -> dict[str, str | int | float]:
        """The hit as `theus recall --json` and the MCP recall tool show it."""
        return {
            "key": self.key,
            "kind": self.kind,
            "path": self.path,
            "name": self.name,
            "line": self.line,
            "score": self.score,
            "why": self.why,
            "layer": self.layer,
        }

    def rescored(self, score: float) -> Hit:
        """This hit at another score (a fifth of `dataclasses.replace`'s cost: a hot path)."""
        return Hit(
            self.key, self.kind, self.path, self.name, self.line, score, self.why, self.layer
        )


@dataclass
class Recall:
    query: str
    hits: list[Hit]
    took_ms: float
    best_score: float
    timed_out: bool = False
    notes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # distinct paths in rank order
    # The definitions most likely to change, best first (`definitions`).
    definitions: list[Definition] = field(default_factory=list)


Rerank = Callable[[list[Hit], GraphReader], list[Hit]]


class Reranker(Protocol):
    """Two phases, so the request's own work (its embedding) runs beside the keyword search:
    `begin` starts it and must not block or raise; the function it returns re-orders (and may
    re-score, within [0, 1]) the candidates: one hit per file (kind "file") in rank order,
    then memories and episodes; it may add files, and must return by `deadline` (a
    `time.perf_counter()` value) with whatever it has."""

    def begin(self, query: str, deadline: float) -> Rerank: ...


class Recaller:
    """One per graph: keeps the scoring index in step with the graph between calls."""

    def __init__(
        self,
        graph: GraphReader,
        root: Path,
        reranker: Reranker | None = None,
        tuning: RecallTuning | None = None,
    ) -> None:
        self.graph = graph
        self.root = Path(root)
        self.reranker = reranker
        self.tuning = tuning or RecallTuning()
        self._tracker = NodeTracker()
        self.index = LexicalIndex()
        self.content = ContentIndex(self.root)
        self.history = HistoryIndex(self.root)
        self.frozen = False  # read back from a snapshot: searches, never syncs
        self._warmer: threading.Thread | None = None

    def warm(self, budget_s: float | None = None) -> bool:
        """Bring the indexes up to date (e.g. from a background thread at start); file
        contents are read for at most `budget_s` seconds if given. True when complete."""
        deadline = None if budget_s is None else time.perf_counter() + budget_s
        self.sync()
        self._refresh_history()
        return self.content.read(deadline)

    # -- the snapshot a one-shot command loads (`saved`) ------------------------------------
    @classmethod
    def from_snapshot(
        cls,
        graph: GraphReader,
        root: Path,
        found: saved.Saved,
        reranker: Reranker | None = None,
        tuning: RecallTuning | None = None,
    ) -> Recaller:
        """A recaller that ranks exactly as one built from the store's rows (which is what
        the snapshot holds); `graph` may be a `store.StoreGraph` (it is only read for the
        hits shown)."""
        recaller = cls(graph, root, reranker=reranker, tuning=tuning)
        base, delta = found.base, found.delta
        recaller.index = FrozenLexicalIndex(base, delta, delta["dead.lex"])
        recaller.content = FrozenContentIndex(recaller.root, base, delta, delta["dead.content"])
        recaller.history = FrozenHistoryIndex(recaller.root, delta, found.head)
        recaller.frozen = True
        return recaller

    def _refresh_history(self) -> None:
        try:
            self.history.refresh()
        except Exception:  # the history signal is optional: recall goes on without it
            log.exception("reading the project's history for recall failed")

    def sync(self) -> int:
        """Bring both indexes in step with the graph (free when its version has not moved);
        returns how many nodes changed."""
        if self.frozen or not isinstance(self.graph, Graph):
            return 0
        with self.graph.lock:
            found = self._tracker.changes(self.graph)
            if found is None:
                return 0
            self.content.apply(*found)
            return self.index.apply(*found)

    def warm_in_background(self) -> None:
        """Finish reading file contents on a daemon thread (an exit never waits for it), in
        short slices so that recalls (which need the content index's lock) wait at most one
        slice."""
        if self._warmer is not None and self._warmer.is_alive():
            return

        def run() -> None:
            if self.history.stale:
                self._refresh_history()
            try:
                while not self.content.read(time.perf_counter() + WARM_SLICE_S):
                    time.sleep(0.001)
            except Exception:  # the content signal is optional: recall goes on without it
                log.exception("reading file contents for recall failed")

        self._warmer = threading.Thread(target=run, name="theus-recall-warm", daemon=True)
        self._warmer.start()

    def recall(
        self,
        query: str,
        top: int = 10,
        path_prefix: str | None = None,
        deadline: float | None = None,
    ) -> Recall:
        """Rank for `query`. `deadline` (a `time.perf_counter()` value) bounds the semantic
        re-rank, which otherwise gets `RERANK_BUDGET_S`: past it, the keyword order stands."""
        start = time.perf_counter()
        notes: list[str] = []
        words = query_terms(query)
        if not words:
            return Recall(query, [], _ms(start), 0.0, notes=["no searchable words"])
        tuning = self.tuning
        intent = intent_of(query)
        graph = self.graph
        budget = start + RERANK_BUDGET_S
        budget = budget if deadline is None else min(deadline, budget)
        rerank = None if self.reranker is None else self._begin(self.reranker, query, notes, budget)
        with graph.lock:
            self.sync()
            if not self.content.read(time.perf_counter() + CONTENT_CATCH_UP_S):
                notes.append("file contents not fully read yet")
                self.warm_in_background()
            elif self.history.stale:
                self.warm_in_background()
            match = self.index.search(words, path_prefix)
            factors = kinds.factors(intent) if tuning.kinds else np.ones(len(kinds.KINDS) + 1)
            weights = query_weights(query, tuning.head)
            content = self.content.search(
                weights, kinds.wanted_kinds(intent), factors, match.idf, path_prefix
            )
            history = (
                {
                    p: v
                    for p, v in self.history.votes(weights).items()
                    if p in self.content and (not path_prefix or p.startswith(path_prefix))
                }
                if tuning.history
                else {}
            )
            named = {
                i: [p for p in self.index.named(i) if not path_prefix or p.startswith(path_prefix)]
                for i in mentioned_identifiers(query)
            }
            files_named = {
                w: found
                for w in dict.fromkeys(terms(head(query)))
                if (found := self.files_named(w, path_prefix))
            }
            signals = Signals(
                intent, match, content, named, history=history, files_named=files_named
            )
            files = rank_files(graph, query, signals, self.index.hash_vectors, tuning)
            best = calibrate(files[0].coverage, match.total) if files else 0.0
            remembered = _memory_hits(graph, match, intent)
            remembered += _related_entities(graph, remembered)
            candidates = (
                _file_hits(files, best)
                + remembered
                + _noted_files(graph, remembered, {f.path for f in files})
            )
        candidates.sort(key=lambda h: -h.score)  # stable: files keep their order
        late = False
        # Even with no lexical hit: the semantic layer can answer from nearest neighbours.
        if rerank is not None:
            candidates, late = self._rerank(rerank, candidates, notes, budget)
        if path_prefix:  # traversal and the semantic layer may step outside the prefix
            candidates = [h for h in candidates if not h.path or h.path.startswith(path_prefix)]
        with graph.lock:
            hits = _expand(graph, candidates, match, top)[:top]
            definitions = self._definitions(candidates, match, weights, list(named))
        paths = list(dict.fromkeys(h.path for h in candidates if h.path))[: max(top, MAX_FILES)]
        best = max((h.score for h in hits), default=0.0)
        return Recall(
            query,
            hits,
            _ms(start),
            best,
            timed_out=late,
            notes=notes,
            files=paths,
            definitions=definitions,
        )

    def _definitions(
        self, candidates: list[Hit], match: Match, weights: dict[str, float], mentioned: list[str]
    ) -> list[Definition]:
        """The definitions of the best files most likely to change (none when the best file
        is not code the request wants changed); `mentioned`: the identifiers the request
        spells out."""
        files = [h for h in candidates if h.kind == "file"]
        if not files or files[0].score <= 0:
            return []
        top = files[0].score
        idf = match.idf
        return rank_definitions(
            [(h.path, h.score / top) for h in files],
            self.graph.owned_nodes,
            self.content.line_counts,
            match,
            {t: w * idf[t] for t, w in weights.items() if t in idf},
            mentioned,
        )

    def files_named(self, word: str, path_prefix: str | None) -> list[str]:
        """The files a (folded) word of the request is the name of: `sessions.py` for
        "session"; a symbol of the same name does not count."""
        if len(word) < 3:
            return []
        return [
            p
            for p in self.index.named(word)
            if word in (stem := file_stem(p), fold(stem))
            and (not path_prefix or p.startswith(path_prefix))
        ]

    @staticmethod
    def _begin(reranker: Reranker, query: str, notes: list[str], deadline: float) -> Rerank | None:
        try:
            return reranker.begin(query, deadline)
        except Exception as exc:  # a failing layer must not fail recall
            notes.append(f"semantic re-rank skipped: {type(exc).__name__}")
            return None

    def _rerank(
        self, rerank: Rerank, hits: list[Hit], notes: list[str], deadline: float
    ) -> tuple[list[Hit], bool]:
        """The re-ranked hits, or the keyword order when the layer fails or answers past its
        deadline (then the second value is True)."""
        try:
            ranked = rerank(hits, self.graph)
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


def make_recaller(
    project: Project,
    reranker: Reranker | None = None,
    tuning: RecallTuning | None = None,
    one_shot: bool = False,
) -> Recaller:
    """The one way every front end (app, `theus -p`, `theus recall`, `theus mcp`) builds its
    recaller, so that all of them rank identically.

    `one_shot` (a command that answers once and exits): load the project's saved index,
    brought up to date with what was saved since (`saved.current`: in time proportional to
    that), reading hits straight from the store; this spares loading the graph and building
    the indexes. A graph with unsaved changes, or a store that cannot tell what changed, gets
    a recaller over the graph.
    """
    if one_shot and not project.unsaved:
        found = saved.current(project)
        if found is not None:
            return Recaller.from_snapshot(
                StoreGraph(project.store), project.root, found, reranker=reranker, tuning=tuning
            )
    return Recaller(project.graph, project.root, reranker=reranker, tuning=tuning)


def _file_hits(files: list[RankedFile], best: float) -> list[Hit]:
    """One hit per ranked file, scored on the request's scale (a file node's label is its
    name and its line 1: no graph read needed)."""
    return [
        Hit(
            keys.file_key(f.path),
            "file",
            f.path,
            f.path.rpartition("/")[2],
            1,
            round(best * f.score, 4),
            f.why,
            f.layer,
        )
        for f in files
    ]


def _memory_hits(graph: GraphReader, match: Match, intent: Intent) -> list[Hit]:
    """Memories, episodes and entities the request's words name, scored by their own text;
    what the user said of their own world first when the request is about it."""
    out = []
    for key, own in match.texts.items():
        node = graph.get(key)
        if node is not None:
            score = calibrate(own, match.total)
            why = "matches " + ", ".join(match.terms_of(node))
            if intent.personal and node.kind == "entity" and node.layer == "PERSONAL":
                score, why = min(1.0, score * PERSONAL_BOOST), why + "; what you said"
            out.append(
                Hit(node.key, node.kind, "", node.label, node.line, round(score, 4), why, "HOT")
            )
    return out


def _related_entities(graph: GraphReader, remembered: list[Hit]) -> list[Hit]:
    """Acervo's neighbourhood of the entities the request names: what the conversation
    related them to, one hop WARM, two hops COLD, scored down by `DECAY` a hop (Supabase ->
    the project that uses it -> Next.js, beside it)."""
    frontier = {h.key: h.score for h in remembered if h.kind == "entity"}
    seen = {h.key for h in remembered}
    out: list[Hit] = []
    for layer in ("WARM", "COLD"):
        reached: dict[str, tuple[float, str, str]] = {}
        for key, score in sorted(frontier.items(), key=lambda kv: -kv[1]):
            outgoing, incoming, _ = graph.neighbours(key, FAN_OUT)
            for other, kind in (*outgoing, *incoming):
                if (
                    not kind.startswith(RELATION_EDGE)
                    or other in seen
                    or not other.startswith(keys.ENTITY_PREFIX)
                ):
                    continue
                if score * DECAY > reached.get(other, (0.0, "", ""))[0]:
                    reached[other] = (score * DECAY, key, kind.removeprefix(RELATION_EDGE))
        frontier = {}
        for key, (score, source, relation) in reached.items():
            node = graph.get(key)
            if node is None:
                continue
            seen.add(key)
            frontier[key] = score
            out.append(
                Hit(
                    key,
                    "entity",
                    "",
                    node.label,
                    node.line,
                    round(score, 4),
                    f"{relation} {source}",
                    layer,
                )
            )
    return out


def _noted_files(graph: GraphReader, remembered: list[Hit], ranked: set[str]) -> list[Hit]:
    """The files a recalled memory or episode is about (its derived-from edges) that the
    request's words did not find: a memory about `billing/invoice.py` brings that file, one
    hop down from the memory (WARM)."""
    out: dict[str, Hit] = {}
    step = DECAY * EDGE_WEIGHTS["derived-from"]
    for hit in sorted(remembered, key=lambda h: -h.score):
        if hit.kind not in ("memory", "episode"):
            continue
        for dst, kind in graph.neighbours(hit.key, FAN_OUT)[0]:
            path = keys.path_of(dst) if kind == "derived-from" else None
            if path and path not in ranked and path not in out:
                out[path] = Hit(
                    keys.file_key(path),
                    "file",
                    path,
                    path.rpartition("/")[2],
                    1,
                    round(hit.score * step, 4),
                    f"noted in {hit.key}",
                    "WARM",
                )
    return list(out.values())


def _expand(graph: GraphReader, candidates: list[Hit], match: Match, limit: int) -> list[Hit]:
    """The first `limit` hits: each file hit becomes its best matching nodes (symbols,
    sections: at most `TOP_PER_FILE`, the file itself when none matched), at the file's
    score and layer."""
    hits: list[Hit] = []
    for hit in candidates:
        if len(hits) >= limit:
            break
        if hit.kind != "file":
            hits.append(hit)
            continue
        shown = 0
        for _, key in match.top(hit.path):
            node = graph.get(key)
            if node is None:
                continue
            terms = match.terms_of(node)
            why = "matches " + ", ".join(terms) if terms else hit.why
            hits.append(
                Hit(
                    node.key, node.kind, node.path, node.label, node.line, hit.score, why, hit.layer
                )
            )
            shown += 1
        if not shown:
            hits.append(hit)
    return hits


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 2)
