"""What the semantic layer embeds per node, and the pass that embeds what is missing.

One short text per node (see `embed_text`): names, signatures and first doc lines, not whole
bodies. Measured on real history (bench/recall_semantic.py), short texts cost about a quarter
of a body chunk to embed and the request's concepts live in names and doc lines anyway; the
content words are already covered by the lexical layer's BM25 over file contents.

The pass keeps `NodeVectors` (key -> vector, in memory) in step with the graph by node
identity, like the lexical index: `Graph.upsert` stores a fresh `Node` for every change, so a
node whose object we have not seen is new or changed. Its text is looked up in the persistent
`VectorCache` first; only the misses are embedded, most central nodes first, in batches.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from knowledge.embed.base import Embedder, EmbeddingError
from knowledge.embed.cache import VectorCache
from knowledge.graph import Graph, Node

Progress = Callable[[int, int], None]

BATCH = 32
MAX_CHARS = 600  # about 150 word pieces: the model's useful window for a short text
TEXT_CHARS = 1000  # memories and episodes: their text is all they have
TOP_SYMBOLS = 12  # symbol names listed in a file's text
# Columns are many and say little beyond their table's text.
EMBED_KINDS = frozenset({"file", "symbol", "section", "table", "memory", "episode", "entity"})
_TEXT_KINDS = frozenset({"memory", "episode", "entity"})


def embed_text(node: Node, graph: Graph) -> str | None:
    """The text embedded for `node`, or None when it is not embedded.

    Stable for an unchanged node (the cache is keyed by it). Words, not layout: the path's
    parts, the qualified name, signature and first doc line.
    """
    kind = node.kind
    if kind not in EMBED_KINDS or node.status != "ok":
        return None
    if kind in _TEXT_KINDS:
        text = str(node.data.get("text") or node.summary or node.label)
        return " ".join(text.split())[:TEXT_CHARS] or None
    if kind == "file":
        names = _top_symbols(node, graph)
        parts = [node.path, node.summary, ("defines " + ", ".join(names)) if names else ""]
    elif kind == "symbol":
        sig = node.signature if node.signature and node.label.split(".")[-1] in node.signature \
            else ""
        parts = [node.path, f"{node.subkind} {node.label}".strip(), sig, node.summary]
    else:  # section, table
        parts = [node.path, node.label, node.summary]
    text = " — ".join(" ".join(p.split()) for p in parts if p and p.strip())
    return text[:MAX_CHARS] or None


def _top_symbols(node: Node, graph: Graph) -> list[str]:
    """Names of the file's top-level symbols, in source order."""
    names: list[tuple[int, str]] = []
    for edge in graph.out_edges(node.key, "contains"):
        child = graph.get(edge.dst)
        if child is not None and child.kind == "symbol":
            names.append((child.line, child.label))
    names.sort()
    return [n for _, n in names[:TOP_SYMBOLS]]


@dataclass
class PassReport:
    seen: int = 0  # embeddable nodes looked at (new or changed since the last pass)
    cached: int = 0  # found in the vector cache
    embedded: int = 0  # computed by the model in this pass
    failed: int = 0  # texts whose batch failed (tried again on the next pass)
    cancelled: bool = False
    seconds: float = 0.0
    embed_seconds: float = 0.0  # time inside the embedder
    errors: list[str] = field(default_factory=list)


class NodeVectors:
    """Vectors of the graph's nodes by key, with the node object each was computed for.

    Thread-safe; `matrix()` stacks them for nearest-neighbour search and is memoized on a
    change counter, so the query path pays for the stacking only after the vectors moved.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._lock = threading.Lock()
        self._vecs: dict[str, tuple[Node, npt.NDArray[np.float32]]] = {}
        self._changes = 0
        self._memo: tuple[int, list[Node], npt.NDArray[np.float32]] | None = None

    def __len__(self) -> int:
        return len(self._vecs)

    def get(self, node: Node) -> npt.NDArray[np.float32] | None:
        entry = self._vecs.get(node.key)
        return entry[1] if entry is not None and entry[0] is node else None

    def has(self, node: Node) -> bool:
        entry = self._vecs.get(node.key)
        return entry is not None and entry[0] is node

    def put(self, nodes: list[Node], vectors: npt.NDArray[np.float32]) -> None:
        with self._lock:
            for node, vec in zip(nodes, vectors, strict=True):
                self._vecs[node.key] = (node, vec)
            self._changes += 1

    def retain(self, live: set[str]) -> None:
        """Forget the vectors of nodes that left the graph."""
        with self._lock:
            gone = [k for k in self._vecs if k not in live]
            for key in gone:
                del self._vecs[key]
            if gone:
                self._changes += 1

    def matrix(self) -> tuple[list[Node], npt.NDArray[np.float32]]:
        """(nodes, rows): every stored vector, one row per node (the object it was made for)."""
        with self._lock:
            if self._memo is not None and self._memo[0] == self._changes:
                return self._memo[1], self._memo[2]
            entries = list(self._vecs.values())
            nodes = [node for node, _ in entries]
            rows = (np.stack([vec for _, vec in entries]) if entries
                    else np.empty((0, self.dim), dtype=np.float32))
            self._memo = (self._changes, nodes, rows)
            return nodes, rows


def pending_nodes(graph: Graph, store: NodeVectors) -> list[tuple[Node, str, int]]:
    """(node, text, degree) of embeddable nodes whose current object has no vector yet."""
    with graph.lock:
        nodes = list(graph.nodes())
        todo = []
        for node in nodes:
            if store.has(node):
                continue
            text = embed_text(node, graph)
            if text is not None:
                todo.append((node, text, graph.degree(node.key)))
        store.retain({n.key for n in nodes})
    return todo


def embed_pass(
    graph: Graph,
    embedder: Embedder,
    cache: VectorCache | None,
    store: NodeVectors,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    first: set[str] | None = None,
    batch: int = BATCH,
) -> PassReport:
    """Bring `store` up to date with `graph`: cached vectors first, then embed the rest.

    Order: keys in `first` (just changed), then by degree (most central first). Progress is
    reported as (done, total) over the texts to embed. A failing batch is counted and skipped;
    `cancel` stops between batches.
    """
    start = time.perf_counter()
    report = PassReport()
    todo = pending_nodes(graph, store)
    report.seen = len(todo)
    if cache is not None and todo:
        found = cache.get_many(t for _, t, _ in todo)
        hit = [(n, found[t]) for n, t, _ in todo if t in found]
        if hit:
            store.put([n for n, _ in hit], np.stack([v for _, v in hit]))
        report.cached = len(hit)
        todo = [item for item in todo if item[1] not in found]
    first = first or set()
    todo.sort(key=lambda item: (item[0].key not in first and item[0].path not in first,
                                -item[2], item[0].key))
    total = len(todo)
    if progress is not None:
        progress(0, total)
    done = 0
    for at in range(0, total, batch):
        if cancel is not None and cancel.is_set():
            report.cancelled = True
            break
        chunk = todo[at : at + batch]
        texts = [t for _, t, _ in chunk]
        started = time.perf_counter()
        try:
            vectors = embedder.embed(texts)
        except EmbeddingError as exc:
            report.failed += len(chunk)
            report.errors.append(str(exc))
            done += len(chunk)
            if progress is not None:
                progress(done, total)
            continue
        finally:
            report.embed_seconds += time.perf_counter() - started
        if cache is not None:
            cache.put_many(texts, vectors)
        store.put([n for n, _, _ in chunk], vectors)
        report.embedded += len(chunk)
        done += len(chunk)
        if progress is not None:
            progress(done, total)
    report.seconds = time.perf_counter() - start
    return report
