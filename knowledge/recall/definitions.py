"""The definitions a request most likely changes, within its best files.

A file ranking says where to look; an agent then reads the function to change. Within the
best `FILES` files, each definition (function, method, class, type; not a constant) scores

    file * (NAMES * names + BODY * body / best body + IDENT * named)

- names: its label match (`lexical.Match.scores_in`: name, qualifier, signature, first doc line);
- body: BM25 of the request's `TERMS` heaviest words in its own lines (the file's text,
  read once per call, words found at a word or camel-case start), so a short function full
  of the request's words beats the class around it;
- named: the request spells out its name (`tokens.mentioned_identifiers`);
- file: the file's ranking score (in [0, 1], the best file 1), to the power `FILE_POWER`.

Reads the chosen files' text (as `content` does); the rest is arithmetic over the graph's
line ranges.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from knowledge.core.graph import Node
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


# The owned nodes of a path (the graph's, or the store's), and a file's text (None: unread).
NodesOf = Callable[[str], list[Node]]
TextOf = Callable[[str], str | None]


def rank_definitions(
    files: list[tuple[str, float]],
    nodes_of: NodesOf,
    text_of: TextOf,
    match: Match,
    weights: dict[str, float],
    mentioned: list[str],
) -> list[Definition]:
    """The best `SHOWN` definitions of the best `FILES` of `files` ((path, score), best
    first); `weights`: the request's terms with their weights times IDF."""
    scored: list[tuple[float, Node]] = []
    bodies: list[float] = []
    searched = sorted(weights, key=lambda t: -weights[t])[:TERMS]
    pattern = _pattern(searched)
    named = set(mentioned)
    for path, file_score in files[:FILES]:
        nodes = [
            n
            for n in nodes_of(path)
            if n.kind == "symbol" and n.subkind not in NOT_DEFINITIONS and n.end_line >= n.line > 0
        ]
        if not nodes:
            continue
        text = text_of(path) if pattern is not None else None
        body = (
            _bodies(nodes, text, pattern, weights)
            if text and pattern is not None
            else np.zeros(len(nodes))
        )
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


def _pattern(terms: list[str]) -> re.Pattern[str] | None:
    """The terms, over lower-cased text (a plain alternation: a lookbehind made the search
    seven times slower; `_bodies` checks where each match starts)."""
    usable = sorted((t for t in terms if len(t) > 2), key=len, reverse=True)
    if not usable:
        return None
    return re.compile("|".join(re.escape(t) for t in usable))


def _bodies(
    nodes: list[Node], text: str, pattern: re.Pattern[str], weights: dict[str, float]
) -> np.ndarray:
    """BM25 of each node's lines (its range) for the weighted terms."""
    starts = np.fromiter(
        (m.start() for m in re.finditer("\n", text)), dtype=np.int64, count=text.count("\n")
    )
    found: dict[str, list[int]] = {}
    for m in pattern.finditer(text.lower()):
        at = m.start()
        # At a word start or a camel-case hump ("total" in getTotal, not in subtotal).
        if at == 0 or not text[at - 1].isalpha() or text[at].isupper():
            found.setdefault(m.group(), []).append(at)
    first = np.array([n.line for n in nodes], np.int64)
    last = np.array([n.end_line for n in nodes], np.int64)
    length = (last - first + 1).astype(np.float64)
    norm = K1 * (1.0 - B + B * length / max(1.0, float(length.mean())))
    score = np.zeros(len(nodes))
    for term, offsets in found.items():
        weight = weights.get(term)
        if not weight:
            continue
        lines = np.searchsorted(starts, np.array(offsets, np.int64)) + 1  # 1-based
        lines.sort()
        tf = (np.searchsorted(lines, last, "right") - np.searchsorted(lines, first, "left")).astype(
            np.float64
        )
        score += weight * tf * (K1 + 1.0) / (tf + norm)
    return score
