"""The SQLite vector cache."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from knowledge.embed.base import DimensionMismatch, normalise_rows
from knowledge.embed.cache import VectorCache


def _vectors(n: int, dim: int, seed: int = 0) -> np.ndarray:
    return normalise_rows(np.random.default_rng(seed).normal(size=(n, dim)))


def test_round_trip_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    vectors = _vectors(2, 8)
    with VectorCache(path, "m", 8) as cache:
        cache.put_many(["alpha", "beta"], vectors)
        found = cache.get_many(["alpha", "beta", "gamma"])
    assert set(found) == {"alpha", "beta"}
    np.testing.assert_array_equal(found["beta"], vectors[1])
    assert found["beta"].dtype == np.float32
    with VectorCache(path, "m", 8) as reopened:
        np.testing.assert_array_equal(reopened.get_many(["alpha"])["alpha"], vectors[0])


def test_put_replaces_and_handles_many_keys(tmp_path: Path) -> None:
    texts = [f"text {i}" for i in range(1200)]  # more than one query chunk
    with VectorCache(tmp_path / "v.db", "m", 4) as cache:
        cache.put_many(texts, _vectors(1200, 4, seed=1))
        newer = _vectors(1, 4, seed=2)
        cache.put_many(["text 7"], newer)
        found = cache.get_many(texts)
    assert len(found) == 1200
    np.testing.assert_array_equal(found["text 7"], newer[0])


def test_models_never_mix(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    with VectorCache(path, "local:a", 8) as a:
        a.put_many(["shared text"], _vectors(1, 8))
    with VectorCache(path, "hosted:b", 16) as b:
        assert b.get_many(["shared text"]) == {}
        b.put_many(["shared text"], _vectors(1, 16))
    with VectorCache(path, "local:a", 8) as a:
        assert a.get_many(["shared text"])["shared text"].shape == (8,)


def test_stored_dimension_mismatch_is_refused_at_open(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    VectorCache(path, "m", 8).close()
    with pytest.raises(DimensionMismatch) as info:
        VectorCache(path, "m", 16)
    assert (info.value.expected, info.value.got) == (8, 16)


def test_wrong_width_vectors_are_refused(tmp_path: Path) -> None:
    with VectorCache(tmp_path / "v.db", "m", 8) as cache:
        with pytest.raises(DimensionMismatch):
            cache.put_many(["x"], _vectors(1, 4))
        with pytest.raises(ValueError):
            cache.put_many(["x", "y"], _vectors(1, 8))


def test_corrupt_file_is_moved_aside_and_recreated(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    garbage = b"this is not sqlite at all" * 400
    path.write_bytes(garbage)
    with VectorCache(path, "m", 4) as cache:
        cache.put_many(["x"], _vectors(1, 4))
        assert "x" in cache.get_many(["x"])
    (aside,) = tmp_path.glob("vectors.db.corrupt-*")
    assert aside.read_bytes() == garbage


def test_writer_thread_and_reader_share_a_cache(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    with VectorCache(tmp_path / "v.db", "m", 4) as cache:

        def write() -> None:
            try:
                for i in range(50):
                    cache.put_many([f"t{i}"], _vectors(1, 4, seed=i))
            except BaseException as exc:
                errors.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        while writer.is_alive():
            cache.get_many([f"t{i}" for i in range(50)])
        writer.join()
        assert not errors
        assert len(cache.get_many([f"t{i}" for i in range(50)])) == 50


def test_a_cache_written_before_the_vector_store_port_keeps_its_vectors(tmp_path: Path) -> None:
    import hashlib
    import sqlite3

    path = tmp_path / "vectors.db"
    vector = _vectors(1, 4)[0]
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE models (model_id TEXT PRIMARY KEY, dim INTEGER NOT NULL);"
        "CREATE TABLE vectors (model_id TEXT NOT NULL, text_sha1 BLOB NOT NULL,"
        " vector BLOB NOT NULL, PRIMARY KEY (model_id, text_sha1)) WITHOUT ROWID;"
    )
    conn.execute("INSERT INTO models VALUES ('m', 4)")
    conn.execute(
        "INSERT INTO vectors VALUES ('m', ?, ?)",
        (hashlib.sha1(b"old text").digest(), vector.astype("<f4").tobytes()),
    )
    conn.commit()
    conn.close()
    with VectorCache(path, "m", 4) as cache:
        np.testing.assert_array_equal(cache.get_many(["old text"])["old text"], vector)
    with pytest.raises(DimensionMismatch):
        VectorCache(path, "m", 8)
