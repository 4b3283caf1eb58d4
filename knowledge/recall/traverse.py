"""Spread relevance from the lexical seeds along the graph's edges (Acervo's BFS layers).

Hop 0 is the seeds (HOT), hop 1 WARM, hop 2 COLD. A neighbour's score is its source's score
times the edge kind's weight times the per-hop decay; edges are followed both ways (a file that
imports the seed matters, and so does the file the seed imports), the reverse direction a bit
less. Hubs (a module imported everywhere) would drag in half the repository, so only the first
`FAN_OUT` neighbours of a node are followed, a hub's own pull is damped by its degree, and
each hop spreads from its `FRONTIER` best nodes only.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from operator import itemgetter

from knowledge.core.graph import GraphReader

EDGE_WEIGHTS = {
    "derived-from": 0.9,  # a memory and the code it is about
    "defines": 0.7,
    "contains": 0.7,
    "imports": 0.6,
    "references": 0.5,
}
# How a reached node relates to the node it was reached from: (forward, reverse) edge.
_VERBS = {
    "derived-from": ("noted in", "about"),
    "defines": ("defined in", "defines"),
    "contains": ("in", "contains"),
    "imports": ("imported by", "imports"),
    "references": ("referenced by", "references"),
}
REVERSE_FACTOR = 0.8
DECAY = 0.6
FAN_OUT = 24
HUB_DEGREE = 40
FRONTIER = 32  # best nodes of a hop that the next hop spreads from


@dataclass(slots=True)
class Reached:
    score: float
    hop: int
    verb: str  # how it relates to the node it was reached from: "imported by"
    source: str  # that node's key

    @property
    def via(self) -> str:
        """The reason, "imported by file:a.py" style (built only for what is shown)."""
        return f"{self.verb} {self.source}"


def spread(graph: GraphReader, seeds: dict[str, float], hops: int = 2) -> dict[str, Reached]:
    """Nodes reached from `seeds` (key -> score) within `hops`, seeds excluded."""
    reached: dict[str, Reached] = {}
    frontier = dict(seeds)
    for hop in range(1, hops + 1):
        nxt: dict[str, float] = {}
        for key, score in frontier.items():
            out, into, degree = graph.neighbours(key, FAN_OUT)
            if not degree:
                continue
            base = score * DECAY * (1.0 if degree <= HUB_DEGREE else math.sqrt(HUB_DEGREE / degree))
            for edges, side in ((out, 0), (into, 1)):
                for target, kind in edges:
                    if target in seeds:
                        continue
                    step, verb = _STEPS.get((kind, side)) or _step(kind, side)
                    value = base * step
                    known = reached.get(target)
                    if known is not None and (known.hop < hop or value <= known.score):
                        continue
                    reached[target] = Reached(value, hop, verb, key)
                    if value > nxt.get(target, 0.0):
                        nxt[target] = value
        if hop < hops:
            frontier = dict(heapq.nlargest(FRONTIER, nxt.items(), key=itemgetter(1)))
    return reached


def _step(kind: str, side: int) -> tuple[float, str]:
    """(weight, verb) of stepping along an edge of `kind` forward (0) or backward (1)."""
    weight = EDGE_WEIGHTS.get(kind, 0.3) * (REVERSE_FACTOR if side else 1.0)
    return weight, _VERBS.get(kind, (kind, kind))[side]


_STEPS = {(kind, side): _step(kind, side) for kind in EDGE_WEIGHTS for side in (0, 1)}
