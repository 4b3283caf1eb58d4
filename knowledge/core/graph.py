"""The knowledge graph: a rustworkx PyDiGraph addressed by stable string keys.

rustworkx reuses integer indices after removal, so nothing outside this module ever sees one.
Every node has an *owner*: the repo-relative path of the file it was extracted from, or its own
key for nodes that no file produced (memories, episodes, entities). Replacing an owner swaps
exactly its nodes and the edges leaving them; the store persists per owner too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import rustworkx as rx

NODE_KINDS = ("file", "symbol", "section", "table", "column", "memory", "episode", "entity")
EDGE_KINDS = ("contains", "defines", "imports", "references", "derived-from")


def first_edges(edges: Iterable[tuple[str, str]], limit: int) -> list[tuple[str, str]]:
    """The first `limit` of a node's edges as (other end, kind), in one order whichever
    graph holds them: the store and the loaded graph keep edges in different orders (a full
    index even adds them in a different order each run), and a traversal must reach the same
    nodes from both."""
    return sorted(edges)[:limit]


@dataclass(slots=True)
class Node:
    key: str
    kind: str
    label: str
    path: str = ""
    line: int = 0
    end_line: int = 0
    summary: str = ""
    subkind: str = ""
    signature: str = ""
    layer: str = "PERSONAL"
    source: str = "index"
    status: str = "ok"
    facts: list[dict[str, Any]] = field(default_factory=list)
    valid_from: float | None = None
    valid_to: float | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Edge:
    src: str
    dst: str
    kind: str


# What the facts layer keeps on a node beside the index's fields: a re-index of its file
# replaces the code's part and keeps these (`Graph.replace_owner`).
RELATION_EDGE = "rel:"  # the kind prefix of an edge a conversation stated: "rel:USES_TECHNOLOGY"
CONVERSATION_DATA = (
    "relations",
    "heat",
    "mentioned_at",
    "aliases",
    "seq",
    "pending_fields",
    "confidence",
)


def _keep_conversation(fresh: Node, old: Node) -> Node:
    told = {k: old.data[k] for k in CONVERSATION_DATA if k in old.data}
    if not (old.facts or told):
        return fresh
    fresh.facts = old.facts
    fresh.data = {**fresh.data, **told}
    return fresh


class GraphReader(Protocol):
    """What reading a graph needs (recall, the block, traversal): the loaded `Graph`, or
    `store.StoreGraph`, which reads node by node from the store for a one-shot command."""

    lock: threading.RLock
    version: int

    def get(self, key: str) -> Node | None: ...

    def owned_nodes(self, owner: str) -> list[Node]: ...

    def out_edges(self, key: str, kind: str | None = None) -> list[Edge]: ...

    def in_edges(self, key: str, kind: str | None = None) -> list[Edge]: ...

    def neighbours(
        self, key: str, limit: int
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]], int]: ...


class Graph:
    """Mutations bump ``version``; derived structures memoize on it."""

    def __init__(self) -> None:
        self._g: rx.PyDiGraph = rx.PyDiGraph(multigraph=True)
        self._index: dict[str, int] = {}
        self._owned: dict[str, set[str]] = {}
        self._owner_of: dict[str, str] = {}
        self._by_kind: dict[str, set[str]] = {}
        self.version = 0
        self.dirty_owners: set[str] = set()
        # None: every owner is here whole. Otherwise the owners read whole (`load` with
        # `whole`); the other nodes are ends of their edges, without edges of their own, and
        # the store must never save their owners from this graph (`Store.save` refuses).
        self.whole: set[str] | None = None
        self.lock = threading.RLock()
        # key -> (limit, `neighbours`): ordering a hub's edges costs ten times reading them.
        # Every change to a node's edges forgets it (`_forget`).
        self._first: dict[
            str, tuple[int, tuple[list[tuple[str, str]], list[tuple[str, str]], int]]
        ] = {}

    # -- reading -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def get(self, key: str) -> Node | None:
        idx = self._index.get(key)
        return None if idx is None else self._g[idx]

    def nodes(self, kind: str | None = None) -> Iterator[Node]:
        if kind is None:
            yield from list(self._g.nodes())
            return
        g, index = self._g, self._index
        for key in list(self._by_kind.get(kind, ())):
            idx = index.get(key)
            if idx is not None:
                yield g[idx]

    def keys(self) -> list[str]:
        return list(self._index)

    def owners(self) -> list[str]:
        return list(self._owned)

    def owned(self, owner: str) -> set[str]:
        return set(self._owned.get(owner, ()))

    def owned_nodes(self, owner: str) -> list[Node]:
        g, index = self._g, self._index
        return [g[index[k]] for k in sorted(self._owned.get(owner, ()))]

    def out_edge_rows(self, key: str, owner: str) -> list[tuple[str, str, str, str]]:
        """(src, dst, kind, owner) rows for the store, without building Edge objects."""
        g = self._g
        return [(key, g[b].key, k, owner) for _, b, k in g.out_edges(self._index[key])]

    def owner_of(self, key: str) -> str | None:
        return self._owner_of.get(key)

    def edge_count(self) -> int:
        return self._g.num_edges()

    def edges(self) -> Iterator[Edge]:
        g = self._g
        for a, b, kind in g.weighted_edge_list():
            yield Edge(g[a].key, g[b].key, kind)

    def out_edges(self, key: str, kind: str | None = None) -> list[Edge]:
        idx = self._index.get(key)
        if idx is None:
            return []
        g = self._g
        return [Edge(key, g[b].key, k) for _, b, k in g.out_edges(idx) if kind is None or k == kind]

    def in_edges(self, key: str, kind: str | None = None) -> list[Edge]:
        idx = self._index.get(key)
        if idx is None:
            return []
        g = self._g
        return [Edge(g[a].key, key, k) for a, _, k in g.in_edges(idx) if kind is None or k == kind]

    def neighbours(
        self, key: str, limit: int
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]], int]:
        """(first `limit` out-edges as (dst, kind), first `limit` in-edges as (src, kind),
        the node's degree): what a traversal step reads, in `first_edges` order. The lists
        are kept until the node's edges change: read them, never change them."""
        with self.lock:
            known = self._first.get(key)
            if known is not None and known[0] == limit:
                return known[1]
            idx = self._index.get(key)
            if idx is None:
                return [], [], 0
            g = self._g
            found = (
                first_edges([(g[b].key, k) for _, b, k in g.out_edges(idx)], limit),
                first_edges([(g[a].key, k) for a, _, k in g.in_edges(idx)], limit),
                g.in_degree(idx) + g.out_degree(idx),
            )
            self._first[key] = (limit, found)
            return found

    def degree(self, key: str) -> int:
        idx = self._index.get(key)
        return 0 if idx is None else self._g.in_degree(idx) + self._g.out_degree(idx)

    def counts(self) -> dict[str, int]:
        out = {kind: len(keys) for kind, keys in self._by_kind.items() if keys}
        out["edges"] = self._g.num_edges()
        return out

    @property
    def rx(self) -> rx.PyDiGraph:
        """The underlying graph for read-only algorithms (layouts, centrality)."""
        return self._g

    def index_of(self, key: str) -> int | None:
        return self._index.get(key)

    # -- writing -----------------------------------------------------------------------------
    def upsert(self, node: Node, owner: str | None = None) -> None:
        """Insert or replace a node's payload, keeping its edges."""
        owner = owner if owner is not None else node.key
        with self.lock:
            idx = self._index.get(node.key)
            if idx is None:
                self._index[node.key] = self._g.add_node(node)
            else:
                previous_kind = self._g[idx].kind
                if previous_kind != node.kind:
                    self._by_kind[previous_kind].discard(node.key)
                self._g[idx] = node
                previous = self._owner_of.get(node.key)
                if previous is not None and previous != owner:
                    self._owned[previous].discard(node.key)
                    self.dirty_owners.add(previous)
            self._by_kind.setdefault(node.kind, set()).add(node.key)
            self._owned.setdefault(owner, set()).add(node.key)
            self._owner_of[node.key] = owner
            self._touch(owner)

    def add_edge(self, src: str, dst: str, kind: str) -> bool:
        """Add an edge once; an edge to or from an unknown key is ignored (returns False)."""
        return self.add_edges([(src, dst, kind)]) == 1

    def add_edges(self, edges: Iterable[tuple[str, str, str]]) -> int:
        """`add_edge` of each (src, dst, kind), under one lock (a file's edges: a cold index
        adds 140k); returns how many were added."""
        added = 0
        with self.lock:
            g, index = self._g, self._index
            for src, dst, kind in edges:
                a, b = index.get(src), index.get(dst)
                if a is None or b is None or a == b:
                    continue
                if g.has_edge(a, b) and kind in g.get_all_edge_data(a, b):
                    continue
                g.add_edge(a, b, kind)
                self._forget(src, dst)
                self.dirty_owners.add(self._owner_of[src])  # `_touch`, the version bumped once
                added += 1
            if added:
                self.version += 1
        return added

    def remove_node(self, key: str) -> None:
        with self.lock:
            idx = self._index.pop(key, None)
            if idx is None:
                return
            # Edges arriving here belong to other owners: their stored rows must go too.
            for a, _, _ in self._g.in_edges(idx):
                self.dirty_owners.add(self._owner_of[self._g[a].key])
            self._forget(key, *(self._g[n].key for n in self._g.neighbors_undirected(idx)))
            self._by_kind[self._g[idx].kind].discard(key)
            self._g.remove_node(idx)
            owner = self._owner_of.pop(key)
            keys = self._owned.get(owner)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._owned[owner]
            self._touch(owner)

    def remove_out_edges(self, key: str, kinds: Iterable[str] | None = None) -> None:
        with self.lock:
            idx = self._index.get(key)
            if idx is None:
                return
            wanted = None if kinds is None else set(kinds)
            for eid in list(self._g.out_edge_indices(idx)):
                if wanted is None or self._g.get_edge_data_by_index(eid) in wanted:
                    self._forget(self._g[self._g.get_edge_endpoints_by_index(eid)[1]].key)
                    self._g.remove_edge_from_index(eid)
            self._forget(key)
            self._touch(self._owner_of[key])

    def replace_owner(self, owner: str, nodes: Iterable[Node], edges: Iterable[Edge]) -> None:
        """Make ``owner`` own exactly ``nodes``; rebuild the edges leaving them.

        Nodes that survive keep their index, so edges from other owners into them stay, and
        what a conversation attached to them (facts, relations, heat: `knowledge.facts`) is
        kept, the code's own fields replaced. Edges whose far end does not exist are dropped.
        """
        with self.lock:
            fresh = {n.key: n for n in nodes}
            told: list[Edge] = []  # what a conversation related the surviving nodes to
            if owner in self._owned or not self._index.keys().isdisjoint(fresh):
                for key in self.owned(owner) - fresh.keys():
                    self.remove_node(key)
                for node in fresh.values():
                    old = self.get(node.key)
                    if old is not None:
                        node = _keep_conversation(node, old)
                        told += [
                            e for e in self.out_edges(node.key) if e.kind.startswith(RELATION_EDGE)
                        ]
                    self.upsert(node, owner)
                    if old is not None:
                        self.remove_out_edges(node.key)
            else:  # a new file (every file of a cold index): its nodes at once
                self._insert([(node, owner) for node in fresh.values()])
            self.add_edges([(e.src, e.dst, e.kind) for e in [*edges, *told]])
            self._touch(owner)

    def remove_owner(self, owner: str) -> None:
        with self.lock:
            for key in self.owned(owner):
                self.remove_node(key)
            self._touch(owner)

    def load(
        self,
        nodes: Iterable[tuple[Node, str]],
        edges: Iterable[tuple[str, str, str]],
        whole: Iterable[str] | None = None,
    ) -> None:
        """Bulk-fill from the store; nothing becomes dirty. With `whole`, the graph holds only
        those owners whole (their nodes and the edges leaving them, in the store's order) and
        the nodes at the far end of those edges; it may be called again for more owners. A
        node already here is kept as it is."""
        with self.lock:
            index = self._index
            self._insert([(n, o) for n, o in nodes if n.key not in index])
            if whole is not None:
                self.whole = {*(self.whole or ()), *whole}
            self._first.clear()  # the nodes here may have gained edges
            self._g.add_edges_from(
                [
                    (index[src], index[dst], kind)
                    for src, dst, kind in edges
                    if src in index and dst in index
                ]
            )
            self.version += 1

    def _insert(self, pairs: list[tuple[Node, str]]) -> None:
        """Add nodes (node, owner) none of whose keys is here, in one call."""
        index = self._index
        indices = self._g.add_nodes_from([n for n, _ in pairs])
        for (node, owner), idx in zip(pairs, indices, strict=True):
            index[node.key] = idx
            self._by_kind.setdefault(node.kind, set()).add(node.key)
            self._owned.setdefault(owner, set()).add(node.key)
            self._owner_of[node.key] = owner

    def take_dirty(self) -> set[str]:
        """The owners changed since the last call, for an incremental save."""
        with self.lock:
            dirty, self.dirty_owners = self.dirty_owners, set()
            return dirty

    def _touch(self, owner: str) -> None:
        self.version += 1
        self.dirty_owners.add(owner)

    def _forget(self, *keys: str) -> None:
        for key in keys:
            self._first.pop(key, None)
