"""Which graph nodes changed since the last look, without consuming the store's dirty set.

`Graph.upsert` stores a new `Node` object for every change, so a changed node is a payload that
is not the object seen last time. The payload lists are aligned by position in C (rustworkx keeps
a node's slot, reuses freed slots and appends new ones, so an edit, a rename or an added symbol
differ in a few positions, and a removal shifts the rest by the freed run); when that fails,
by sets of object identities instead. Either way the cost is a few C-level passes over
the graph, never a Python loop over every node.

A cheap "owners changed since version V" in `Graph` would make this O(change); until then
this is the stand-in.
"""

from __future__ import annotations

import itertools
import operator

from knowledge.core.graph import Graph, Node

# Past this many differing positions, assume shifted slots and compare identities instead
# (a shift would otherwise re-index every node after it).
MAX_POSITIONAL = 2000


class NodeTracker:
    def __init__(self) -> None:
        self.version = -1
        self._payloads: list[Node] = []
        # The objects seen last time, by id(). Holding them keeps their ids from being reused.
        self._by_id: dict[int, Node] = {}
        self._ids: set[int] = set()

    def changes(self, graph: Graph) -> tuple[list[Node], list[Node]] | None:
        """(new or changed nodes, nodes no longer in the graph as such) since the last call, or
        None when the graph's version has not moved. Call with `graph.lock` held."""
        if graph.version == self.version:
            return None
        nodes = graph.rx.nodes()
        found = _aligned(nodes, self._payloads)
        if found is None:
            current = set(map(id, nodes))
            fresh = current - self._ids
            gone = [self._by_id[i] for i in self._ids - current]
            changed = list(itertools.compress(nodes, map(fresh.__contains__, map(id, nodes))))
        else:
            changed, gone = found
        for node in gone:
            del self._by_id[id(node)]
            self._ids.discard(id(node))
        for node in changed:
            self._by_id[id(node)] = node
            self._ids.add(id(node))
        self._payloads = nodes
        self.version = graph.version
        return changed, gone


def _aligned(nodes: list[Node], old: list[Node]) -> tuple[list[Node], list[Node]] | None:
    """The delta by position, or None when positions shifted too much to tell cheaply.

    Any alignment gives a correct delta (a node that merely moved is reported gone and
    changed); a good one gives a small delta. Tried: position by position (edits, renames and
    appended nodes), then, when nodes were removed, skipping one run of freed slots at the
    first difference (a file's nodes are created together, so their slots are adjacent).
    """
    flags = list(map(operator.is_not, nodes, old))  # map stops at the shorter list
    if flags.count(True) <= MAX_POSITIONAL:
        common = len(flags)
        return (
            [*itertools.compress(nodes, flags), *nodes[common:]],
            [*itertools.compress(old, flags), *old[common:]],
        )
    freed = len(old) - len(nodes)
    if freed <= 0:
        return None
    start = flags.index(True)
    tail = list(map(operator.is_not, nodes[start:], old[start + freed :]))
    if tail.count(True) > MAX_POSITIONAL:
        return None
    return (
        list(itertools.compress(nodes[start:], tail)),
        [*old[start : start + freed], *itertools.compress(old[start + freed :], tail)],
    )
