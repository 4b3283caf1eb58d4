"""Vector cache: SQLite, keyed by (model id, sha1 of the text), float32 little-endian blobs.

A `models` row records each model's dimension, so opening the cache with an embedder whose
dimension differs from what was stored is an error at start (`DimensionMismatch`), never silent
garbage. Vectors of different models share the file but are never returned for one another.
It is only a cache: a file SQLite cannot read is moved aside (bytes kept for a post-mortem)
and a fresh one is created.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from knowledge.embed.base import DimensionMismatch

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS models (
    model_id TEXT PRIMARY KEY,
    dim INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS vectors (
    model_id TEXT NOT NULL,
    text_sha1 BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, text_sha1)
) WITHOUT ROWID;
"""
# Stays under SQLite's bound-parameter limit on every version (999 on old builds).
_CHUNK = 500
_DTYPE = np.dtype("<f4")


def text_key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()


class VectorCache:
    """One model's view of the cache file. Safe to share between a background embedding thread
    and a reader: one connection, every use under a lock."""

    def __init__(self, path: Path, model_id: str, dim: int) -> None:
        self.path = path
        self.model_id = model_id
        self.dim = dim
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = self._open()
        except sqlite3.OperationalError:
            # Locked, read-only, disk full...: the file may be fine, so leave it alone.
            raise
        except sqlite3.DatabaseError as exc:
            self._move_aside(exc)
            self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            # A lost last write only costs a re-embedding; skip the fsync per commit.
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            row = conn.execute(
                "SELECT dim FROM models WHERE model_id = ?", (self.model_id,)
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO models (model_id, dim) VALUES (?, ?)", (self.model_id, self.dim)
                )
            elif row[0] != self.dim:
                raise DimensionMismatch(self.model_id, expected=row[0], got=self.dim)
        except BaseException:
            conn.close()
            raise
        return conn

    def _move_aside(self, exc: Exception) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        log.warning("vector cache %s unreadable (%s); moved to %s", self.path, exc, aside)
        # The -wal/-shm files belong to the broken database: a new one must not replay them.
        for suffix in ("", "-wal", "-shm"):
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                side.replace(aside.with_name(aside.name + suffix))

    def get_many(self, texts: Iterable[str]) -> dict[str, npt.NDArray[np.float32]]:
        """Cached vectors for those texts that have one, keyed by text."""
        by_key = {text_key(t): t for t in texts}
        keys = list(by_key)
        found: dict[str, npt.NDArray[np.float32]] = {}
        with self._lock:
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT text_sha1, vector FROM vectors "
                    f"WHERE model_id = ? AND text_sha1 IN ({marks})",
                    (self.model_id, *chunk),
                ).fetchall()
                for key, blob in rows:
                    # A row of the wrong length cannot be this model's: treat it as a miss.
                    if len(blob) == self.dim * _DTYPE.itemsize:
                        found[by_key[key]] = np.frombuffer(blob, dtype=_DTYPE).astype(np.float32)
        return found

    def put_many(self, texts: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        """Store one vector per text (rows in the same order), replacing older ones."""
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ValueError(f"{len(texts)} texts but vectors of shape {vectors.shape}")
        if vectors.shape[1] != self.dim:
            raise DimensionMismatch(self.model_id, expected=self.dim, got=vectors.shape[1])
        rows = [
            (self.model_id, text_key(t), np.asarray(v, dtype=_DTYPE).tobytes())
            for t, v in zip(texts, vectors, strict=True)
        ]
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO vectors (model_id, text_sha1, vector) VALUES (?, ?, ?)",
                    rows,
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> VectorCache:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
