"""The graph's persistent store: one SQLite database per project.

SQLite in WAL mode with synchronous=FULL gives the crash property the product needs: a
`kill -9` at any instant leaves the last committed transaction, and a commit returns only
once it is durable. Rows are grouped by owner (a file path, or a memory/episode key), so a
changed file rewrites its own rows and nothing else.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowledge.graph import Edge, Graph, Node

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
_FIELDS = tuple(Node.__dataclass_fields__)
_DEFAULTS = Node("", "", "").to_dict()

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
CREATE INDEX IF NOT EXISTS nodes_owner ON nodes(owner);
CREATE TABLE IF NOT EXISTS edges (
    src TEXT NOT NULL, dst TEXT NOT NULL, kind TEXT NOT NULL, owner TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS edges_owner ON edges(owner);
"""


class StoreError(Exception):
    """The store could not be written (disk full, read-only, locked). State is unchanged."""


class StoreCorrupt(Exception):
    """The database is not a readable Theus store."""


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
        return (self.path, self.size, self.mtime_ns, self.sha1, self.language, self.lines,
                self.status, self.reason)


@dataclass(slots=True)
class Links:
    """What a file points at by name, kept to re-link it when other files change."""

    imports: list[list[Any]] = field(default_factory=list)  # [module, line, names, level]
    identifiers: list[str] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)  # schema files only


# Node fields stored as columns; the rest go to one JSON column only when not default.
_COLUMNS = ("key", "kind", "label", "path", "line", "end_line", "summary", "subkind",
            "signature")
_EXTRA = tuple(f for f in Node.__dataclass_fields__ if f not in _COLUMNS)
_DEFAULTS = Node("", "", "").to_dict()


def node_row(node: Node, owner: str) -> tuple[Any, ...]:
    extra = {f: v for f in _EXTRA if (v := getattr(node, f)) != _DEFAULTS[f]}
    return (node.key, owner, node.kind, node.label, node.path, node.line, node.end_line,
            node.summary, node.subkind, node.signature,
            json.dumps(extra, separators=(",", ":")) if extra else None)


def row_node(row: tuple[Any, ...]) -> Node:
    key, _owner, kind, label, path, line, end_line, summary, subkind, signature, extra = row
    node = Node(key, kind, label, path, line, end_line, summary, subkind, signature)
    if extra:
        for name, value in json.loads(extra).items():
            setattr(node, name, value)
    return node


class Store:
    """Open with `Store.open(path)`: a corrupt file is moved aside and a fresh store created."""

    def __init__(self, path: Path, conn: sqlite3.Connection, recovered: Path | None) -> None:
        self.path = path
        self._conn = conn
        self._lock = threading.Lock()
        self.recovered_from = recovered  # where a corrupt store's bytes were moved, if any

    @classmethod
    def open(cls, path: Path) -> Store:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return cls(path, _connect(path), None)
        except (sqlite3.DatabaseError, StoreCorrupt) as exc:
            aside = quarantine(path)
            log.warning("store %s unreadable (%s); moved aside to %s", path, exc, aside)
            return cls(path, _connect(path), aside)

    def close(self) -> None:
        with self._lock:
            # Fold the WAL back so the store on disk is one compact file.
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._conn.close()

    # -- reading -----------------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return dict(self._read("SELECT k, v FROM meta"))

    def files(self) -> dict[str, FileState]:
        return {r[0]: FileState(*r) for r in self._read("SELECT * FROM files")}

    def links(self) -> dict[str, Links]:
        return {
            path: Links(json.loads(imports), identifiers.split(), json.loads(tables or "[]"))
            for path, imports, identifiers, tables in self._read("SELECT * FROM links")
        }

    def counts(self) -> dict[str, int]:
        out = dict(self._read("SELECT kind, COUNT(*) FROM nodes GROUP BY kind"))
        out["edges"] = self._read("SELECT COUNT(*) FROM edges")[0][0]
        return out

    def load_graph(self) -> Graph:
        graph = Graph()
        nodes = [(row_node(r), r[1]) for r in self._read("SELECT * FROM nodes")]
        edges = [Edge(s, d, k) for s, d, k in self._read("SELECT src, dst, kind FROM edges")]
        graph.load(nodes, edges)
        return graph

    def _read(self, sql: str) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._conn.execute(sql).fetchall()
            except sqlite3.DatabaseError as exc:
                raise StoreCorrupt(str(exc)) from exc

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
        """
        with graph.lock:
            dirty = graph.take_dirty()
            rows: list[tuple[Any, ...]] = []
            edge_rows: list[tuple[str, str, str, str]] = []
            for owner in dirty:
                for node in graph.owned_nodes(owner):
                    rows.append(node_row(node, owner))
                    edge_rows.extend(graph.out_edge_rows(node.key, owner))
        file_rows = [f.row() for f in files]
        link_rows = [
            (path, json.dumps(link.imports), " ".join(link.identifiers),
             json.dumps(link.tables) if link.tables else None)
            for path, link in (links or {}).items()
        ]
        gone = [(p,) for p in removed_files]
        try:
            with self._lock, self._conn:
                c = self._conn
                c.execute("BEGIN IMMEDIATE")
                owners = [(o,) for o in dirty]
                c.executemany("DELETE FROM nodes WHERE owner = ?", owners)
                c.executemany("DELETE FROM edges WHERE owner = ?", owners)
                c.executemany(
                    "INSERT OR REPLACE INTO nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
                )
                c.executemany("INSERT INTO edges VALUES (?, ?, ?, ?)", edge_rows)
                c.executemany("DELETE FROM files WHERE path = ?", gone)
                c.executemany("DELETE FROM links WHERE path = ?", gone)
                c.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                              file_rows)
                c.executemany("INSERT OR REPLACE INTO links VALUES (?, ?, ?, ?)", link_rows)
                stamp = {"saved_at": str(time.time()), **(meta or {})}
                c.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", stamp.items())
        except sqlite3.Error as exc:
            with graph.lock:
                graph.dirty_owners |= dirty
            raise StoreError(f"could not save the index to {self.path}: {exc}") from exc
        return len(dirty)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=5.0, check_same_thread=False, isolation_level=None)
    try:
        if conn.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("PRAGMA synchronous=FULL")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "meta" not in tables:
            raise StoreCorrupt("not a Theus store")
        conn.executescript(_SCHEMA)
        row = conn.execute("SELECT v FROM meta WHERE k = 'schema'").fetchone()
        if row is None:
            if tables:
                raise StoreCorrupt("store has no schema version")
            conn.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif row[0] != str(SCHEMA_VERSION):
            raise StoreCorrupt(f"schema version {row[0]}, expected {SCHEMA_VERSION}")
        # Touch every table so a truncated file fails here, not in the middle of a session.
        for table in ("files", "links", "nodes", "edges"):
            conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


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
        if src.exists():
            shutil.move(src, Path(str(aside) + suffix))
    return aside
