"""Fuse the signals into one ranked list of scored candidates (all scores in [0, 1]).

1. Per file: its labels' coverage of the request (the union of its nodes' matched terms) and
   its content's BM25, combined by noisy-OR. Per node: 0.4 of its own label match, 0.6 of its
   file's score, so a symbol in a file that covers the request outranks an isolated name match.
   Tests and changelogs count 0.6 (1.0 when the request is about tests): they repeat the
   words of the code they are about.
2. Hash embedding: ``0.8 * lexical + 0.2 * cosine``, only for nodes with lexical signal.
3. Traversal from the top candidates (HOT): neighbours become WARM (1 hop) or COLD (2 hops);
   a lexical candidate that is also a neighbour gets a small structural bonus.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from functools import lru_cache

from knowledge import keys
from knowledge.graph import Graph, Node
from knowledge.recall.hashvec import HASH_WEIGHT, Vector, cosines, embed
from knowledge.recall.lexical import Match
from knowledge.recall.traverse import spread

NODE_SHARE = 0.4  # of a candidate's lexical score from the node itself; the rest from its file
# Tests repeat the words of the code they test, and changelogs mention every feature; the code
# itself is what a request is about, unless the request is about tests. 0.6 beat 0.8 on the
# recall benchmark's tuning and held-out repositories alike (bench/recall.py).
TEST_FACTOR = 0.6
_ABOUT_TESTS = re.compile(r"\b(tests?|testing|spec|specs|pytest|unittest|fixtures?)\b",
                          re.IGNORECASE)
_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|e2e)/|(^|/)test_[^/]*$|[._-](test|spec)[.-][^/]*$|_test\.go$"
    r"|(^|/)(changelog|changes|history|news)([-_][^/]*)?(\.(md|rst|txt))?$",
    re.IGNORECASE,
)
POOL = 150  # lexical candidates kept for the hash tie-break and traversal
MAX_CACHED = 50_000  # hash vectors kept (1 KiB each)
SEEDS = 8
SEED_FLOOR = 0.5  # a seed scores at least this share of the best
SUPPORT = 0.25  # bonus share of a traversal score for a node that is also a lexical match


@dataclass(slots=True)
class Scored:
    key: str
    score: float
    layer: str
    why: str


@lru_cache(maxsize=65536)
def is_test(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def file_scores(match: Match, content: dict[str, float]) -> dict[str, float]:
    """Per file: its labels' coverage of the request combined with its content's."""
    paths = match.files.keys() | content.keys()
    # Noisy-OR: either signal alone counts, both together count more; stays in [0, 1].
    return {
        p: 1.0 - (1.0 - match.files.get(p, 0.0)) * (1.0 - content.get(p, 0.0)) for p in paths
    }


def weight_of_tests(query: str) -> float:
    """How much tests and changelogs count for this request."""
    return 1.0 if _ABOUT_TESTS.search(query) else TEST_FACTOR


def lexical_scores(
    graph: Graph, match: Match, content: dict[str, float], factor: float = TEST_FACTOR
) -> dict[str, float]:
    """Node score: its own label match blended with its file's score."""
    files = file_scores(match, content)
    paths = match.paths
    out: dict[str, float] = {}
    for key, own in match.nodes.items():
        path = paths.get(key, "")
        file_score = files.get(path, own) if path else own
        score = NODE_SHARE * own + (1.0 - NODE_SHARE) * max(file_score, own)
        out[key] = score * factor if path and is_test(path) else score
    for path, score in files.items():
        key = keys.file_key(path)
        if key not in out and key in graph:  # found by its content alone
            score *= 1.0 - NODE_SHARE
            out[key] = score * factor if is_test(path) else score
    return out


class HashCache:
    """Hash vectors of node text, kept per node object (a changed node is a new object)."""

    def __init__(self) -> None:
        self._vecs: dict[str, tuple[Node, Vector]] = {}

    def vector(self, node: Node) -> Vector:
        cached = self._vecs.get(node.key)
        if cached is not None and cached[0] is node:
            return cached[1]
        text = " ".join((node.path, node.label, node.signature, node.summary,
                         str(node.data.get("text", ""))[:1500]))
        vec = embed(text)
        if len(self._vecs) > MAX_CACHED:
            self._vecs.clear()
        self._vecs[node.key] = (node, vec)
        return vec


def fuse(
    graph: Graph, query: str, match: Match, hashes: HashCache, content: dict[str, float]
) -> list[Scored]:
    """Rank lexical candidates; `content` maps paths to their content score."""
    lexical = lexical_scores(graph, match, content, weight_of_tests(query))
    pool = heapq.nlargest(POOL, lexical.items(), key=lambda kv: kv[1])
    if not pool:
        return []
    nodes = [(n, lex) for key, lex in pool if (n := graph.get(key)) is not None]
    sims = cosines(embed(query), [hashes.vector(n) for n, _ in nodes])
    scored: dict[str, Scored] = {}
    for (node, lex), sim in zip(nodes, sims, strict=True):
        key = node.key
        terms = match.why.get(key)
        why = "matches " + ", ".join(terms) if terms else "words found in its text"
        scored[key] = Scored(key, (1 - HASH_WEIGHT) * lex + HASH_WEIGHT * sim, "WARM", why)
    ranked = sorted(scored.values(), key=lambda s: -s.score)
    best = ranked[0].score
    seeds = {s.key: s.score for s in ranked[:SEEDS] if s.score >= SEED_FLOOR * best}
    for key in seeds:
        scored[key].layer = "HOT"
    floor = min(seeds.values())
    for key, reached in spread(graph, seeds).items():
        known = scored.get(key)
        if known is not None:
            known.score = min(1.0, known.score + SUPPORT * reached.score)
            known.why += f"; {reached.via}"
            if known.score >= floor:  # a keyword match lifted by its neighbours joins HOT
                known.layer = "HOT"
        else:
            layer = "WARM" if reached.hop == 1 else "COLD"
            scored[key] = Scored(key, reached.score, layer, reached.via)
    return sorted(scored.values(), key=lambda s: (-s.score, s.key))
