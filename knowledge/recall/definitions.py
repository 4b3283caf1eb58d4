"""The definitions a request most likely changes, within its best files.

A file ranking says where to look; an agent then reads the function to change. Within the
best `FILES` files, each definition (function, method, class, type; not a constant) scores

    file * (NAMES * names + BODY * body / best body + IDENT * named)

- names: its label match (`lexical.Match.scores_in`: name, qualifier, signature, first doc line);
- body: BM25 of the request's `TERMS` heaviest words (each with the words it starts:
  "refund" finds "refunded") in its own lines: its range less its nested definitions', as
  the definition a change touches is the innermost one around it (a class's own lines are
  its fields and signature);
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

FILES = 12  # the best files whose definitions are ranked
SHOWN = 30  # definitions a recall returns (the block shows as many as fit)
TERMS = 12  # the request's heaviest words searched in the files' text
NAMES = 1.0
BODY = 2.0
IDENT = 1.0
FILE_POWER = 2.0
K1, B = 1.2, 0.5
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
# Per term, the files' lines holding it and the count on each (`ContentIndex.line_counts`).
CountsOf = Callable[[list[str], list[str]], LineCounts]


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
    searched = [t for t in sorted(weights, key=lambda t: -weights[t]) if len(t) > 2][:TERMS]
    named = set(mentioned)
    chosen = files[:FILES]
    priors = np.array([max(score, 0.0) ** FILE_POWER for _, score in chosen])
    nodes: list[Node] = []
    which: list[int] = []  # each node's file, by its place in `chosen`
    own: list[float] = []
    for i, (path, _) in enumerate(chosen):
        prior = float(priors[i])
        labels = match.scores_in(path)
        for node in nodes_of(path):
            if node.kind != "symbol" or node.subkind in NOT_DEFINITIONS:
                continue
            if not node.end_line >= node.line > 0:
                continue
            short = node.label.rsplit(".", 1)[-1].lower()
            nodes.append(node)
            which.append(i)
            own.append(prior * (NAMES * labels.get(node.key, 0.0) + IDENT * (short in named)))
    if not nodes:
        return []
    files_of = np.array(which, np.int64)
    counts = counts_of([path for path, _ in chosen], searched)
    bodies = priors[files_of] * _bodies(nodes, files_of, counts, weights)
    total = np.array(own) + BODY * bodies / (float(bodies.max()) or 1.0)
    # The best `SHOWN` and any tied with the last of them, then in order (ties by key).
    bar = -np.partition(-total, SHOWN - 1)[SHOWN - 1] if len(total) > SHOWN else -np.inf
    ranked = sorted(
        ((float(total[i]), nodes[i]) for i in np.flatnonzero(total >= bar).tolist()),
        key=lambda sn: (-sn[0], sn[1].key),
    )[:SHOWN]
    top = ranked[0][0] or 1.0
    return [
        Definition(n.key, n.path, n.label, n.line, n.end_line, round(s / top, 4))
        for s, n in ranked
        if s > 0
    ]


def _bodies(
    nodes: list[Node], files: np.ndarray, counts: LineCounts, weights: dict[str, float]
) -> np.ndarray:
    """BM25 of each node's own lines (its range less its nested definitions': a class's
    words are its fields' and signature's, its methods' words are theirs) for the weighted
    terms; the average length is its file's (`files`: each node's file, as `counts` numbers
    them)."""
    # Lines numbered as `line_counts` numbers them: no range then spans two files.
    first = np.array([n.line for n in nodes], np.int64) + (files << 32)
    last = np.array([n.end_line for n in nodes], np.int64) + (files << 32)
    inner = _children(first, last)
    length = (last - first + 1).astype(np.float64)
    np.subtract.at(length, inner[:, 0], length[inner[:, 1]])
    length = np.maximum(length, 1.0)
    mean = np.bincount(files, weights=length) / np.maximum(np.bincount(files), 1)
    norm = K1 * (1.0 - B + B * length / np.maximum(mean[files], 1.0))
    score = np.zeros(len(nodes))
    for term, (lines, found) in counts.items():
        weight = weights.get(term)
        if not weight:
            continue
        total = np.concatenate(([0.0], np.cumsum(found)))
        tf = total[np.searchsorted(lines, last, "right")] - total[np.searchsorted(lines, first)]
        np.subtract.at(tf, inner[:, 0], tf[inner[:, 1]])
        tf = np.maximum(tf, 0.0)
        score += weight * tf * (K1 + 1.0) / (tf + norm)
    return score


def _children(first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """(parent, child) index pairs: each node with the nearest node around it."""
    order = np.lexsort((-last, first)).tolist()
    starts, ends = first.tolist(), last.tolist()
    open_: list[int] = []
    pairs = []
    for i in order:
        while open_ and ends[open_[-1]] < starts[i]:
            open_.pop()
        if open_ and ends[i] <= ends[open_[-1]]:
            pairs.append((open_[-1], i))
        open_.append(i)
    return np.array(pairs, np.int64).reshape(-1, 2)
