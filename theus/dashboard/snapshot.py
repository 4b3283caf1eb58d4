"""A read-only copy of the graph for serving, taken under ``graph.lock`` and nothing more.

Only the rustworkx bulk accessors run under the lock (a few milliseconds at 100,000 nodes);
everything derived — adjacency, importance, folders, layout — is built outside it, so the
dashboard never holds up indexing. Snapshots are memoized on ``graph.version``.
"""

from __future__ import annotations

import gc
import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import rustworkx as rx

from knowledge.core.graph import Graph, Node
from theus.dashboard.layout import layout

# Nodes that no file produced live in pseudo-folders, so the folder filter can still reach them.
BUSY_WAIT = 0.25  # seconds to wait for a busy graph lock before serving the previous snapshot

PSEUDO_FOLDERS = {"memory": "(memory)", "episode": "(episodes)", "entity": "(entities)"}


@dataclass(slots=True)
class Snapshot:
    version: int
    nodes: list[Node]  # a node's id in every API answer is its position here
    index: dict[str, int]
    src: list[int]
    dst: list[int]
    kinds: list[str]  # edge kind per edge
    adjacency: list[list[int]]  # edge ids touching each node (both directions)
    importance: list[float]  # 0..1, pagerank blended with degree
    order: list[int]  # node ids, most important first: the default paging order
    folder: list[str]  # folder of each node ("" at the root)
    x: list[float] = field(default_factory=list)
    y: list[float] = field(default_factory=list)
    built_ms: float = 0.0
    memo: dict[object, object] = field(default_factory=dict)  # per-query results, see api.py

    def degree(self, node_id: int) -> int:
        return len(self.adjacency[node_id])


def folder_of(node: Node) -> str:
    if not node.path:
        return PSEUDO_FOLDERS.get(node.kind, f"({node.kind})")
    return node.path.rpartition("/")[0]


def take(graph: Graph, wait: float = -1) -> Snapshot | None:
    """Copy the graph under its lock, then derive everything else outside it.

    With ``wait`` >= 0, give up (None) when the lock stays busy that long: a writer holding it
    for a whole batch must not stall a request that can be answered from an older snapshot.
    """
    started = time.perf_counter()
    if not graph.lock.acquire(timeout=wait):
        return None
    try:
        version = graph.version
        g = graph.rx
        indices = list(g.node_indices())
        nodes = list(g.nodes())
        edge_list = list(g.weighted_edge_list())
    finally:
        graph.lock.release()
    # Hundreds of thousands of fresh containers would trigger repeated full collections that
    # walk every Node in the process (2.4 s instead of 1.1 s at 100,000 nodes); nothing built
    # here forms a cycle, so collection can wait until the build is done.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _derive(version, indices, nodes, edge_list, started)
    finally:
        if collecting:
            gc.enable()


def _derive(
    version: int,
    indices: list[int],
    nodes: list[Node],
    edge_list: list[tuple[int, int, str]],
    started: float,
) -> Snapshot:
    position = {idx: pos for pos, idx in enumerate(indices)}
    index = {node.key: pos for pos, node in enumerate(nodes)}
    src = [position[a] for a, _, _ in edge_list]
    dst = [position[b] for _, b, _ in edge_list]
    kinds = [k for _, _, k in edge_list]
    adjacency: list[list[int]] = [[] for _ in nodes]
    for eid, (a, b) in enumerate(zip(src, dst, strict=True)):
        adjacency[a].append(eid)
        adjacency[b].append(eid)
    importance = _importance(len(nodes), src, dst, adjacency)
    order = sorted(range(len(nodes)), key=lambda i: (-importance[i], nodes[i].key))
    snap = Snapshot(
        version=version,
        nodes=nodes,
        index=index,
        src=src,
        dst=dst,
        kinds=kinds,
        adjacency=adjacency,
        importance=importance,
        order=order,
        folder=[folder_of(n) for n in nodes],
    )
    snap.x, snap.y = layout(snap.nodes, snap.folder, _contains_parent(snap))
    snap.built_ms = (time.perf_counter() - started) * 1000
    return snap


def _importance(n: int, src: list[int], dst: list[int], adjacency: list[list[int]]) -> list[float]:
    """Pagerank (who is imported, referenced, defined into) blended with log degree."""
    if n == 0:
        return []
    g = rx.PyDiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from_no_data(list(zip(src, dst, strict=True)))
    rank = rx.pagerank(g, max_iter=50, tol=1e-5)
    top_rank = max(rank.values()) or 1.0
    top_deg = math.log1p(max(len(a) for a in adjacency)) or 1.0
    return [
        round(0.5 * rank[i] / top_rank + 0.5 * math.log1p(len(adjacency[i])) / top_deg, 4)
        for i in range(n)
    ]


def _contains_parent(snap: Snapshot) -> list[int]:
    """The enclosing symbol of each node in the same file (-1: its file holds it directly)."""
    parent = [-1] * len(snap.nodes)
    nodes = snap.nodes
    for a, b, kind in zip(snap.src, snap.dst, snap.kinds, strict=True):
        same_file = nodes[a].path == nodes[b].path and nodes[a].kind != "file"
        # A malformed cycle of `contains` edges must not hang the layout.
        if kind == "contains" and same_file and not _is_ancestor(parent, b, a):
            parent[b] = a
    return parent


def _is_ancestor(parent: list[int], candidate: int, node: int) -> bool:
    while node >= 0:
        if node == candidate:
            return True
        node = parent[node]
    return False


class SnapshotCache:
    """The latest snapshots by version: one build at a time; recent ones kept so paging
    with a cursor stays consistent while the graph moves on."""

    def __init__(self, keep: int = 3) -> None:
        self._keep = keep
        self._by_version: OrderedDict[int, Snapshot] = OrderedDict()
        self._build = threading.Lock()
        self._graph: Graph | None = None

    def current(self, graph: Graph) -> Snapshot:
        """The snapshot of the graph as it is now, or the latest one if a writer holds the
        graph's lock for longer than ``BUSY_WAIT`` (a re-index in progress)."""
        if graph is not self._graph:  # the host swapped graphs: versions start over
            with self._build:
                self._by_version.clear()
                self._graph = graph
        snap = self._by_version.get(graph.version)
        if snap is not None:
            return snap
        with self._build:
            snap = self._by_version.get(graph.version)
            if snap is not None:
                return snap
            latest = next(reversed(self._by_version.values()), None)
            snap = take(graph, wait=BUSY_WAIT if latest is not None else -1)
            if snap is None:
                assert latest is not None
                return latest
            self._by_version[snap.version] = snap
            while len(self._by_version) > self._keep:
                self._by_version.popitem(last=False)
            return snap

    def at(self, version: int) -> Snapshot | None:
        return self._by_version.get(version)
