"""What the semantic layer embeds per node, and the pass that embeds what is missing.

Chosen by measurement (bench/recall_semantic.py, real history of five repositories): a file is
embedded as chunks of its content (its passages, the path first), not as one line of
names. Per-file retrieval over signature-and-doc-line texts scored MRR 0.46 on click where
content chunks scored 0.59; symbols add nothing once their file's chunks are there, so they get
no vectors of their own (a symbol is as close to a request as its file's best chunk); nor do
Markdown sections and tables (short title texts made documentation outrank code). Memories,
episodes and entities are embedded as their own text.

The pass keeps `NodeVectors` (key -> rows, in memory) in step with the graph by node identity,
like the lexical index: `Graph.upsert` stores a fresh `Node` for every change, so a node whose
object we have not seen is new or changed. Its texts are looked up in the persistent
`VectorCache` first; only the misses are embedded, most central nodes first, in batches.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from knowledge.core.filetext import PASSAGE_LINES, passages, read_text
from knowledge.core.graph import Graph, Node
from knowledge.embed.base import Embedder, EmbeddingError
from knowledge.embed.cache import VectorCache
from knowledge.recall.kinds import CODE, DOC, TEST, kind_of
from knowledge.vectors.port import VectorStoreUnavailable

Progress = Callable[[int, int], None]

BATCH = 32
# Each passage is embedded by its head (its path, signature and first lines): 280 characters
# (~120 word pieces of code) scored better than 1500 on the tuning repositories (bench/recall.py
# --set tuning, theus+sem: R@5 0.849 / MRR 0.765 against 0.840 / 0.766; 150 characters: 0.838
# / 0.762) and the first index embeds 2.2 times as many chunks a second (43 against 19.5).
# Both choices together: Flask's first index embeds in 12.7 s, Vue's core in 92 s (77.6 and
# 428 s when the issue was filed, 94efee5; `theus index --json`, its embed_seconds).
CHUNK_CHARS = 280
# A file is embedded as often as requests want its kind (`recall.kinds`): code by every
# request, a head every 30 lines; tests and docs only when a request asks for them, a head
# every 90 lines; the other kinds (changelogs, data, examples, declarations) never count fully,
# so the re-rank never ranks them by meaning and they are not embedded. Multiples of the
# 30-line passage keep the heads the same texts (cached vectors stay valid). Same R@5/MRR
# (bench/recall.py, theus+sem): tuning 0.849/0.767 against 0.849/0.765, check 0.820/0.717
# against 0.819/0.716; every 90 lines for code too lost 0.012 on the check set.
EMBED_EVERY = {CODE: PASSAGE_LINES, TEST: 3 * PASSAGE_LINES, DOC: 3 * PASSAGE_LINES}
TEXT_CHARS = 1000  # memories and episodes: their text is all they have
_TEXT_KINDS = frozenset({"memory", "episode", "entity"})

Rows = npt.NDArray[np.float32]


def embed_texts(node: Node, root: Path) -> list[str]:
    """The texts embedded for `node` (none when it is not embedded). Stable for an unchanged
    node: the cache is keyed by them."""
    kind = node.kind
    if kind in _TEXT_KINDS:
        text = " ".join(str(node.data.get("text") or node.summary or node.label).split())
        return [text[:TEXT_CHARS]] if text else []
    if node.status != "ok":
        return []
    if kind == "file":
        return file_chunks(node, root)
    return []  # symbols, sections, tables, columns: covered by their file's chunks


def file_chunks(node: Node, root: Path) -> list[str]:
    """`path` + each passage (`EMBED_EVERY` lines); [] for a kind not embedded and for binary,
    huge or unreadable files."""
    lines = EMBED_EVERY.get(kind_of(node.path))
    if lines is None:
        return []
    text = read_text(root, node.path, int(node.data.get("size", 0) or 0))
    return [] if text is None else chunk_text(node.path, text, lines)


def chunk_text(
    path: str, text: str, lines: int = PASSAGE_LINES, limit: int = CHUNK_CHARS
) -> list[str]:
    """`path` + each passage of `text` (`lines` long), cut at `limit` characters (at least
    one chunk)."""
    return [f"{path}\n{body}"[:limit] for body in passages(text, lines)]


@dataclass
class PassReport:
    seen: int = 0  # embeddable nodes looked at (new or changed since the last pass)
    cached: int = 0  # nodes whose every text was in the vector cache
    embedded: int = 0  # texts computed by the model in this pass
    failed: int = 0  # texts of a batch that failed (tried again on the next pass)
    pending: int = 0  # nodes still without vectors at the end (failed, cancelled, compute off)
    cancelled: bool = False
    seconds: float = 0.0
    embed_seconds: float = 0.0  # time inside the embedder
    errors: list[str] = field(default_factory=list)


class VectorSet(Protocol):
    """What a re-rank reads: every row at once (`NodeVectors` live, `FrozenVectors` saved)."""

    dim: int

    def __len__(self) -> int: ...

    def matrix(self) -> Stacked: ...


class NodeVectors:
    """Vectors of the graph's nodes by key (one row per text), with the node object they were
    computed for. Thread-safe; `matrix()` stacks them for nearest-neighbour search, memoized
    on a change counter so the query path pays for stacking only after the vectors moved."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._lock = threading.Lock()
        self._vecs: dict[str, tuple[Node, Rows]] = {}
        self._changes = 0
        self._memo: tuple[int, Stacked] | None = None

    def __len__(self) -> int:
        return len(self._vecs)

    def has(self, node: Node) -> bool:
        entry = self._vecs.get(node.key)
        return entry is not None and entry[0] is node

    def put(self, node: Node, rows: Rows) -> None:
        with self._lock:
            self._vecs[node.key] = (node, rows)
            self._changes += 1

    def retain(self, live: set[str]) -> None:
        """Forget the vectors of nodes that left the graph."""
        with self._lock:
            gone = [k for k in self._vecs if k not in live]
            for key in gone:
                del self._vecs[key]
            if gone:
                self._changes += 1

    def matrix(self) -> Stacked:
        """Every stored row, stacked and grouped by file (see `Stacked`)."""
        with self._lock:
            if self._memo is not None and self._memo[0] == self._changes:
                return self._memo[1]
            entries = list(self._vecs.values())
            groups: dict[tuple[bool, str], int] = {}
            group_of: list[int] = []
            for node, rows in entries:
                name = (False, node.path) if node.path else (True, node.key)
                group = groups.setdefault(name, len(groups))
                group_of.extend([group] * len(rows))
            matrix = (
                np.concatenate([r for _, r in entries])
                if entries
                else np.empty((0, self.dim), dtype=np.float32)
            )
            stacked = Stacked(list(groups), np.array(group_of, dtype=np.int64), matrix)
            self._memo = (self._changes, stacked)
            return stacked


@dataclass(frozen=True)
class Stacked:
    """All rows at once. A row's group is its node's file path, or the node's key for nodes
    without one (memories, episodes): (keyed, name) pairs."""

    groups: list[tuple[bool, str]]
    group_of: npt.NDArray[np.int64]
    rows: Rows

    def best(self, q: Rows) -> tuple[dict[str, float], dict[str, float]]:
        """Best cosine with `q` per file path, and per key of the nodes without a path."""
        files: dict[str, float] = {}
        keyed: dict[str, float] = {}
        if len(self.rows):
            best = np.full(len(self.groups), -1.0, dtype=np.float32)
            np.maximum.at(best, self.group_of, self.rows @ q)
            for (is_key, name), sim in zip(self.groups, best.tolist(), strict=True):
                (keyed if is_key else files)[name] = sim
        return files, keyed


@dataclass(slots=True)
class _Todo:
    node: Node
    texts: list[str]
    degree: int


def pending_nodes(
    graph: Graph, root: Path, store: NodeVectors, cancel: threading.Event | None = None
) -> list[_Todo]:
    """Embeddable nodes whose current object has no vectors yet, with their texts (those
    read before `cancel` was set)."""
    with graph.lock:
        nodes = list(graph.nodes())
        candidates = [(n, graph.degree(n.key)) for n in nodes if not store.has(n)]
    store.retain({n.key for n in nodes})
    todo = []
    for node, degree in candidates:
        if cancel is not None and cancel.is_set():
            break
        texts = embed_texts(node, root)  # reads files: outside the graph lock
        if texts:
            todo.append(_Todo(node, texts, degree))
    return todo


def embed_pass(
    graph: Graph,
    root: Path,
    embedder: Embedder,
    cache: VectorCache | None,
    store: NodeVectors,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    first: set[str] | None = None,
    batch: int = BATCH,
    compute: bool = True,
) -> PassReport:
    """Bring `store` up to date with `graph`: cached vectors first, then embed the rest.

    Order: nodes named in `first` (keys or paths just changed), then by degree (most central
    first). Progress is (done, total) over the texts to embed. A failing batch stops the pass
    (the rest is tried again next time); `cancel` stops between batches. `compute=False` only
    loads what the cache already holds.
    """
    start = time.perf_counter()
    report = PassReport()
    todo = pending_nodes(graph, root, store, cancel)
    if cancel is not None and cancel.is_set():
        report.cancelled = True
        report.seconds = time.perf_counter() - start
        return report
    report.seen = len(todo)
    found: dict[str, Rows] = {}
    if cache is not None and todo:
        found = cache.get_many(t for item in todo for t in item.texts)
        rest = []
        for item in todo:
            if all(t in found for t in item.texts):
                store.put(item.node, np.stack([found[t] for t in item.texts]))
                report.cached += 1
            else:
                rest.append(item)
        todo = rest
    report.pending = len(todo)
    if compute:
        report.pending -= _compute(
            todo, found, embedder, cache, store, report, progress, cancel, first, batch
        )
    report.seconds = time.perf_counter() - start
    return report


def texts_in_order(
    todo: list[_Todo], found: dict[str, Rows], first: set[str] | None = None
) -> list[str]:
    """The texts of `todo` not in `found`, once each, in the order they are embedded: nodes
    named in `first` (keys or paths), then the most central. Sorts `todo` to match."""
    first = first or set()
    todo.sort(
        key=lambda i: (i.node.key not in first and i.node.path not in first, -i.degree, i.node.key)
    )
    return list(dict.fromkeys(t for item in todo for t in item.texts if t not in found))


def _compute(
    todo: list[_Todo],
    found: dict[str, Rows],
    embedder: Embedder,
    cache: VectorCache | None,
    store: NodeVectors,
    report: PassReport,
    progress: Progress | None,
    cancel: threading.Event | None,
    first: set[str] | None,
    batch: int,
) -> int:
    """Embed the missing texts of `todo` in batches; returns how many nodes were stored."""
    missing = texts_in_order(todo, found, first)
    total, done = len(missing), 0
    if progress is not None:
        progress(0, total)
    ready = 0  # todo[:ready] are stored
    for at in range(0, total, batch):
        if cancel is not None and cancel.is_set():
            report.cancelled = True
            return ready
        texts = missing[at : at + batch]
        started = time.perf_counter()
        try:
            vectors = embedder.embed(texts)
        except EmbeddingError as exc:
            # An endpoint that fails one batch likely fails the next: stop, retry next pass.
            report.failed += len(texts)
            report.errors.append(str(exc))
            return ready
        finally:
            report.embed_seconds += time.perf_counter() - started
        if cache is not None:
            try:
                cache.put_many(texts, vectors)
            except VectorStoreUnavailable as exc:  # only a cache: the vectors stay in memory
                report.errors.append(f"vector cache: {exc}")
        found.update(zip(texts, vectors, strict=True))
        report.embedded += len(texts)
        # `missing` follows `todo`'s order, so nodes complete in order.
        while ready < len(todo) and all(t in found for t in todo[ready].texts):
            item = todo[ready]
            store.put(item.node, np.stack([found[t] for t in item.texts]))
            ready += 1
        done += len(texts)
        if progress is not None:
            progress(done, total)
    return ready
