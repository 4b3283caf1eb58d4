"""The scoring index a one-shot command loads, kept current in place.

Two files in the project's data folder, read by mapping them (`snapshot`):
- the base (`recall.idx`): the lexical and content indexes of every node, in the store's row
  order, tagged with the store and the change (`Store.changes_since`) it reflects;
- the delta (`recall-delta.idx`): the same indexes over the nodes of the owners saved since
  the base (the overlay), which of the base's slots those replace, and the history index.

`current` asks the store which owners were saved since the delta's change and applies only
those: their rows are read (a changed file's text too), indexed and merged into the overlay;
once the overlay passes a share of the base (`MERGE_SHARE`), both merge into a new base (arrays
joined, nothing read again). HEAD moving updates the history part by the commits that entered
or left its window. The base with its replaced slots hidden, then the overlay, ranks exactly as
indexes built from the store's rows in order, as a fresh process's graph holds them: a saved
owner's rows come after every older row, as the overlay comes after the base.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from knowledge.core import atomic
from knowledge.core.graph import Node
from knowledge.core.store import StoreError
from knowledge.index.git_history import head as history_head
from knowledge.recall import content, history, lexical, snapshot
from knowledge.recall.snapshot import Strings

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future, ProcessPoolExecutor

    from knowledge.core.graph import Graph
    from knowledge.core.store import Store
    from knowledge.index.project import Project

FORMAT = 6  # bump when what either file holds changes meaning
# An overlay (with the base's slots it replaces) past this share of the base's nodes or
# passages, and past `MERGE_MIN` of them, is merged into a new base: below, it costs less.
MERGE_SHARE = 0.125
MERGE_MIN = 4096
log = logging.getLogger(__name__)
Arrays = dict[str, np.ndarray]


@dataclass
class Saved:
    """What a frozen recaller searches: the base, and the delta over it (`dead.lex`,
    `dead.content`: the base's replaced slots; `history.*`: the history index of `head`)."""

    base: Arrays
    delta: Arrays
    head: str


def delta_path(base: Path) -> Path:
    return base.with_name("recall-delta.idx")


def current(project: Project, first: FirstBase | None = None) -> Saved | None:
    """The project's saved index brought up to date with its store and HEAD, and written
    back; None when the store cannot tell what changed (the caller builds from the graph).
    `first`: a first base made while the graph was saved, for a new store."""
    path = project.paths.recall_index
    try:
        at_head = history_head(project.root)
        store_id = project.store.meta().get("store_id", "")
        found = _read(path, store_id)
        if found is not None and _fresh(project, found, at_head):
            return found[0]
        with contextlib.ExitStack() as held:
            with contextlib.suppress(OSError):  # a folder we cannot write: no one else can
                held.enter_context(atomic.locked(path.with_name("recall.lock")))
            found = _read(path, store_id)  # another process may have caught up meanwhile
            return _caught_up(project, found, store_id, at_head, first)
    except StoreError as exc:
        log.info("scoring index not loaded: %s", exc)
    except (KeyError, ValueError, IndexError) as exc:  # written by another version, or torn
        log.warning("scoring index unreadable (%r): recall builds its own", exc)
    return None


def _read(path: Path, store_id: str) -> tuple[Saved, dict[str, Any]] | None:
    """The saved index and the delta's meta, when the base is one of this store's (without a
    delta that fits it: an empty one at the base's change, with no history yet)."""
    try:
        base, meta = snapshot.read(path)
    except (OSError, snapshot.SnapshotError):
        return None
    if meta.get("format") != FORMAT or meta.get("store_id") != store_id:
        return None
    try:
        delta, delta_meta = snapshot.read(delta_path(path))
    except (OSError, snapshot.SnapshotError):
        delta, delta_meta = {}, {}
    if delta_meta.get("format") != FORMAT or delta_meta.get("base") != meta.get("id"):
        delta, delta_meta = {}, {"base": meta["id"], "seq": meta["seq"], "head": None}
    return Saved(base, delta, str(delta_meta.get("head") or "")), delta_meta


def _fresh(project: Project, found: tuple[Saved, dict[str, Any]], at_head: str) -> bool:
    meta = found[1]
    if meta.get("head") != at_head:
        return False
    seq = int(meta["seq"])
    return project.store.changes_since(seq) == (seq, [])


def _caught_up(
    project: Project,
    found: tuple[Saved, dict[str, Any]] | None,
    store_id: str,
    at_head: str,
    first: FirstBase | None = None,
) -> Saved:
    store, path, root = project.store, project.paths.recall_index, project.root
    none = np.zeros(0, np.int32)
    if found is None:  # none yet, or of another store or format: built from every row
        seq, _ = store.changes_since(0)
        if first is not None and first.holds(store):
            base = first.base()
        else:
            counted = [*(first.counted if first is not None else []), *project.take_counts()]
            base = _built(root, store.nodes(), counted)
        base_id = _new_base(path, base, store_id, seq)
        overlay, dead_lex, dead_content = _built(root, []), none, none
        old_history: Arrays = {}
        head = None
    else:
        saved, meta = found
        base, base_id, head = saved.base, meta["base"], meta.get("head")
        seq, owners = store.changes_since(int(meta["seq"]))
        overlay = _part(saved.delta, "lex.", "content.") or _built(root, [])
        dead_lex = saved.delta.get("dead.lex", none)
        dead_content = saved.delta.get("dead.content", none)
        old_history = _part(saved.delta, "history.")
        if owners:
            overlay, dead_lex, dead_content = _applied(
                project, base, overlay, dead_lex, dead_content, owners
            )
        if _too_big(base, overlay, dead_lex):
            live = _mask(len(base["lex.file"]), dead_lex)
            live_files = _mask(len(base["content.kind"]), dead_content)
            base = {
                **lexical.merge([(base, live), (overlay, _all(overlay, "lex.file"))]),
                **content.merge([(base, live_files), (overlay, _all(overlay, "content.kind"))]),
            }
            base.update(lexical.hash_arrays(lexical.hashes(base)))  # a base replaces none
            base_id = _new_base(path, base, store_id, seq)
            overlay, dead_lex, dead_content = _built(root, []), none, none
    if head != at_head or not old_history:
        found_history = history.updated(root, old_history or None, at_head)
        if found_history is not None:
            old_history, head = found_history, at_head
        elif not old_history:  # git failed: none for now, tried again next time
            old_history, head = history.updated(root, None, "") or {}, ""
    delta = {
        **overlay,
        "dead.lex": dead_lex.astype(np.int32),
        "dead.content": dead_content.astype(np.int32),
        **old_history,
    }
    _write(delta_path(path), delta, {"format": FORMAT, "base": base_id, "seq": seq, "head": head})
    return Saved(base, delta, head or "")


def _applied(
    project: Project,
    base: Arrays,
    overlay: Arrays,
    dead_lex: np.ndarray,
    dead_content: np.ndarray,
    owners: list[str],
) -> tuple[Arrays, np.ndarray, np.ndarray]:
    """The overlay with `owners`' nodes as the store holds them now (after every other
    owner's, in row order), and the base's slots replaced so far."""
    nodes = project.store.nodes(owners)
    live = _mask(len(base["lex.file"]), dead_lex)
    dying_base = np.isin(base["lex.owner"], _codes(base, owners)) & live
    dying = np.isin(overlay["lex.owner"], _codes(overlay, owners))
    # Where these owners' nodes were, or are: those paths' hash vectors are made again, from
    # every node at them (another owner's too: a schema's tables sit in its file).
    was = {
        p for arrays, mask in ((base, dying_base), (overlay, dying)) for p in _paths(arrays, mask)
    }
    dirty = sorted(was | {n.path for n, _ in nodes if n.path})
    shared = set(_paths(base, live & ~dying_base, dirty)) | set(_paths(overlay, ~dying, dirty))
    fresh = _built(project.root, nodes, project.take_counts())
    at: dict[str, list[Node]] = {}
    for node, _ in nodes:
        if node.path not in shared:
            at.setdefault(node.path, []).append(node)
    for node, _ in project.store.nodes((), shared) if shared else []:
        at.setdefault(node.path, []).append(node)
    vectors = {}
    for path in dirty:
        if (vector := lexical.hash_vector(path, at.get(path, []))) is not None:
            vectors[path] = vector
    fresh.update(lexical.hash_arrays(vectors, set(dirty) - vectors.keys()))
    merged = {
        **lexical.merge([(overlay, ~dying), (fresh, _all(fresh, "lex.file"))]),
        **content.merge(
            [(overlay, ~dying[_file_nodes(overlay)]), (fresh, _all(fresh, "content.kind"))]
        ),
    }
    replaced = np.flatnonzero(dying_base)
    files = np.cumsum(base["lex.is_file"]) - 1  # a file node's slot among the content's
    gone = ~_mask(len(base["content.kind"]), dead_content)
    gone[files[replaced[base["lex.is_file"][replaced]]]] = True
    return merged, np.flatnonzero(~live | dying_base), np.flatnonzero(gone)


def _built(
    root: Path, nodes: list[tuple[Node, str]], counted: list[Arrays] | None = None
) -> Arrays:
    """The lexical and content indexes of `nodes`, frozen, in their order (`counted`: files
    the indexer counted as it read them, see `Project.count_texts`; the others are read
    here). With many files to read, worker processes count their words while one of them
    indexes the labels; their counts are taken in here as they come. With many files and
    none to read, a worker indexes half of the labels."""
    counted = counted or []
    held = {p for part in counted for p in content.paths_of(part)}
    files = list(dict.fromkeys(n.path for n, _ in nodes if n.kind == "file"))
    texts = content.ContentIndex(root)
    texts.apply([n for n, _ in nodes if n.kind == "file" and n.path not in held], [])
    run = _pool(texts.pending or len(files))
    if run is None:
        return {**_labels(nodes), **_content(texts, counted, files)}
    with run:
        if texts.pending:
            labels = run.submit(_labels, nodes)  # first, so that a worker starts on it at once
            texts.read_in(run)
            return {**_result(labels, nodes), **_content(texts, counted, files)}
        half = len(nodes) // 2
        first = run.submit(_labels, nodes[:half])
        found = _content(texts, counted, files)
        second = _labels(nodes[half:])
        return {**_joined(_result(first, nodes[:half]), second, nodes), **found}


class FirstBase:
    """A new store's first base, made by worker processes while the graph it comes from is
    linked and written (`Project.nodes_made`): a cold `theus index` spends two seconds on
    that on one core, and this overlaps them. Made from the graph's nodes in the order its
    save writes them and from the counts of the files the index read; used only when the
    store then holds exactly those rows in that order (`holds`), else the base is built from
    the rows (with these counts)."""

    def __init__(self, project: Project) -> None:
        self._project = project
        self.nodes: list[tuple[Node, str]] = []
        self.counted: list[Arrays] = []
        self.run: ProcessPoolExecutor | None = None
        self._labels: list[Future[Arrays]] = []
        self._content: Future[Arrays] | None = None
        self._files: list[str] = []

    def start(self, graph: Graph) -> None:
        """When the store is new and the graph whole, start on what its save will write, in
        the order it writes it (`Store.save`), if the index counted every file it holds."""
        if self.run is not None or graph.whole is not None or self._project.store.has_nodes():
            return
        with graph.lock:
            owners = sorted(graph.dirty_owners)
            nodes = [(node, owner) for owner in owners for node in graph.owned_nodes(owner)]
        self.counted += self._project.take_counts()
        files = list(dict.fromkeys(n.path for n, _ in nodes if n.kind == "file"))
        held = {p for part in self.counted for p in content.paths_of(part)}
        if not held.issuperset(files):
            return
        self.run = _pool(len(files), shared=(nodes, self.counted, files))
        if self.run is None:
            return
        self.nodes, self._files, half = nodes, files, len(nodes) // 2
        self._labels = [
            self.run.submit(_shared_labels, 0, half),
            self.run.submit(_shared_labels, half, len(nodes)),
        ]
        self._content = self.run.submit(_shared_content)

    def holds(self, store: Store) -> bool:
        """Whether `store` holds the rows this base indexes, in their order."""
        return self.run is not None and store.keys() == [node.key for node, _ in self.nodes]

    def base(self) -> Arrays:
        half = len(self.nodes) // 2
        first, second = self.nodes[:half], self.nodes[half:]
        labels = _joined(
            _result(self._labels[0], first), _result(self._labels[1], second), self.nodes
        )
        assert self._content is not None  # set with the labels (`start`)
        here = functools.partial(content.assemble, self.counted, self._files)
        return {**labels, **_or_here(self._content, here, "content assembled")}

    def close(self) -> None:
        if self.run is not None:
            self.run.shutdown(wait=True, cancel_futures=True)


def _content(texts: content.ContentIndex, counted: list[Arrays], files: list[str]) -> Arrays:
    """The content index of `files`: those read by `texts`, the others from `counted`."""
    read = texts.freeze()
    return content.assemble([*counted, read], files) if counted else read


def _result(labels: Future[Arrays], nodes: list[tuple[Node, str]]) -> Arrays:
    """What a worker indexed of `nodes`' labels, or, when the pool failed, this process."""
    return _or_here(labels, lambda: _labels(nodes), "labels indexed")


def _or_here(future: Future[Arrays], here: Callable[[], Arrays], what: str) -> Arrays:
    """A worker's result, or `here`'s when the pool failed (`what` was done here then)."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        return future.result()
    except (OSError, BrokenProcessPool) as exc:
        log.warning("%s in one process: the process pool failed (%s)", what, exc)
        return here()


def _joined(first: Arrays, second: Arrays, nodes: list[tuple[Node, str]]) -> Arrays:
    """The labels of `nodes` from those of its two halves: a path with nodes in both has its
    hash vector made again from all of them."""
    merged = lexical.merge([(first, _all(first, "lex.file")), (second, _all(second, "lex.file"))])
    half = len(first["lex.file"])
    both = {n.path for n, _ in nodes[:half]} & {n.path for n, _ in nodes[half:]} - {""}
    if both:
        vectors = lexical.hashes(merged)
        for path in both:
            vector = lexical.hash_vector(path, [n for n, _ in nodes if n.path == path])
            if vector is None:
                vectors.pop(path, None)
            else:
                vectors[path] = vector
        merged.update(lexical.hash_arrays(vectors))
    return merged


def _labels(nodes: list[tuple[Node, str]]) -> Arrays:
    """The lexical index of `nodes`, frozen (in a worker process for a cold build)."""
    index = lexical.LexicalIndex()
    index.apply([n for n, _ in nodes], [])
    return index.freeze({n.key: owner for n, owner in nodes})


def _shared_labels(start: int, stop: int) -> Arrays:
    """In a worker of `FirstBase`'s pool: `_labels` of a slice of its nodes."""
    from knowledge.core.workers import shared

    nodes, _, _ = shared()
    return _labels(nodes[start:stop])


def _shared_content() -> Arrays:
    """In a worker of `FirstBase`'s pool: its files' content index, from their counts."""
    from knowledge.core.workers import shared

    _, counted, files = shared()
    return content.assemble(counted, files)


def _pool(files: int, shared: Any = None) -> ProcessPoolExecutor | None:
    """Worker processes for a build over `files` files (`shared`: what they read, see
    `workers.pool`); None when too few to pay for them, or when none can start here."""
    from knowledge.core.workers import POOL_THRESHOLD, pool

    workers = min(2, os.cpu_count() or 1)
    if workers < 2 or files < POOL_THRESHOLD:
        return None
    try:
        return pool(workers, ["knowledge.recall.saved"], shared)
    except OSError as exc:
        log.warning("reading files in one process: the process pool failed (%s)", exc)
        return None


def _new_base(path: Path, base: Arrays, store_id: str, seq: int) -> str:
    """Write `base` under a new id (which a delta names to be read over it)."""
    base_id = os.urandom(8).hex()
    _write(path, base, {"format": FORMAT, "store_id": store_id, "id": base_id, "seq": seq})
    return base_id


def _part(arrays: Arrays, *prefixes: str) -> Arrays:
    return {k: v for k, v in arrays.items() if k.startswith(prefixes)}


def _write(path: Path, arrays: Arrays, meta: dict[str, Any]) -> None:
    """Written, or logged: a disk that refuses costs the next one-shot the same catch-up."""
    try:
        snapshot.write(path, dict(arrays), meta)
    except OSError as exc:
        log.info("scoring index not written: %s", exc)


def _too_big(base: Arrays, overlay: Arrays, dead: np.ndarray) -> bool:
    return any(
        size > max(MERGE_MIN, MERGE_SHARE * len(base[name]))
        for name, size in (
            ("lex.file", len(overlay["lex.file"]) + len(dead)),
            ("content.owner", len(overlay["content.owner"])),
        )
    )


def _codes(arrays: Arrays, owners: list[str]) -> np.ndarray:
    """The codes of those of `owners` the arrays' slots hold."""
    names = Strings(arrays["lex.owners"], arrays["lex.owner_offsets"])
    return np.array([c for o in owners if (c := names.find(o)) >= 0], np.int32)


def _paths(arrays: Arrays, mask: np.ndarray, among: list[str] | None = None) -> list[str]:
    """The paths of the slots in `mask` (only those `among`, when given)."""
    names = Strings(arrays["lex.paths"], arrays["lex.path_offsets"]).all()
    held = np.zeros(len(names) + 2, bool)  # the last two: NO_FILE and DEAD
    held[arrays["lex.file"][mask]] = True
    found = [names[i] for i in np.flatnonzero(held[: len(names)]).tolist()]
    return found if among is None else sorted(set(found) & set(among))


def _file_nodes(arrays: Arrays) -> np.ndarray:
    """The lexical slots of file nodes, in content slot order."""
    return np.flatnonzero(arrays["lex.is_file"])


def _mask(size: int, dead: np.ndarray) -> np.ndarray:
    live = np.ones(size, bool)
    live[dead] = False
    return live


def _all(arrays: Arrays, name: str) -> np.ndarray:
    return np.ones(len(arrays[name]), bool)
