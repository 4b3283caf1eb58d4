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

SCHEMA_VERSION = 1
_FIELDS = tuple(Node.__dataclass_fields__)
_DEFAULTS = Node("", "", "").to_dict()

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    sha1 TEXT NOT NULL, language TEXT NOT NULL, lines INTEGER NOT NULL,
    status TEXT NOT NULL, reason TEXT NOT NULL, imports TEXT NOT NULL, identifiers TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS nodes (
    key TEXT PRIMARY KEY, owner TEXT NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL
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
    imports: list[list[Any]] = field(default_factory=list)  # [module, line, names, level]
    identifiers: list[str] = field(default_factory=list)

    def row(self) -> tuple[Any, ...]:
        return (
            self.path, self.size, self.mtime_ns, self.sha1, self.language, self.lines,
            self.status, self.reason, json.dumps(self.imports), " ".join(self.identifiers),
        )

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> FileState:
        path, size, mtime, sha1, lang, lines, status, reason, imports, idents = row
        return cls(
            path, size, mtime, sha1, lang, lines, status, reason,
            json.loads(imports), idents.split() if idents else [],
        )


def encode_node(node: Node) -> str:
    """JSON of the fields that differ from their defaults (keeps the store small)."""
    out = {}
    for name in _FIELDS:
        value = getattr(node, name)
        if name in ("key", "kind", "label") or value != _DEFAULTS[name]:
            out[name] = value
    return json.dumps(out, separators=(",", ":"))


def decode_node(text: str) -> Node:
    raw = json.loads(text)
    return Node(**raw)


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
        return {r[0]: FileState.from_row(r) for r in self._read("SELECT * FROM files")}

    def counts(self) -> dict[str, int]:
        out = dict(self._read("SELECT kind, COUNT(*) FROM nodes GROUP BY kind"))
        out["edges"] = self._read("SELECT COUNT(*) FROM edges")[0][0]
        return out

    def load_graph(self) -> Graph:
        graph = Graph()
        nodes = [(decode_node(d), o) for d, o in self._read("SELECT data, owner FROM nodes")]
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
    ) -> int:
        """Persist the graph's dirty owners and the given file states in one transaction.

        Returns the number of owners written. On failure the dirty owners are kept for the
        next attempt and `StoreError` is raised; the database still holds the previous state.
        """
        with graph.lock:
            dirty = graph.take_dirty()
            rows: list[tuple[str, str, str, str]] = []
            edge_rows: list[tuple[str, str, str, str]] = []
            for owner in dirty:
                for key in graph.owned(owner):
                    node = graph.get(key)
                    if node is None:
                        continue
                    rows.append((key, owner, node.kind, encode_node(node)))
                    edge_rows.extend((e.src, e.dst, e.kind, owner) for e in graph.out_edges(key))
        file_rows = [f.row() for f in files]
        gone = [(p,) for p in removed_files]
        try:
            with self._lock, self._conn:
                c = self._conn
                c.execute("BEGIN IMMEDIATE")
                owners = [(o,) for o in dirty]
                c.executemany("DELETE FROM nodes WHERE owner = ?", owners)
                c.executemany("DELETE FROM edges WHERE owner = ?", owners)
                c.executemany("INSERT OR REPLACE INTO nodes VALUES (?, ?, ?, ?)", rows)
                c.executemany("INSERT INTO edges VALUES (?, ?, ?, ?)", edge_rows)
                c.executemany("DELETE FROM files WHERE path = ?", gone)
                c.executemany(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", file_rows
                )
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
        for table in ("files", "nodes", "edges"):
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
