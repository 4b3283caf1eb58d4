"""The graph's persistent store: one SQLite database per project.

SQLite in WAL mode with synchronous=FULL gives the crash property the product needs: a
`kill -9` at any instant leaves the last committed transaction, and a commit returns only
once it is durable. Rows are grouped by owner (a file path, or a memory/episode key), so a
changed file rewrites its own rows and nothing else.

Opening tells three cases apart, and only the first moves anything:
- corrupt (`StoreCorrupt`): not a regular file, empty, not SQLite, malformed, a foreign or
  wrong-schema database, tables or rows missing, or a failed `quick_check` after a writer did
  not close cleanly. Checked read-only first, so the bytes moved aside are exactly the bytes
  found; the project is then rebuilt from the source tree. Damage the open checks cannot see
  (a garbage page, a row that does not decode) is met by a later read, or by `verify`: the
  store then sets itself aside the same way and goes on over a new one (`set_aside`).
- unavailable (`StoreUnavailable`): the disk or the permissions refuse us (I/O error, disk
  full, read-only folder with no store yet). Nothing is moved; the caller fails open.
- read-only: a healthy store we cannot write (full disk, read-only folder). It is opened for
  reading; every save raises `StoreError` and the previous state stays intact.

Over 400 lines: opening, recovery, saving and reading share one connection discipline
(WAL, read-only fallbacks, the writer lock); split, each part would re-state it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from knowledge.core import atomic, keys
from knowledge.core.errors import TheusError
from knowledge.core.graph import Edge, Graph, Node, first_edges

log = logging.getLogger(__name__)
T = TypeVar("T")

SCHEMA_VERSION = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    sha1 TEXT NOT NULL, language TEXT NOT NULL, lines INTEGER NOT NULL,
    status TEXT NOT NULL, reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS links (
    path TEXT PRIMARY KEY, imports TEXT NOT NULL, identifiers TEXT NOT NULL, tables TEXT
);
CREATE TABLE IF NOT EXISTS nodes (
    key TEXT PRIMARY KEY, owner TEXT NOT NULL, kind TEXT NOT NULL, label TEXT NOT NULL,
    path TEXT NOT NULL, line INTEGER NOT NULL, end_line INTEGER NOT NULL, summary TEXT NOT NULL,
    subkind TEXT NOT NULL, signature TEXT NOT NULL, extra TEXT
);
CREATE TABLE IF NOT EXISTS edges (
    src TEXT NOT NULL, dst TEXT NOT NULL, kind TEXT NOT NULL, owner TEXT NOT NULL
);
-- Which owners each save wrote, newest last: derived data (the scoring snapshot) made at
-- change `seq` catches up by applying the owners saved since (`changes_since`).
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL UNIQUE
);
"""
# name -> what it indexes. Made after the rows when a save fills empty tables: building an
# index once over sorted keys costs less than keeping it up row by row (a third of the
# inserts of a cold index).
_INDEXES = {
    "nodes_owner": "nodes(owner)",
    "edges_owner": "edges(owner)",
    "edges_src": "edges(src)",
    "edges_dst": "edges(dst)",
}
_SCHEMA += "".join(f"CREATE INDEX IF NOT EXISTS {n} ON {on};\n" for n, on in _INDEXES.items())
_BULK = 10_000  # rows past which a save into empty tables makes the indexes after them


class StoreError(TheusError):
    """The store could not be written (disk full, read-only, locked). State is unchanged."""


class StoreUnavailable(StoreError):
    """The store cannot be opened for now (I/O error, permissions, disk full); nothing moved."""


class StoreCorrupt(TheusError):
    """The database is not a readable Theus store. Raised by a read that met damage, after the
    store set the damaged file aside (`Store.recovered_from`) and started a new one."""


_REQUIRED_TABLES = ("meta", "files", "links", "nodes", "edges")


# Owners of memory, episode and entity nodes: conversation, not the code index.
_REMEMBERED = (keys.MEMORY_PREFIX, keys.EPISODE_PREFIX, keys.ENTITY_PREFIX)
# Of those, what a person told (not episodes, saved by every run): `told` counts their saves.
_TOLD = (keys.MEMORY_PREFIX, keys.ENTITY_PREFIX)


@dataclass(slots=True)
class FileState:
    """What the index knows about one file, enough to skip it when unchanged."""

    path: str
    size: int
    mtime_ns: int
    sha1: str = ""
    language: str = ""
    lines: int = 0
    status: str = "ok"  # ok | partial | skipped
    reason: str = ""

    def row(self) -> tuple[Any, ...]:
        return (
            self.path,
            self.size,
            self.mtime_ns,
            self.sha1,
            self.language,
            self.lines,
            self.status,
            self.reason,
        )


@dataclass(slots=True)
class Links:
    """What a file points at by name, kept to re-link it when other files change."""

    imports: list[list[Any]] = field(default_factory=list)  # [module, line, names, level]
    identifiers: list[str] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)  # schema files only


# Node fields stored as columns; the rest go to one JSON column only when not default.
_COLUMNS = ("key", "kind", "label", "path", "line", "end_line", "summary", "subkind", "signature")
_EXTRA = tuple(f for f in Node.__dataclass_fields__ if f not in _COLUMNS)
_DEFAULTS = Node("", "", "").to_dict()
# The type a stored extra field must have; the optional ones (default None) are timestamps.
_EXTRA_TYPES = {f: (int, float) if _DEFAULTS[f] is None else type(_DEFAULTS[f]) for f in _EXTRA}
_NODE_COLUMNS = (
    "key",
    "owner",
    "kind",
    "label",
    "path",
    "line",
    "end_line",
    "summary",
    "subkind",
    "signature",
    "extra",
)  # as in _SCHEMA
_TEXT_COLUMNS = tuple(
    i for i, c in enumerate(_NODE_COLUMNS) if c not in ("line", "end_line", "extra")
)


# What `row_node` and `Store.links` need of a row, asked of every row at once (`verify`).
def _not_json(column: str, kind: str) -> str:
    return f"CASE WHEN json_valid({column}) THEN json_type({column}) != '{kind}' ELSE 1 END"


_ROWS_THAT_DO_NOT_READ = (
    "SELECT key FROM nodes WHERE "
    + " OR ".join(f"typeof({_NODE_COLUMNS[i]}) != 'text'" for i in _TEXT_COLUMNS)
    + " OR typeof(line) != 'integer' OR typeof(end_line) != 'integer'"
    f" OR (extra IS NOT NULL AND {_not_json('extra', 'object')})"
    f" UNION ALL SELECT path FROM links WHERE {_not_json('imports', 'array')}"
    f" OR typeof(identifiers) != 'text' OR (tables IS NOT NULL AND {_not_json('tables', 'array')})"
    " LIMIT 1"
)


def node_row(node: Node, owner: str) -> tuple[Any, ...]:
    extra = {f: v for f in _EXTRA if (v := getattr(node, f)) != _DEFAULTS[f]}
    return (
        node.key,
        owner,
        node.kind,
        node.label,
        node.path,
        node.line,
        node.end_line,
        node.summary,
        node.subkind,
        node.signature,
        json.dumps(extra, separators=(",", ":")) if extra else None,
    )


def row_node(row: tuple[Any, ...]) -> Node:
    """The node a row holds; ValueError when the row is not one `node_row` could have written
    (SQLite checks pages, not what a column holds)."""
    key, _owner, kind, label, path, line, end_line, summary, subkind, signature, extra = row
    if (
        not all(type(row[i]) is str for i in _TEXT_COLUMNS)
        or type(line) is not int
        or type(end_line) is not int
    ):
        raise ValueError(f"node row {key!r} has a column of the wrong type")
    node = Node(key, kind, label, path, line, end_line, summary, subkind, signature)
    if extra:
        fields = json.loads(extra)
        if not isinstance(fields, dict):
            raise ValueError(f"node {key!r}: extra is not a JSON object")
        for name, value in fields.items():
            if not isinstance(value, _EXTRA_TYPES.get(name, ())):
                raise ValueError(f"node {key!r}: extra field {name!r} does not read")
            setattr(node, name, value)
    return node


_NAMES_SEARCHED = 3  # `Store.files_naming` searches the text for this many names at most
_NOT_TEXT = " OR ".join(f"typeof({c}) != 'text'" for c in ("src", "dst", "kind"))


def _file_state(row: tuple[Any, ...]) -> FileState:
    state = FileState(*row)
    if not (
        type(state.path) is type(state.sha1) is type(state.status) is str
        and type(state.size) is type(state.mtime_ns) is type(state.lines) is int
    ):
        raise ValueError(f"file row {state.path!r} has a column of the wrong type")
    return state


def _links(row: tuple[Any, ...]) -> tuple[str, Links]:
    path, imports, identifiers, tables = row
    links = Links(json.loads(imports), identifiers.split(), json.loads(tables or "[]"))
    if not isinstance(links.imports, list) or not isinstance(links.tables, list):
        raise ValueError(f"links of {path!r} are not lists")
    return path, links


def _count(row: tuple[Any, ...]) -> int:
    return int(row[0])


class Store:
    """Open with `Store.open(path)`: a corrupt file is moved aside and a fresh store created."""

    def __init__(
        self, path: Path, conn: sqlite3.Connection, recovered: Path | None, read_only: bool = False
    ) -> None:
        self.path = path
        self._conn = conn
        self._lock = threading.Lock()
        self.recovered_from = recovered  # where a corrupt store's bytes were moved, if any
        self.read_only = read_only  # healthy, but this process cannot write it
        self.read_only_reason = ""
        self._writing = False  # the unclean-shutdown mark is set (see `_mark_writing`)
        self._file = _identity(path)  # which file is ours, once another process replaced it

    @classmethod
    def open(cls, path: Path) -> Store:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(f"cannot create {path.parent}: {exc.strerror}") from exc
        with contextlib.ExitStack() as creating:
            # Two processes opening a new project at once: one must not inspect the store
            # the other is still creating (and take it for damage). A folder that refuses the
            # lock file refuses the store too: that path is handled below, unlocked.
            with contextlib.suppress(OSError):
                creating.enter_context(atomic.locked(path.with_name(path.name + ".lock")))
            return cls._open_checked(path)

    @classmethod
    def _open_checked(cls, path: Path) -> Store:
        aside = None
        problem = inspect(path)
        if problem is not None:
            aside = quarantine(path)
            log.warning(
                "store %s is unusable (%s); moved aside to %s and rebuilding", path, problem, aside
            )
        try:
            return cls(path, _connect(path), aside)
        except sqlite3.OperationalError as exc:  # cannot write here: disk full, read-only
            if not path.exists() or path.stat().st_size == 0:
                _discard_empty(path)
                raise StoreUnavailable(f"cannot create the store {path}: {exc}") from exc
            try:
                conn = _connect_read_only(path)
            except sqlite3.Error as again:
                raise StoreUnavailable(f"cannot open the store {path}: {again}") from again
            store = cls(path, conn, aside, read_only=True)
            store.read_only_reason = str(exc)
            log.info("store %s opened read-only (%s): changes will not be saved", path, exc)
            return store

    def close(self, fold_wal: bool = True) -> None:
        """`fold_wal=False` leaves the WAL for the next open to fold (a quick exit: the
        checkpoint's fsync is most of a close); the data is as safe either way."""
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                if self._writing:  # a clean close: the next open needs no integrity check
                    self._conn.execute("UPDATE meta SET v = 'closed' WHERE k = 'writer'")
                    self._writing = False
                if fold_wal:  # the store on disk as one compact file
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._conn.close()

    # -- reading -----------------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return dict(self._read("SELECT k, v FROM meta"))

    def verify(self) -> None:
        """Read every page (`quick_check`) and ask every node and links row whether it holds
        what a read needs (columns of their types, JSON where JSON is kept): damage sets the
        store aside, as found, and raises `StoreCorrupt`. Reads check the rest, row by row.
        About 160 ms for a 145 MB store (80k nodes); a full index runs it before it writes."""
        verdict = self._read("PRAGMA quick_check")
        if [tuple(v) for v in verdict] != [("ok",)]:
            raise self.set_aside("quick_check: " + "; ".join(str(v[0]) for v in verdict[:3]))
        bad = self._read(_ROWS_THAT_DO_NOT_READ)
        if bad:
            raise self.set_aside(f"the row of {bad[0][0]!r} does not read")

    def set_aside(self, problem: str) -> StoreCorrupt:
        """Damage met after opening: move the store's files aside as they are (nothing is
        written to them first) and go on over a new, empty store, so no reader meets half a
        store and the next index rebuilds it. Returns the error for the caller to raise."""
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            with contextlib.ExitStack() as held:
                with contextlib.suppress(OSError):  # as in `open`: one process moves it
                    held.enter_context(atomic.locked(self.path.with_name(self.path.name + ".lock")))
                if _identity(self.path) == self._file:  # not already moved by another process
                    self.recovered_from = quarantine(self.path)
                    log.warning(
                        "store %s does not read (%s); moved aside to %s and rebuilding",
                        self.path,
                        problem,
                        self.recovered_from,
                    )
                try:
                    self._conn = _connect(self.path)
                except sqlite3.Error as exc:  # no new store here (disk full): an empty one
                    _discard_empty(self.path)
                    self._conn = _connect(Path(":memory:"))
                    self.read_only, self.read_only_reason = True, str(exc)
                self._file = _identity(self.path)
            self._writing = False
        return StoreCorrupt(problem)

    def generation(self) -> int:
        """How many saves changed the files' part of the graph: derived data (the vector
        snapshot) records the generation it was made from. Memories, facts and episodes do not
        count (`told` tracks the first two; `changes_since` says which owners every save
        wrote)."""
        rows = self._decoded(_count, self._read("SELECT v FROM meta WHERE k = 'generation'"))
        return rows[0] if rows else 0

    def told(self) -> int:
        """How many saves changed memories or facts (episodes do not count)."""
        rows = self._decoded(_count, self._read("SELECT v FROM meta WHERE k = 'told'"))
        return rows[0] if rows else 0

    def files(self) -> dict[str, FileState]:
        return {f.path: f for f in self._decoded(_file_state, self._read("SELECT * FROM files"))}

    def links(self, paths: Iterable[str] | None = None) -> dict[str, Links]:
        """Every file's links, or those of `paths`."""
        if paths is None:
            return dict(self._decoded(_links, self._read("SELECT * FROM links")))
        rows = self._query(
            "SELECT * FROM links WHERE path IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(set(paths))),),
        )
        return dict(self._decoded(_links, rows))

    def counts(self) -> dict[str, int]:
        out = dict(self._read("SELECT kind, COUNT(*) FROM nodes GROUP BY kind"))
        out["edges"] = self._read("SELECT COUNT(*) FROM edges")[0][0]
        return out

    def labels(self, kind: str, limit: int) -> list[str]:
        """Labels of `kind` nodes, without loading the graph (the newest saves first)."""
        return [
            label
            for (label,) in self._query(
                "SELECT label FROM nodes WHERE kind = ? ORDER BY rowid DESC LIMIT ?", (kind, limit)
            )
        ]

    def of_kind(self, kind: str) -> list[Node]:
        """The `kind` nodes, without loading the graph."""
        return self._decoded(row_node, self._query("SELECT * FROM nodes WHERE kind = ?", (kind,)))

    def fact_holders(self) -> list[Node]:
        """Entity nodes and the nodes whose extra fields hold facts, relations or heat: a
        superset of what the facts layer looks after, without loading the graph."""
        return self._decoded(
            row_node,
            self._read(
                "SELECT * FROM nodes WHERE kind = 'entity' OR instr(extra, '\"facts\":')"
                " OR instr(extra, '\"relations\":') OR instr(extra, '\"heat\":')"
            ),
        )

    def load_graph(self) -> Graph:
        graph = Graph()
        nodes = self._decoded(lambda r: (row_node(r), r[1]), self._read("SELECT * FROM nodes"))
        graph.load(nodes, self._edges())
        return graph

    def load_owners(self, graph: Graph, owners: Iterable[str], ends: Iterable[str] = ()) -> None:
        """Read `owners` whole into `graph` (`Graph.load` with `whole`), and the nodes keyed
        `ends` as ends of edges yet to be made: what a change to a few files reads instead of
        the whole graph."""
        owners = sorted(set(owners) - (graph.whole or set()))
        nodes = self.nodes(owners)
        edges = self._edges(owners)
        far = {dst for _, dst, _ in edges} | set(ends)
        far -= {node.key for node, _ in nodes}
        rows = self._query(
            "SELECT * FROM nodes WHERE key IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(far)),),
        )
        found = self._decoded(lambda r: (row_node(r), r[1]), rows)
        graph.load([*nodes, *found], edges, whole=owners)

    def owners_into(self, keys: Iterable[str]) -> set[str]:
        """The owners of the edges into the nodes keyed `keys`."""
        rows = self._query(
            "SELECT DISTINCT owner FROM edges WHERE dst IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(set(keys))),),
        )
        return {str(owner) for (owner,) in rows}

    def has_nodes(self) -> bool:
        return bool(self._read("SELECT 1 FROM nodes LIMIT 1"))

    def keys(self) -> list[str]:
        """Every node's key, in the order `load_graph` reads them."""
        return [str(key) for (key,) in self._read("SELECT key FROM nodes ORDER BY rowid")]

    def symbols(self) -> list[tuple[str, str, str, str]]:
        """(owner, key, label, subkind) of every symbol node, without loading the graph."""
        rows = self._read("SELECT owner, key, label, subkind FROM nodes WHERE kind = 'symbol'")
        if not all(type(a) is type(b) is type(c) is type(d) is str for a, b, c, d in rows):
            raise self.set_aside("a symbol row does not read: a column is not text")
        return rows

    def importers_naming(self, needles: Iterable[str]) -> set[str]:
        """The files whose saved imports hold one of `needles` anywhere in their text (any
        case): a superset of those whose imports name them."""
        return self._links_where("instr(lower(links.imports), value)", {n.lower() for n in needles})

    def files_naming(self, names: Iterable[str]) -> set[str]:
        """The files whose saved identifiers include one of `names` (exactly), without
        reading every file's links: a search of the text per name for a few (9 ms a name on
        sympy's 2k files), one split of every file's identifiers for more (30 ms)."""
        wanted = set(names)
        if len(wanted) > _NAMES_SEARCHED:
            rows = self._read("SELECT path, identifiers FROM links")
            return {str(p) for p, found in rows if wanted.intersection(str(found).split())}
        return self._links_where(
            "instr(' ' || links.identifiers || ' ', ' ' || value || ' ')", wanted
        )

    def _links_where(self, test: str, values: set[str]) -> set[str]:
        """The files whose links row passes `test` (SQL over `links` and `value`) for one of
        `values`."""
        rows = self._query(
            f"SELECT path FROM links WHERE EXISTS (SELECT 1 FROM json_each(?) WHERE {test})",
            (json.dumps(sorted(values)),),
        )
        return {str(path) for (path,) in rows}

    def edges_of_kind(self, kind: str, owners: Iterable[str]) -> list[tuple[str, str]]:
        """(src, dst) of the edges of `kind` that `owners` hold, without loading the graph."""
        rows = self._query(
            "SELECT src, dst FROM edges WHERE kind = ? AND owner IN "
            "(SELECT value FROM json_each(?))",
            (kind, json.dumps(sorted(set(owners)))),
        )
        if not all(type(src) is type(dst) is str for src, dst in rows):
            raise self.set_aside("an edge row does not read: a column is not text")
        return rows

    def _edges(self, owners: list[str] | None = None) -> list[tuple[str, str, str]]:
        """The edges (all, or those of `owners`) as (src, dst, kind), in the store's order.
        SQLite checks their types in one scan: an edge with a column that is not text is
        damage, as a page is (checking and decoding the rows one by one took 0.3 s of a
        graph's load on a 137k-edge project)."""
        where = ""
        args: tuple[str, ...] = ()
        if owners is not None:
            where = "owner IN (SELECT value FROM json_each(?))"
            args = (json.dumps(owners),)
        check = f"({_NOT_TEXT}) AND {where}" if where else _NOT_TEXT
        if self._query(f"SELECT 1 FROM edges WHERE {check} LIMIT 1", args):
            raise self.set_aside("an edge row does not read: a column is not text")
        select = "SELECT src, dst, kind FROM edges"
        return self._query(f"{select} WHERE {where} ORDER BY rowid" if where else select, args)

    def changes_since(self, seq: int) -> tuple[int, list[str]]:
        """The owners saved after change `seq` (each once, the latest save last), and the
        number of the newest change among them (`seq` when none)."""
        rows = self._query("SELECT seq, owner FROM changes WHERE seq > ? ORDER BY seq", (seq,))
        return (int(rows[-1][0]) if rows else seq), [str(owner) for _, owner in rows]

    def nodes(
        self, owners: Iterable[str] | None = None, paths: Iterable[str] = ()
    ) -> list[tuple[Node, str]]:
        """(node, owner) in the order `load_graph` reads them (by rowid: the rows of an owner
        saved come after every row older than that save): all of them, or those of `owners`
        and those at `paths` (a scan: no index on paths)."""
        if owners is None:
            rows = self._read("SELECT rowid, * FROM nodes ORDER BY rowid")
        else:
            found: dict[int, tuple[Any, ...]] = {}
            for column, values in (("owner", list(owners)), ("path", list(paths))):
                for i in range(0, len(values), 500):
                    chunk = tuple(values[i : i + 500])
                    marks = ", ".join("?" * len(chunk))
                    found.update(
                        (r[0], r)
                        for r in self._query(
                            f"SELECT rowid, * FROM nodes WHERE {column} IN ({marks})", chunk
                        )
                    )
            rows = [found[rowid] for rowid in sorted(found)]
        return self._decoded(lambda r: (row_node(r[1:]), r[2]), rows)

    def _read(self, sql: str) -> list[tuple[Any, ...]]:
        return self._query(sql, ())

    def _query(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                if not _is_damage(exc):
                    raise StoreUnavailable(f"cannot read the store {self.path}: {exc}") from exc
                problem = str(exc)
        raise self.set_aside(problem)

    def _decoded(
        self, decode: Callable[[tuple[Any, ...]], T], rows: list[tuple[Any, ...]]
    ) -> list[T]:
        """Rows as read by `decode`; a row it cannot read is damage, as a page is."""
        try:
            return [decode(r) for r in rows]
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise self.set_aside(f"a row does not read: {exc}") from None

    # -- writing -----------------------------------------------------------------------------
    def save(
        self,
        graph: Graph,
        files: Iterable[FileState] = (),
        removed_files: Iterable[str] = (),
        meta: dict[str, str] | None = None,
        links: dict[str, Links] | None = None,
    ) -> int:
        """Persist the graph's dirty owners and the given file states in one transaction.

        Returns the number of owners written. On failure the dirty owners are kept for the
        next attempt and `StoreError` is raised; the database still holds the previous state.
        A damaged database is set aside and `StoreCorrupt` raised.
        """
        with graph.lock:
            dirty = graph.take_dirty()
            if graph.whole is not None and not dirty <= graph.whole:
                graph.dirty_owners |= dirty  # saved, they would lose the rows not read
                raise ValueError(f"owners read in part: {sorted(dirty - graph.whole)[:3]}")
            # In a fixed order: the rows' order is recall's tie-break, the same every index.
            ordered = sorted(dirty)
            rows: list[tuple[Any, ...]] = []
            edge_rows: list[tuple[str, str, str, str]] = []
            for owner in ordered:
                for node in graph.owned_nodes(owner):
                    rows.append(node_row(node, owner))
                    edge_rows.extend(graph.out_edge_rows(node.key, owner))
        file_rows = [f.row() for f in files]
        link_rows = [
            (
                path,
                json.dumps(link.imports),
                " ".join(link.identifiers),
                json.dumps(link.tables) if link.tables else None,
            )
            for path, link in (links or {}).items()
        ]
        gone = [(p,) for p in removed_files]
        try:
            if self.read_only:
                raise sqlite3.OperationalError(f"opened read-only: {self.read_only_reason}")
            with self._lock, self._conn:
                c = self._conn
                c.execute("BEGIN IMMEDIATE")
                if not self._writing:  # until `close`: a crash leaves this mark behind
                    c.execute("INSERT OR REPLACE INTO meta VALUES ('writer', 'open')")
                bulk = len(rows) > _BULK and c.execute("SELECT 1 FROM nodes").fetchone() is None
                for name in _INDEXES if bulk else ():
                    c.execute(f"DROP INDEX IF EXISTS {name}")
                owners = [(o,) for o in ordered]
                c.executemany("INSERT OR REPLACE INTO changes (owner) VALUES (?)", owners)
                c.executemany("DELETE FROM nodes WHERE owner = ?", owners)
                c.executemany("DELETE FROM edges WHERE owner = ?", owners)
                c.executemany(
                    "INSERT OR REPLACE INTO nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
                )
                c.executemany("INSERT INTO edges VALUES (?, ?, ?, ?)", edge_rows)
                for name, on in _INDEXES.items() if bulk else ():
                    c.execute(f"CREATE INDEX {name} ON {on}")
                c.executemany("DELETE FROM files WHERE path = ?", gone)
                c.executemany("DELETE FROM links WHERE path = ?", gone)
                c.executemany(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?)", file_rows
                )
                c.executemany("INSERT OR REPLACE INTO links VALUES (?, ?, ?, ?)", link_rows)
                stamp = {"saved_at": str(time.time()), **(meta or {})}
                c.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", stamp.items())
                if file_rows or gone or any(not o.startswith(_REMEMBERED) for o in dirty):
                    # What a snapshot of the code index would miss. Memories and episodes
                    # alone do not count: every headless run saves an episode, and a snapshot
                    # rebuilt for each would make every next one-shot command slow.
                    c.execute(
                        "INSERT INTO meta VALUES ('generation', '1') ON CONFLICT(k) DO "
                        "UPDATE SET v = CAST(v AS INTEGER) + 1"
                    )
                if any(o.startswith(_TOLD) for o in dirty):
                    c.execute(
                        "INSERT INTO meta VALUES ('told', '1') ON CONFLICT(k) DO "
                        "UPDATE SET v = CAST(v AS INTEGER) + 1"
                    )
            self._writing = True
        except sqlite3.Error as exc:
            with graph.lock:
                graph.dirty_owners |= dirty
            if _is_damage(exc):
                raise self.set_aside(str(exc)) from exc
            raise StoreError(f"could not save the index to {self.path}: {exc}") from exc
        return len(dirty)


class StoreGraph:
    """The graph read straight from the store, node by node: what a one-shot command needs to
    show a few dozen hits, without loading the whole graph (see `Graph` for the methods)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.lock = threading.RLock()
        self.version = store.generation()

    def get(self, key: str) -> Node | None:
        rows = self._store._query("SELECT * FROM nodes WHERE key = ?", (key,))
        return self._store._decoded(row_node, rows)[0] if rows else None

    def owned_nodes(self, owner: str) -> list[Node]:
        rows = self._store._query("SELECT * FROM nodes WHERE owner = ?", (owner,))
        return self._store._decoded(row_node, rows)

    def out_edges(self, key: str, kind: str | None = None) -> list[Edge]:
        rows = self._store._query("SELECT dst, kind FROM edges WHERE src = ?", (key,))
        return [Edge(key, d, k) for d, k in rows if kind is None or k == kind]

    def in_edges(self, key: str, kind: str | None = None) -> list[Edge]:
        rows = self._store._query("SELECT src, kind FROM edges WHERE dst = ?", (key,))
        return [Edge(s, key, k) for s, k in rows if kind is None or k == kind]

    def neighbours(
        self, key: str, limit: int
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]], int]:
        query = self._store._query
        out = query("SELECT dst, kind FROM edges WHERE src = ?", (key,))
        into = query("SELECT src, kind FROM edges WHERE dst = ?", (key,))
        return (first_edges(out, limit), first_edges(into, limit), len(out) + len(into))


def inspect(path: Path) -> str | None:
    """Why the store at `path` is corrupt, or None when it is healthy or absent. Read-only:
    the file is not changed. Raises `StoreUnavailable` when it cannot even be read."""
    if not os.path.lexists(path):
        return None
    if path.is_symlink() or not path.is_file():
        return "not a regular file"
    conn = None
    try:
        if path.stat().st_size == 0:
            return "an empty file"
        conn = _connect_read_only(path)
        return _problem(conn)
    except sqlite3.OperationalError as exc:
        if _is_damage(exc):
            return str(exc)
        raise StoreUnavailable(f"cannot read the store {path}: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        return str(exc)
    except OSError as exc:
        raise StoreUnavailable(f"cannot read the store {path}: {exc.strerror}") from exc
    finally:
        if conn is not None:
            conn.close()


def _is_damage(exc: sqlite3.Error) -> bool:
    """Whether an error says the file is damaged (rather than the disk refusing us, or a
    closed connection: those leave the file alone)."""
    if type(exc) is sqlite3.DatabaseError:  # SQLITE_CORRUPT, SQLITE_NOTADB
        return True
    text = str(exc)
    return "malformed" in text or "not a database" in text or "decode to UTF-8" in text


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _problem(conn: sqlite3.Connection) -> str | None:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not tables:
        return "no tables"
    if "meta" not in tables:
        return "not a Theus store"
    meta = dict(conn.execute("SELECT k, v FROM meta").fetchall())
    if meta.get("schema") != str(SCHEMA_VERSION):
        return f"schema version {meta.get('schema')}, expected {SCHEMA_VERSION}"
    missing = [t for t in _REQUIRED_TABLES if t not in tables]
    if missing:
        return "missing tables: " + ", ".join(missing)
    # Touch every table: a truncated file fails here, not in the middle of a session.
    counts = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in _REQUIRED_TABLES}
    # Parsed files always have a node; skipped ones (unreadable, binary) may have none.
    parsed = conn.execute("SELECT COUNT(*) FROM files WHERE status != 'skipped'").fetchone()[0]
    if parsed and not counts["nodes"]:
        return f"{parsed} parsed files but no nodes"
    if meta.get("writer") == "open":  # the last writer did not close: check the pages
        verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
        if verdict != "ok":
            return f"quick_check: {verdict}"
    return None


def _connect(path: Path) -> sqlite3.Connection:
    """A read-write connection; creates the schema in a new store. Raises
    `sqlite3.OperationalError` when this process cannot write there."""
    conn = sqlite3.connect(path, timeout=5.0, check_same_thread=False, isolation_level=None)
    try:
        if conn.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("PRAGMA synchronous=FULL")
        new = conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
        conn.executescript(_SCHEMA)  # IF NOT EXISTS: what a newer version added (indexes)
        if new:  # `store_id`: a snapshot made from another store (set aside since) never fits
            conn.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("schema", str(SCHEMA_VERSION)), ("store_id", os.urandom(8).hex())],
            )
    except BaseException:
        conn.close()
        raise
    return conn


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection. A WAL database wants its `-shm` file even to read; where that
    cannot be created (full disk, read-only folder) and no WAL content waits to be folded in,
    the file alone is the whole database and is read as immutable."""

    def connect(flags: str) -> sqlite3.Connection:
        return sqlite3.connect(
            f"file:{path}?mode=ro{flags}",
            timeout=5.0,
            check_same_thread=False,
            isolation_level=None,
            uri=True,
        )

    conn = connect("")
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        wal = Path(f"{path}-wal")
        if _is_damage(exc) or (wal.exists() and wal.stat().st_size > 0):
            raise
    except sqlite3.DatabaseError:
        conn.close()
        raise
    return connect("&immutable=1")


def _discard_empty(path: Path) -> None:
    """A store that could not even be created leaves no empty file to be reused later."""
    for suffix in ("", "-wal", "-shm"):
        target = Path(str(path) + suffix)
        with contextlib.suppress(OSError):
            if target.exists() and target.stat().st_size == 0:
                target.unlink()


def quarantine(path: Path) -> Path:
    """Move a bad store (and its WAL files) aside, keeping the bytes for inspection."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(path) + suffix)
        if os.path.lexists(src):  # a dangling symlink is moved too (the link itself)
            os.replace(src, Path(str(aside) + suffix))
    return aside
