"""A project's live graph: index it, update it file by file, keep it saved.

`Project` owns the graph, the per-file state and the store for one root. The CLI, the watcher,
the agent and the dashboard all go through it, so there is one way to change the graph.

Over 400 lines: the one way to change the graph (index, update, save, recover) keeps its
invariants in one class.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from knowledge.core import atomic, keys
from knowledge.core.graph import Graph
from knowledge.core.paths import ProjectPaths
from knowledge.core.store import FileState, Links, Store, StoreCorrupt, StoreError
from knowledge.core.workers import POOL_THRESHOLD

# The indexer is imported when something is indexed: a one-shot `theus recall` that reads
# the store and its snapshot never pays for it (pathspec, the extractors, the resolvers).
if TYPE_CHECKING:
    import numpy as np

    from knowledge.index.analyse import Analysed
    from knowledge.index.definitions import Definitions
    from knowledge.index.ignore import IgnoreRules
    from knowledge.index.resolve import RepoFiles
    from knowledge.index.walker import FileEntry

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
Arrays = dict[str, "np.ndarray"]
# Files' texts (path, text) -> their words counted, frozen (`recall.content.frozen_texts`,
# given by the caller: recall lies above the index).
CountTexts = Callable[[list[tuple[str, str]]], Arrays]

_CHUNK = 48
SCHEMA_SUFFIXES = (".prisma", ".sql")  # files whose tables `_discover_schema` reads
_MAX_REFERENCES = 200


@dataclass(slots=True)
class IndexReport:
    files: int = 0
    symbols: int = 0
    edges: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    parsed: int = 0  # files whose content was (re)analysed in this run
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    nodes_added: int = 0
    nodes_removed: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "files": self.files,
            "symbols": self.symbols,
            "edges": self.edges,
            "skipped": dict(sorted(self.skipped.items())),
            "seconds": round(self.seconds, 3),
        }


class Project:
    def __init__(self, root: Path, paths: ProjectPaths | None = None) -> None:
        self.paths = paths or ProjectPaths.for_root(root)
        self.root = self.paths.root
        # A process killed mid-write (the vector snapshot, the watcher's state) left its temp
        # file here; nothing else would ever remove it.
        atomic.clean_orphans(self.paths.home)
        self.store = Store.open(self.paths.store)
        self._rules: IgnoreRules | None = None
        self._graph: Graph | None = None
        self._defs: Definitions | None = None
        self._links: dict[str, Links] | None = None
        self._pending_links: dict[str, Links] = {}
        self._pending_files: dict[str, FileState] = {}
        self._pending_removed: set[str] = set()
        self.lock = threading.RLock()  # one writer at a time: CLI, watcher, agent
        # What counts the words of the files the index reads where they are parsed (their
        # texts as recall reads them), for the scoring snapshot to take (`take_counts`): a
        # one-shot `theus index` builds it next, without reading or counting them again.
        self.count_texts: CountTexts | None = None
        # Called with the graph an index changed once its nodes are made, before they are
        # linked and saved (a new store's first snapshot starts on them then, in other
        # processes: `recall.saved.FirstBase`).
        self.nodes_made: Callable[[Graph], None] | None = None
        self._counted: list[Arrays] = []
        self.files: dict[str, FileState] = {}
        self.walk_skipped: dict[str, str] = {}
        self.last_index = 0.0
        try:
            self.files = self.store.files()
            meta = self.store.meta()
            try:
                self.walk_skipped = dict(json.loads(meta.get("walk_skipped", "{}")))
                self.last_index = float(meta.get("last_index", 0) or 0)
            except (ValueError, TypeError) as exc:
                raise self.store.set_aside(f"meta does not read: {exc}") from None
        except StoreCorrupt as exc:  # damage the checks at open could not see
            self._recover(exc)

    @property
    def rules(self) -> IgnoreRules:
        """The project's ignore rules (read again by every full index)."""
        if self._rules is None:
            from knowledge.index.ignore import IgnoreRules

            self._rules = IgnoreRules(self.root)
        return self._rules

    @property
    def graph(self) -> Graph:
        if self._graph is None:
            with self.lock:  # background layers may ask first; load once
                if self._graph is None:
                    try:
                        self._graph = self.store.load_graph()
                    except StoreCorrupt as exc:
                        self._recover(exc)
                        self._graph = Graph()
        return self._graph

    def _recover(self, exc: StoreCorrupt) -> None:
        """The store met damage and set it aside (`Store.set_aside`) for a new, empty store:
        the project reads as never indexed, so the next index parses every file again. A
        graph already read whole goes on serving, and all of it goes to the new store with the
        next save (memories, facts and episodes included)."""
        self.files, self.last_index, self.walk_skipped = {}, 0.0, {}
        self._links = None
        self._pending_files.clear()
        self._pending_links.clear()
        self._pending_removed.clear()
        if self._graph is not None:
            with self._graph.lock:
                self._graph.dirty_owners |= set(self._graph.owners())

    @property
    def links(self) -> dict[str, Links]:
        """Every file's imports and identifiers, read when first needed: the saved ones, as
        changed since."""
        if self._links is None:
            links = self.store.links()
            for rel in self._pending_removed:
                links.pop(rel, None)
            self._links = {**links, **self._pending_links}
        return self._links

    def _links_of_files(self, rels: Iterable[str]) -> dict[str, Links]:
        """Those files' links, without reading every file's: the ones this process holds,
        the rest from the store in one query."""
        if self._links is not None:
            return {rel: self._links.get(rel) or Links() for rel in rels}
        rels = set(rels)
        saved = self.store.links(rels - self._pending_links.keys())
        return {rel: self._pending_links.get(rel) or saved.get(rel) or Links() for rel in rels}

    @property
    def graph_loaded(self) -> bool:
        """Whether this process has read the whole graph (one-shot commands do not)."""
        return self._graph is not None

    @property
    def has_index(self) -> bool:
        return bool(self.files) or self.last_index > 0

    # -- full (incremental) index ------------------------------------------------------------
    def index(self, progress: Progress | None = None, workers: int | None = None) -> IndexReport:
        """Bring the graph in line with the disk. Unchanged files are not read (size+mtime)
        or not parsed (content hash). The store is checked first (`Store.verify`, before
        anything is written to it): damage there, or met by a read on the way, sets it aside
        and the index starts again from nothing. Raises `StoreError` when not even that reads
        back, never a report over an empty store."""
        with self.lock:
            try:
                self.store.verify()
                return self._index(progress, workers)
            except StoreCorrupt as exc:
                self._recover(exc)
            try:
                return self._index(progress, workers)
            except StoreCorrupt as exc:
                self._recover(exc)
                raise StoreError(
                    f"the index could not be rebuilt in {self.store.path}: {exc}"
                ) from exc

    def _index(self, progress: Progress | None, workers: int | None) -> IndexReport:
        with self.lock:
            start = time.perf_counter()
            from knowledge.index.ignore import IgnoreRules
            from knowledge.index.walker import walk

            self._rules = IgnoreRules(self.root)
            found = walk(self.root, self.rules, skip=self.paths.home.resolve())
            self.walk_skipped = found.skipped
            current = {f.rel: f for f in found.files}
            removed = sorted(set(self.files) - current.keys())
            todo = [
                f
                for f in found.files
                if (s := self.files.get(f.rel)) is None
                or s.size != f.size
                or s.mtime_ns != f.mtime_ns
            ]
            report = IndexReport(removed=removed)
            graph = self._graph
            dropped = {rel: self.files[rel] for rel in removed}
            if todo or removed or not self.has_index:
                results = self._analyse(todo, progress, workers)
                graph = self._graph_for(todo, removed)
                self._apply(graph, todo, results, removed, report, relink_all=not self.has_index)
            elif progress:
                progress(0, 0)
            self.last_index = time.time()
            try:
                self._save(graph)
            except StoreError:
                if graph is not self._graph:  # a part, dropped: the next index redoes its files
                    self._defs = None  # they changed the definitions: read again from the store
                    self._links = None
                    for f in todo:
                        self.files.pop(f.rel, None)
                        self._pending_files.pop(f.rel, None)
                        self._pending_links.pop(f.rel, None)
                    self.files.update(dropped)  # still in the store: found gone again
                    self._pending_removed -= dropped.keys()
                raise
            report.seconds = time.perf_counter() - start
            self._fill_counts(report)
            parsed = sum(state.status != "skipped" for state in self.files.values())
            if parsed and not report.files:  # the store reads empty: never a success
                raise self.store.set_aside(f"{parsed} files indexed, no file node saved")
            return report

    # -- watcher path ------------------------------------------------------------------------
    def update(self, rels: Iterable[str]) -> IndexReport:
        """Re-examine the given paths on disk: index what exists, drop what is gone.

        Decisions come from the disk at call time, never from the events that led here, so an
        editor's temp-file-and-rename save ends with exactly the final content indexed.
        """
        with self.lock:
            start = time.perf_counter()
            todo: list[FileEntry] = []
            removed: list[str] = []
            for rel in sorted(set(rels)):
                if self._gitignore_changed(rel):
                    self._rules = None  # read again on next use
                entry = self._entry(rel)
                if entry is None:
                    removed.extend(p for p in self.files if p == rel or p.startswith(rel + "/"))
                    self.walk_skipped.pop(rel, None)
                else:
                    known = self.files.get(rel)
                    stamp = (entry.size, entry.mtime_ns)
                    if known is None or (known.size, known.mtime_ns) != stamp:
                        todo.append(entry)
            report = IndexReport(removed=sorted(set(removed)))
            if todo or removed:
                results = self._analyse(todo, None, workers=1)
                self._apply(self.graph, todo, results, report.removed, report, relink_all=False)
            report.seconds = time.perf_counter() - start
            return report

    def _entry(self, rel: str) -> FileEntry | None:
        """The file at `rel` if it should be indexed now."""
        from knowledge.index.walker import FileEntry

        path = self.root / rel
        try:
            if not path.is_file() or self.rules.ignored_path(rel, False):
                return None
            real = path.resolve(strict=True)
            if real != self.root and self.root not in real.parents:
                return None
            st = path.stat()
        except (OSError, RuntimeError):
            return None
        return FileEntry(rel, st.st_size, st.st_mtime_ns)

    @staticmethod
    def _gitignore_changed(rel: str) -> bool:
        return rel.rsplit("/", 1)[-1] in (".gitignore", ".theusignore")

    # -- persistence ---------------------------------------------------------------------------
    def save(self) -> int:
        """Write what changed since the last save. Raises `StoreError`; state is kept, or
        when the store was damaged, set aside for the next index to rebuild."""
        try:
            return self._save()
        except StoreCorrupt as exc:
            self._recover(exc)
            raise StoreError(
                f"the store {self.store.path} was damaged ({exc}); set aside at "
                f"{self.store.recovered_from}, the next index rebuilds it"
            ) from exc

    def _save(self, graph: Graph | None = None) -> int:
        """Write what changed: in `graph` (a part of the graph `_graph_for` read), or in
        the whole graph when this process read it."""
        with self.lock:
            graph = graph if graph is not None else self._graph
            graph = graph if graph is not None else Graph()
            files, gone = list(self._pending_files.values()), set(self._pending_removed)
            links = dict(self._pending_links)
            meta = {
                "root": str(self.root),
                "last_index": str(self.last_index),
                "walk_skipped": json.dumps(self.walk_skipped),
            }
            written = self.store.save(graph, files, gone, meta, links)
            self._pending_files.clear()
            self._pending_links.clear()
            self._pending_removed -= gone
            return written

    def take_counts(self) -> list[Arrays]:
        """What `count_texts` made of the files read since the last call, in the order they
        were read."""
        with self.lock:
            counted, self._counted = self._counted, []
            return counted

    @property
    def unsaved(self) -> bool:
        graph = self._graph
        return bool(self._pending_files or self._pending_removed or (graph and graph.dirty_owners))

    def close(self, fold_wal: bool = True) -> None:
        self.store.close(fold_wal)

    # -- status ---------------------------------------------------------------------------------
    def skipped_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for reason in self.walk_skipped.values():
            counts[reason] = counts.get(reason, 0) + 1
        for state in self.files.values():
            if state.reason and state.status != "ok":
                reason = state.reason.split(":")[0].replace(" ", "-")
                counts[reason] = counts.get(reason, 0) + 1
        return counts

    def counts(self) -> dict[str, int]:
        return self._graph.counts() if self._graph is not None else self.store.counts()

    def _fill_counts(self, report: IndexReport) -> None:
        counts = self.store.counts()  # what was saved: what the next process reads
        report.files = counts.get("file", 0)
        report.symbols = counts.get("symbol", 0)
        report.edges = counts.get("edges", 0)
        report.skipped = self.skipped_counts()

    # -- internals ----------------------------------------------------------------------------
    def _analyse(
        self, todo: list[FileEntry], progress: Progress | None, workers: int | None
    ) -> Iterator[Analysed]:
        """Results as they come, so the graph is built while workers still parse."""
        items = [
            (f.rel, f.size, f.mtime_ns, s.sha1 if (s := self.files.get(f.rel)) else "")
            for f in todo
        ]
        total = len(items)
        if progress:
            progress(0, total)
        workers = workers or min(2, os.cpu_count() or 1)
        chunks = [items[i : i + _CHUNK] for i in range(0, total, _CHUNK)]
        root, count = str(self.root), self.count_texts
        done = finished = 0
        if workers > 1 and total >= POOL_THRESHOLD:
            from concurrent.futures.process import BrokenProcessPool

            from knowledge.core.workers import pool

            preload = ["knowledge.index.project", "knowledge.index.analyse"]
            try:
                if count is not None:
                    preload.append(count.__module__)
                with pool(workers, preload) as run:
                    n = len(chunks)
                    for batch in run.map(_analyse_chunk, [root] * n, chunks, [count] * n):
                        yield from self._took(batch)
                        finished += 1
                        done += len(batch[0])
                        if progress:
                            progress(done, total)
                return
            except (OSError, ValueError, BrokenProcessPool) as exc:
                # A pool that cannot start (a host that hides stderr's descriptor) or loses a
                # worker must not lose the index: the rest is parsed here.
                log.warning("parsing in one process: the process pool failed (%s)", exc)
        for chunk in chunks[finished:]:
            yield from self._took(_analyse_chunk(root, chunk, count))
            done += len(chunk)
            if progress:
                progress(done, total)

    def _took(self, batch: tuple[list[Analysed], Arrays | None]) -> list[Analysed]:
        """A chunk's results, its files' counts kept (`count_texts`)."""
        results, counted = batch
        if counted is not None:
            with self.lock:
                self._counted.append(counted)
        return results

    def _graph_for(self, todo: list[FileEntry], removed: list[str]) -> Graph:
        """The graph a change reads: the whole graph when this process has it, or when a
        schema changes (its tables are found again from every file). Otherwise a part
        (`Graph.whole`): the files edited, added or removed and every file node (the ends
        of imports), then what the change reaches as it is found: the files with edges into
        a node that goes (`_replace_file`, `_apply`), the files to link again (`_link`). A
        one-shot `theus index` after an edit, a new file or a deleted one reads a few files,
        not 40k nodes."""
        if self._graph is not None or not self.has_index:
            return self.graph
        touched = [*removed, *(f.rel for f in todo)]
        if any(rel.endswith(SCHEMA_SUFFIXES) for rel in touched):
            return self.graph
        if len(touched) > max(64, len(self.files) // 4):  # a large part: one scan costs less
            return self.graph
        part = Graph()
        self.store.load_owners(part, touched, [keys.file_key(rel) for rel in self.files])
        return part

    def _apply(
        self,
        graph: Graph,
        todo: list[FileEntry],
        results: Iterable[Analysed],
        removed: list[str],
        report: IndexReport,
        relink_all: bool,
    ) -> None:
        from knowledge.index.definitions import names_of

        touched = [*removed, *(f.rel for f in todo)]
        with graph.lock:
            keys_before = {k for rel in touched for k in graph.owned(rel)}
            nodes_before = {rel for rel in touched if keys.file_key(rel) in graph}
            defs = self._definitions(graph)
            before = {rel: names_of(graph, rel) for rel in touched}
            for rel in removed:
                if graph.whole is not None:  # a part: the files with edges into it change
                    self.store.load_owners(graph, self.store.owners_into(graph.owned(rel)))
                graph.remove_owner(rel)
                self.files.pop(rel, None)
                if self._links is not None:
                    self._links.pop(rel, None)
                self._pending_files.pop(rel, None)
                self._pending_links.pop(rel, None)
                self._pending_removed.add(rel)
        changed: list[str] = []
        for result in results:
            state = self.files.get(result.rel)
            if result.status == "unchanged" and state is not None:
                state.size, state.mtime_ns = result.size, result.mtime_ns
                self._pending_files[result.rel] = state
                continue
            changed.append(result.rel)
            with graph.lock:  # per file, so readers are never held up for a whole index
                self._replace_file(graph, result)
        with graph.lock:
            names: set[str] = set()
            for rel in touched:
                names |= defs.replace(rel, before[rel], names_of(graph, rel))
            keys_after = {k for rel in touched for k in graph.owned(rel)}
            report.changed = changed
            report.parsed = len(changed)
            report.nodes_added = len(keys_after - keys_before)
            report.nodes_removed = len(keys_before - keys_after)
            # Files that came or went as imports see them: their file node made or dropped
            # (a new file, or one that turned binary or back).
            moved = [
                *removed,
                *(r for r in changed if (r in nodes_before) != (keys.file_key(r) in graph)),
            ]
            if relink_all or any(r.endswith(SCHEMA_SUFFIXES) for r in touched):
                self._discover_schema(graph)  # the last nodes: links only add edges
            if self.nodes_made is not None:
                self.nodes_made(graph)
            self._link(graph, changed, names, None if relink_all else moved)

    def _replace_file(self, graph: Graph, result: Analysed) -> None:
        from knowledge.index import schema
        from knowledge.index.analyse import language_of
        from knowledge.index.nodes import file_nodes

        language = language_of(result.rel)
        ex = result.extract
        state = FileState(
            path=result.rel,
            size=result.size,
            mtime_ns=result.mtime_ns,
            sha1=result.sha1,
            language=language,
            lines=ex.lines if ex else 0,
            status=result.status,
            reason=result.reason,
        )
        links = Links(
            [[i.module, i.line, list(i.names), i.level] for i in ex.imports] if ex else [],
            sorted(ex.identifiers) if ex else [],
            schema.table_dicts(ex.tables) if ex else [],
        )
        self.files[result.rel] = state
        self._pending_files[result.rel] = state
        if self._links is not None:
            self._links[result.rel] = links
        self._pending_links[result.rel] = links
        self._pending_removed.discard(result.rel)
        nodes, edges = file_nodes(result, language) if result.keep_node else ([], [])
        if graph.whole is not None:  # a part: a node that goes changes the files into it
            gone = graph.owned(result.rel) - {node.key for node in nodes}
            self.store.load_owners(graph, self.store.owners_into(gone))
        if not result.keep_node:
            graph.remove_owner(result.rel)
            return
        graph.replace_owner(result.rel, nodes, edges)

    def _link(
        self, graph: Graph, changed: list[str], names: set[str], moved: list[str] | None
    ) -> None:
        """Cross-file edges: imports, references by unambiguous name, foreign keys.
        `moved`: the files that came or went (None: link every file), so other files'
        imports may resolve elsewhere; the whole graph links every file again, a part only
        those whose imports do (`_resolved_elsewhere`)."""
        from knowledge.index.resolve import RepoFiles

        indexed = {rel for rel in self.files if keys.file_key(rel) in graph}
        repo = RepoFiles(indexed, self._go_modules(indexed))
        everything = moved is None or bool(moved)
        if everything and graph.whole is None:
            targets = indexed
        else:
            targets = {r for r in changed if r in indexed} | (self._naming(names) & indexed)
            if moved:
                targets |= self._resolved_elsewhere(moved, indexed - targets, repo)
        if not targets:
            return
        defs = self._definitions(graph)
        links = self._links_of_files(targets)
        if graph.whole is not None:  # a part (`_graph_for`): read the files to link, whole
            ends = {found[0] for link in links.values() for found in defs.linked(link.identifiers)}
            self.store.load_owners(graph, targets, ends)
        for rel in sorted(targets):  # edges in one order from run to run
            state = self.files[rel]
            link = links[rel]
            fkey = keys.file_key(rel)
            # A file linked again to the same files is not saved again (nor is every file's
            # derived data redone) when another file is added or removed.
            before = None if rel in graph.dirty_owners else _links_of(graph, fkey)
            graph.remove_out_edges(fkey, ("imports", "references"))
            edges = [
                (fkey, keys.file_key(target), "imports")
                for target in _imported(rel, link, state.language, repo)
            ]
            references = [
                (fkey, key, "references")
                for key, path in defs.linked(link.identifiers)
                if path != rel
            ]
            graph.add_edges(edges + references[:_MAX_REFERENCES])
            if before is not None and before == _links_of(graph, fkey):
                graph.dirty_owners.discard(rel)

    def _naming(self, names: set[str]) -> set[str]:
        """The files whose identifiers include one of `names`: from the links this process
        read, or else asked of the store (a one-shot index reads no file's links for it)."""
        if not names:
            return set()
        held = self._links if self._links is not None else self._pending_links
        found = {r for r, link in held.items() if names.intersection(link.identifiers)}
        if self._links is None:
            found |= self.store.files_naming(names) - self._pending_links.keys()
        return found

    def _resolved_elsewhere(self, moved: list[str], rels: set[str], repo: RepoFiles) -> set[str]:
        """Of `rels` (unchanged files), those whose imports now resolve to other files than
        their stored edges say, `moved` having come or gone. Only the files whose saved
        imports name a moved file (`_names_of`) are resolved again, or every file when one
        of them shapes how a whole folder resolves (`_structural`)."""
        if any(_structural(rel) for rel in moved):
            candidates = rels
        else:
            named = self.store.importers_naming(n for rel in moved for n in _names_of(rel))
            candidates = rels & named
        if not candidates:
            return set()
        stored: dict[str, set[str]] = {}
        for src, dst in self.store.edges_of_kind("imports", candidates):
            stored.setdefault(src, set()).add(dst)
        links = self._links_of_files(candidates)
        return {
            rel
            for rel in candidates
            if stored.get(keys.file_key(rel), set())
            != {
                keys.file_key(t) for t in _imported(rel, links[rel], self.files[rel].language, repo)
            }
        }

    def _definitions(self, graph: Graph) -> Definitions:
        from knowledge.index.definitions import Definitions

        if self._defs is None:
            whole = graph.whole is None
            self._defs = (
                Definitions.build(graph) if whole else Definitions.of_symbols(self.store.symbols())
            )
        return self._defs

    def _go_modules(self, indexed: set[str]) -> dict[str, str]:
        """Directory of each go.mod -> its module path, so Go imports resolve exactly."""
        from knowledge.index.resolve import go_module_path

        out = {}
        for rel in indexed:
            if rel == "go.mod" or rel.endswith("/go.mod"):
                try:
                    module = go_module_path((self.root / rel).read_text(errors="replace"))
                except OSError:
                    continue
                if module:
                    out[rel.rpartition("/")[0]] = module
        return out

    def _discover_schema(self, graph: Graph) -> None:
        from knowledge.index import schema

        definitions = [
            (rel, state.language, self.links[rel].tables)
            for rel, state in self.files.items()
            if state.language in schema.SCHEMA_LANGUAGES and rel in self.links
        ]
        schema.discover(graph, definitions)


# Files whose coming or going changes how a whole folder or crate resolves (a Python
# package, a Go module, a Rust crate or module root, a script folder's index, which `"."`
# imports): every file's imports are resolved again.
STRUCTURAL = frozenset({"__init__.py", "__init__.pyi", "go.mod", "lib.rs", "main.rs", "mod.rs"})


def _structural(rel: str) -> bool:
    name = rel.rpartition("/")[2]
    return name in STRUCTURAL or name.partition(".")[0] == "index"


def _names_of(rel: str) -> list[str]:
    """What an import that may resolve to `rel` holds in its text: the file's name up to its
    first dot (a module, a class, a header, a script) and its folder's name (a Go package, a
    folder a script or a Java wildcard imports)."""
    folder, _, name = rel.rpartition("/")
    stem = name.partition(".")[0] or name
    return [stem, folder.rpartition("/")[2]] if folder else [stem]


def _imported(rel: str, link: Links, language: str, repo: RepoFiles) -> list[str]:
    """The files `rel`'s imports (from its saved links) resolve to, in their order."""
    from knowledge.index.model import Import
    from knowledge.index.resolve import resolve

    return [
        target
        for module, line, imported, level in link.imports
        for target in resolve(rel, Import(module, line, tuple(imported), level), language, repo)
    ]


def _links_of(graph: Graph, key: str) -> list[tuple[str, str]]:
    """A file's import and reference edges, in one order."""
    return sorted(
        (e.dst, e.kind) for e in graph.out_edges(key) if e.kind in ("imports", "references")
    )


def _analyse_one(root: str, item: tuple[str, int, int, str]) -> Analysed:
    from knowledge.core.beneath import read_beneath
    from knowledge.index.analyse import Analysed, analyse

    rel, size, mtime_ns, known_sha1 = item
    if known_sha1:
        try:
            data = read_beneath(root, rel)
        except OSError:
            data = None
        if data is not None:
            import hashlib

            if hashlib.sha1(data).hexdigest() == known_sha1:
                return Analysed(rel, len(data), mtime_ns, known_sha1, "unchanged", "", None)
            return analyse(root, rel, size, mtime_ns, data)
    return analyse(root, rel, size, mtime_ns)


def _analyse_chunk(
    root: str, items: list[tuple[str, int, int, str]], count: CountTexts | None
) -> tuple[list[Analysed], Arrays | None]:
    """The files' results, and what `count` makes of the texts of those read, counted here
    where the texts are (sent back, the texts would cost more than their counts)."""
    results = [_analyse_one(root, item) for item in items]
    counted = None
    if count is not None:
        counted = count(
            [(r.rel, r.text or "") for r in results if r.keep_node and r.status != "unchanged"]
        )
    for result in results:
        result.text = None
    return results, counted
