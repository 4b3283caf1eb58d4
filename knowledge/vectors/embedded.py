"""The embedded vector store: one SQLite file, exact cosine search in numpy; nothing to run.

Chosen over Qdrant's in-process engine (qdrant-edge-py 0.9) by measurement
(`bench/history_stores.py`, a quiet 2-core machine): filtered search p50/p95 0.35/0.45 ms at
10k points and 3.8/4.6 ms at 100k, exact; edge answers 100k in 5.1/7.4 ms before its index is
built and 1.9/2.4 ms after, but building it takes 92 s, and its bool match turns `false` into
`0` (a point whose `invalid` is false is never found), which breaks the history's first rule.
One SQLite file is crash-safe (WAL), readable while another process writes, and already what
the semantic layer's cache was.

Several collections share a file, each with its own dimension. Searches load the collection's
vectors once and keep them until this connection or another process writes (SQLite's
`data_version` tells), so a run's reads cost one load. Payload filters use an inverted index
built with the matrix (key → value → rows), so `project` and `invalid` cut the candidates before
any arithmetic. A file SQLite cannot read is moved aside (bytes kept) and a fresh one created:
what it held is derived (vectors) or also kept elsewhere (runs are episodes too).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from knowledge.vectors.port import (
    Filter,
    Hit,
    Payload,
    Point,
    StoreMismatch,
    Vector,
    VectorStoreUnavailable,
)

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS collections (
    name TEXT PRIMARY KEY,
    dim INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS points (
    collection TEXT NOT NULL,
    id BLOB NOT NULL,
    vector BLOB NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (collection, id)
) WITHOUT ROWID;
"""
# The semantic cache's table before the port (model id, sha1 of the text): moved into `points`
# once, so an upgrade keeps every vector (the first 16 bytes of the sha1 are the point id).
_LEGACY = """
INSERT OR IGNORE INTO collections (name, dim) SELECT 'text:' || model_id, dim FROM models;
INSERT OR IGNORE INTO points (collection, id, vector, payload)
    SELECT 'text:' || model_id, substr(text_sha1, 1, 16), vector, '{}' FROM vectors;
DROP TABLE vectors;
DROP TABLE models;
"""
_CHUNK = 500  # under SQLite's bound-parameter limit on every version
_SCAN_FROM = 5 * _CHUNK  # ids asked at once past which `has` reads the collection's ids
_DTYPE = np.dtype("<f4")


def _key(value: object) -> tuple[str, object]:
    # JSON equality for the inverted index: false is not 0.
    return (type(value).__name__ if isinstance(value, bool) else "v", value)


@dataclass(slots=True)
class _Loaded:
    """A collection in memory for search: unit rows, ids, payloads, and the inverted index."""

    version: int
    ids: list[bytes]
    matrix: npt.NDArray[np.float32]
    payloads: list[Payload]
    index: dict[str, dict[tuple[str, object], npt.NDArray[np.intp]]]

    def rows(self, where: Filter) -> npt.NDArray[np.intp] | None:
        """Rows passing `where` (None: every row)."""
        keep: npt.NDArray[np.bool_] | None = None
        for key, value in where.must.items():
            mask = np.zeros(len(self.ids), dtype=bool)
            mask[self.index.get(key, {}).get(_key(value), _NONE)] = True
            keep = mask if keep is None else keep & mask
        for key, value in where.must_not.items():
            if keep is None:
                keep = np.ones(len(self.ids), dtype=bool)
            keep[self.index.get(key, {}).get(_key(value), _NONE)] = False
        return None if keep is None else np.flatnonzero(keep)


_NONE = np.zeros(0, dtype=np.intp)


class EmbeddedStore:
    """One collection of `dim`-dimensional vectors in the SQLite file at `path`. Safe to share
    between threads (one connection, under a lock); several processes may open the file."""

    def __init__(self, path: Path, collection: str, dim: int, *, read_only: bool = False) -> None:
        self.path = path
        self.collection = collection
        self.dim = dim
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None
        try:
            if not read_only:
                path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._conn = self._open(read_only)
            except sqlite3.OperationalError:
                raise  # locked, read-only, disk full...: the file may be fine, leave it alone
            except sqlite3.DatabaseError as exc:
                if read_only:
                    raise
                self._move_aside(exc)
                self._conn = self._open(read_only)
        except sqlite3.Error as exc:
            raise VectorStoreUnavailable(f"vector store {path}: {exc}") from exc

    @classmethod
    def existing(cls, path: Path, collection: str) -> EmbeddedStore | None:
        """Open a collection read-only with its stored dimension; None when there is none
        (never creates the file: for `theus status`)."""
        if not path.is_file():
            return None
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                row = conn.execute(
                    "SELECT dim FROM collections WHERE name = ?", (collection,)
                ).fetchone()
            finally:
                conn.close()
        except sqlite3.Error:
            return None
        return cls(path, collection, int(row[0]), read_only=True) if row else None

    def _open(self, read_only: bool) -> sqlite3.Connection:
        target = f"file:{self.path}?mode=ro" if read_only else str(self.path)
        conn = sqlite3.connect(target, uri=read_only, check_same_thread=False, isolation_level=None)
        try:
            if not read_only:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.executescript(_SCHEMA)
                if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vectors'").fetchone():
                    conn.executescript("BEGIN;" + _LEGACY + "COMMIT;")
            row = conn.execute(
                "SELECT dim FROM collections WHERE name = ?", (self.collection,)
            ).fetchone()
            if row is None and not read_only:
                conn.execute(
                    "INSERT INTO collections (name, dim) VALUES (?, ?)", (self.collection, self.dim)
                )
            elif row is not None and row[0] != self.dim:
                raise StoreMismatch(
                    f"collection {self.collection!r} in {self.path} holds {row[0]}-d vectors but "
                    f"the embedder makes {self.dim}-d ones: use the model that filled it, or "
                    "move the file aside to start a new one"
                )
        except BaseException:
            conn.close()
            raise
        return conn

    def _move_aside(self, exc: Exception) -> None:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        log.warning("vector store %s unreadable (%s); moved to %s", self.path, exc, aside)
        # The -wal/-shm files belong to the broken database: a new one must not replay them.
        for suffix in ("", "-wal", "-shm"):
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                side.replace(aside.with_name(aside.name + suffix))

    # -- the port --------------------------------------------------------------------------

    def put(self, points: Sequence[Point]) -> None:
        rows = []
        for point in points:
            vector = np.asarray(point.vector, dtype=_DTYPE)
            if vector.shape != (self.dim,):
                raise StoreMismatch(
                    f"a {vector.shape}-shaped vector for a {self.dim}-d "
                    f"collection {self.collection!r}"
                )
            rows.append(
                (self.collection, _id(point.id), vector.tobytes(), json.dumps(dict(point.payload)))
            )
        with self._writing():
            self._conn.executemany(
                "INSERT OR REPLACE INTO points (collection, id, vector, payload) "
                "VALUES (?, ?, ?, ?)",
                rows,
            )

    def get(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Point]:
        keys = [_id(i) for i in ids]
        column = "vector" if with_vectors else "NULL"
        found = []
        with self._reading():
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                found += self._conn.execute(
                    f"SELECT id, {column}, payload FROM points WHERE collection = ? "
                    f"AND id IN ({','.join('?' * len(chunk))})",
                    (self.collection, *chunk),
                ).fetchall()
        points = []
        for key, blob, payload in found:
            if blob is not None and len(blob) != self.dim * _DTYPE.itemsize:
                continue  # a row of the wrong length cannot be this collection's
            vector = (
                np.frombuffer(blob, dtype=_DTYPE).astype(np.float32)
                if blob is not None
                else np.zeros(0, dtype=np.float32)
            )
            points.append(Point(str(uuid.UUID(bytes=bytes(key))), vector, json.loads(payload)))
        return points

    def has(self, ids: Sequence[str]) -> set[str]:
        by_key = {_id(i): i for i in ids}
        keys = list(by_key)
        found: set[str] = set()
        with self._reading():
            if len(keys) > _SCAN_FROM:  # one scan of the ids beats many lookups
                rows = self._conn.execute(
                    "SELECT id FROM points WHERE collection = ?", (self.collection,)
                )
                return {by_key[k] for (k,) in rows if k in by_key}
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                found.update(
                    by_key[bytes(k)]
                    for (k,) in self._conn.execute(
                        f"SELECT id FROM points WHERE collection = ? "
                        f"AND id IN ({','.join('?' * len(chunk))})",
                        (self.collection, *chunk),
                    )
                )
        return found

    def set_payload(self, point_id: str, payload: Payload) -> bool:
        with self._writing():
            row = self._conn.execute(
                "SELECT payload FROM points WHERE collection = ? AND id = ?",
                (self.collection, _id(point_id)),
            ).fetchone()
            if row is None:
                return False
            merged = {**json.loads(row[0]), **payload}
            self._conn.execute(
                "UPDATE points SET payload = ? WHERE collection = ? AND id = ?",
                (json.dumps(merged), self.collection, _id(point_id)),
            )
        return True

    def delete(self, ids: Sequence[str]) -> None:
        with self._writing():
            self._conn.executemany(
                "DELETE FROM points WHERE collection = ? AND id = ?",
                [(self.collection, _id(i)) for i in ids],
            )

    def nearest(
        self, vector: Vector, *, limit: int, where: Filter, threshold: float | None = None
    ) -> list[Hit]:
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        if query.shape != (self.dim,) or norm == 0.0 or limit <= 0:
            return []
        loaded = self._load()
        rows = loaded.rows(where)
        candidates = loaded.matrix if rows is None else loaded.matrix[rows]
        if not len(candidates):
            return []
        scores = candidates @ (query / norm)
        order = np.argsort(-scores, kind="stable")[:limit]
        hits = []
        for at in order:
            score = float(scores[at])
            if threshold is not None and score < threshold:
                break
            row = int(at if rows is None else rows[at])
            hits.append(Hit(str(uuid.UUID(bytes=loaded.ids[row])), score, loaded.payloads[row]))
        return hits

    def count(self, where: Filter | None = None) -> int:
        if where is None or not (where.must or where.must_not):
            with self._reading():
                row = self._conn.execute(
                    "SELECT count(*) FROM points WHERE collection = ?", (self.collection,)
                ).fetchone()
            return int(row[0])
        loaded = self._load()
        rows = loaded.rows(where)
        return len(loaded.ids) if rows is None else len(rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- plumbing --------------------------------------------------------------------------

    def _load(self) -> _Loaded:
        with self._reading():
            version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
            if self._loaded is not None and self._loaded.version == version:
                return self._loaded
            rows = self._conn.execute(
                "SELECT id, vector, payload FROM points WHERE collection = ?", (self.collection,)
            ).fetchall()
        size = self.dim * _DTYPE.itemsize
        rows = [r for r in rows if len(r[1]) == size]
        matrix = (
            np.frombuffer(b"".join(r[1] for r in rows), dtype=_DTYPE)
            .reshape(len(rows), self.dim)
            .astype(np.float32)
        )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.where(norms == 0, 1, norms)
        payloads: list[Payload] = [json.loads(r[2]) for r in rows]
        index: dict[str, dict[tuple[str, object], list[int]]] = {}
        for row, payload in enumerate(payloads):
            for key, value in payload.items():
                for item in value if isinstance(value, list) else (value,):
                    if isinstance(item, str | int | float | bool):
                        index.setdefault(key, {}).setdefault(_key(item), []).append(row)
        loaded = _Loaded(
            version,
            [bytes(r[0]) for r in rows],
            matrix,
            payloads,
            {
                k: {v: np.asarray(rs, dtype=np.intp) for v, rs in values.items()}
                for k, values in index.items()
            },
        )
        with self._lock:
            self._loaded = loaded
        return loaded

    def _writing(self) -> _Transaction:
        return _Transaction(self, write=True)

    def _reading(self) -> _Transaction:
        return _Transaction(self, write=False)


class _Transaction:
    """The lock, a transaction for writes, and SQLite errors as `VectorStoreUnavailable`."""

    def __init__(self, store: EmbeddedStore, write: bool) -> None:
        self.store = store
        self.write = write

    def __enter__(self) -> None:
        self.store._lock.acquire()
        if self.write:
            try:
                self.store._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                self.store._lock.release()
                raise VectorStoreUnavailable(f"vector store {self.store.path}: {exc}") from exc

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, _tb: object
    ) -> None:
        conn = self.store._conn
        try:
            if self.write:
                if kind is None:
                    conn.execute("COMMIT")
                    self.store._loaded = None  # our own write: the next search reloads
                else:
                    conn.execute("ROLLBACK")
        except sqlite3.Error as failed:
            exc = exc or failed
            kind = kind or type(failed)
        finally:
            self.store._lock.release()
        if isinstance(exc, sqlite3.Error):
            raise VectorStoreUnavailable(f"vector store {self.store.path}: {exc}") from exc


def _id(point_id: str) -> bytes:
    try:
        return uuid.UUID(point_id).bytes
    except ValueError as exc:
        raise ValueError(f"point ids are UUIDs, not {point_id!r}") from exc
