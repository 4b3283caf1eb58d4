"""The definitions a request most likely changes, within its best files.

A file ranking says where to look; an agent then reads the function to change. Within the
best `FILES` files, each definition (function, method, class, type; not a constant) scores

    file * (NAMES * names + BODY * body / best body + IDENT * named)

- names: its label match (`lexical.Match.scores_in`: name, qualifier, signature, first doc line);
- body: BM25 of the request's `TERMS` heaviest words (each with the words it starts:
  "refund" finds "refunded") in its own lines, so a short function full of the request's
  words beats the class around it;
- named: the request spells out its name (`tokens.mentioned_identifiers`);
- file: the file's ranking score (in [0, 1], the best file 1), to the power `FILE_POWER`.

Reads no file: the content index keeps which lines of each passage hold each word
(`ContentIndex.line_counts`), so the body score is a lookup in its postings; the rest is
arithmetic over the graph's line ranges.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from knowledge.core.graph import Node
from knowledge.recall.content import LineCounts
from knowledge.recall.lexical import Match

FILES = 3  # the best files whose definitions are ranked
SHOWN = 12  # definitions a recall returns (the block shows as many as fit)
TERMS = 12  # the request's heaviest words searched in the files' text
NAMES = 1.0
BODY = 1.0
IDENT = 1.0
FILE_POWER = 2.0
K1, B = 1.2, 0.75
NOT_DEFINITIONS = frozenset({"const", "var", "field", "property"})


@dataclass(frozen=True, slots=True)
class Definition:
    key: str
    path: str
    label: str
    line: int
    end_line: int
    score: float  # in [0, 1], the best definition of the request 1

    def as_json(self) -> dict[str, str | int | float]:
        """As `theus recall --json` shows it."""
        return {
            "key": self.key,
            "path": self.path,
            "name": self.label,
            "line": self.line,
            "end_line": self.end_line,
            "score": self.score,
        }


# The owned nodes of a path (the graph's, or the store's).
NodesOf = Callable[[str], list[Node]]
# Per path, per term: the file's lines holding it and the count on each (`content`).
CountsOf = Callable[[list[str], list[str]], dict[str, LineCounts]]


def rank_definitions(
    files: list[tuple[str, float]],
    nodes_of: NodesOf,
    counts_of: CountsOf,
    match: Match,
    weights: dict[str, float],
    mentioned: list[str],
) -> list[Definition]:
    """The best `SHOWN` definitions of the best `FILES` of `files` ((path, score), best
    first); `weights`: the request's terms with their weights times IDF."""
    scored: list[tuple[float, Node]] = []
    bodies: list[float] = []
    searched = [t for t in sorted(weights, key=lambda t: -weights[t]) if len(t) > 2][:TERMS]
    named = set(mentioned)
    counts = counts_of([path for path, _ in files[:FILES]], searched)
    for path, file_score in files[:FILES]:
        nodes = [
            n
            for n in nodes_of(path)
            if n.kind == "symbol" and n.subkind not in NOT_DEFINITIONS and n.end_line >= n.line > 0
        ]
        if not nodes:
            continue
        body = _bodies(nodes, counts.get(path, {}), weights)
        prior = max(file_score, 0.0) ** FILE_POWER
        labels = match.scores_in(path)
        for node, b in zip(nodes, body.tolist(), strict=True):
            short = node.label.rsplit(".", 1)[-1].lower()
            own = NAMES * labels.get(node.key, 0.0) + IDENT * (short in named)
            scored.append((prior * own, node))
            bodies.append(prior * b)
    if not scored:
        return []
    best_body = max(bodies) or 1.0
    ranked = sorted(
        ((s + BODY * b / best_body, node) for (s, node), b in zip(scored, bodies, strict=True)),
        key=lambda sn: (-sn[0], sn[1].key),
    )[:SHOWN]
    top = ranked[0][0] or 1.0
    return [
        Definition(n.key, n.path, n.label, n.line, n.end_line, round(s / top, 4))
        for s, n in ranked
        if s > 0
    ]


def _bodies(nodes: list[Node], counts: LineCounts, weights: dict[str, float]) -> np.ndarray:
    """BM25 of each node's lines for the weighted terms."""
    first = np.array([n.line for n in nodes], np.int64)
    last = np.array([n.end_line for n in nodes], np.int64)
    length = (last - first + 1).astype(np.float64)
    norm = K1 * (1.0 - B + B * length / max(1.0, float(length.mean())))
    score = np.zeros(len(nodes))
    for term, (lines, found) in counts.items():
        weight = weights.get(term)
        if not weight:
            continue
        total = np.concatenate(([0.0], np.cumsum(found)))
        tf = total[np.searchsorted(lines, last, "right")] - total[np.searchsorted(lines, first)]
        score += weight * tf * (K1 + 1.0) / (tf + norm)
    return score
