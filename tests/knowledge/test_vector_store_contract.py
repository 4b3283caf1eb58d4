"""One contract for every vector store adapter: the embedded store (SQLite + numpy) and the
Qdrant adapter against a real Qdrant server (tests/qdrant_server.py). Each case runs on both."""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from knowledge.vectors.embedded import EmbeddedStore
from knowledge.vectors.port import (
    Filter,
    Point,
    StoreMismatch,
    Vector,
    VectorStore,
    VectorStoreUnavailable,
    collection_name,
)
from knowledge.vectors.qdrant import QdrantStore
from tests.qdrant_server import free_port, qdrant_url  # noqa: F401  (the fixture

MODEL = "test/Model-A"


@dataclass
class Adapter:
    open: Callable[[int], VectorStore]  # the test's collection for vectors of this dimension
    # Make the collection that `open(dim)` opens already hold vectors of `other` dimensions.
    occupy: Callable[[int, int], None]


@pytest.fixture(params=["embedded", "qdrant"])
def adapter(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Adapter]:
    opened: list[VectorStore] = []

    def track(store: VectorStore) -> VectorStore:
        opened.append(store)
        return store

    if request.param == "embedded":
        path = tmp_path / "vectors.db"

        def occupy_embedded(dim: int, other: int) -> None:
            EmbeddedStore(path, "runs", other).close()

        yield Adapter(lambda dim: track(EmbeddedStore(path, "runs", dim)), occupy_embedded)
    else:
        url = request.getfixturevalue("qdrant_url")
        base = f"t{uuid.uuid4().hex[:12]}"  # one server per session: a fresh collection per test

        def occupy_qdrant(dim: int, other: int) -> None:
            create_collection(url, collection_name(base, MODEL, dim), other)

        yield Adapter(
            lambda dim: track(QdrantStore(url, collection_base=base, model_id=MODEL, dim=dim)),
            occupy_qdrant,
        )
    for store in opened:
        store.close()


def create_collection(url: str, name: str, dim: int) -> None:
    """A collection made by another client than the adapter."""
    client = QdrantClient(url=url, check_compatibility=False)
    try:
        client.create_collection(name, qm.VectorParams(size=dim, distance=qm.Distance.COSINE))
    finally:
        client.close()


def unit(*values: float) -> Vector:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def ids(n: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(n)]


def test_put_then_get_returns_payloads_and_vectors_only_when_asked(adapter: Adapter) -> None:
    store = adapter.open(4)
    a, b, missing = ids(3)
    store.put(
        [
            Point(a, unit(1, 0, 0, 0), {"project": "p", "n": 3, "tags": ["x", "y"]}),
            Point(b, unit(0, 1, 1, 0), {"project": "q", "note": None}),
        ]
    )
    got = {point.id: point for point in store.get([a, b, missing], with_vectors=True)}
    assert set(got) == {a, b}
    assert got[a].payload == {"project": "p", "n": 3, "tags": ["x", "y"]}
    assert got[b].payload == {"project": "q", "note": None}
    np.testing.assert_allclose(got[b].vector, unit(0, 1, 1, 0), atol=1e-6)
    (bare,) = store.get([a])
    assert bare.vector.size == 0 and bare.payload["project"] == "p"
    assert store.has([a, missing, b.upper()]) == {a, b.upper()}  # as given
    assert store.has([]) == set()


def test_put_replaces_a_point_with_the_same_id(adapter: Adapter) -> None:
    store = adapter.open(4)
    (a,) = ids(1)
    store.put([Point(a, unit(1, 0, 0, 0), {"project": "p", "old": True})])
    store.put([Point(a, unit(0, 0, 0, 1), {"project": "q"})])
    (point,) = store.get([a], with_vectors=True)
    assert point.payload == {"project": "q"}
    np.testing.assert_allclose(point.vector, unit(0, 0, 0, 1), atol=1e-6)
    assert store.count() == 1


def test_ids_are_uuids_in_canonical_form(adapter: Adapter) -> None:
    store = adapter.open(4)
    upper = str(uuid.uuid4()).upper()
    store.put([Point(upper, unit(1, 0, 0, 0), {})])
    assert [point.id for point in store.get([upper])] == [upper.lower()]
    with pytest.raises(ValueError, match="UUID"):
        store.put([Point("run-1", unit(1, 0, 0, 0), {})])


def test_a_vector_of_another_dimension_is_refused(adapter: Adapter) -> None:
    store = adapter.open(4)
    with pytest.raises(StoreMismatch):
        store.put([Point(ids(1)[0], unit(1, 0, 0), {})])
    assert store.count() == 0


def test_set_payload_merges_and_says_false_for_a_missing_id(adapter: Adapter) -> None:
    store = adapter.open(4)
    a, missing = ids(2)
    store.put([Point(a, unit(1, 0, 0, 0), {"project": "p", "invalid": False})])
    assert store.set_payload(a, {"invalid": True, "score": 0.5}) is True
    (point,) = store.get([a])
    assert point.payload == {"project": "p", "invalid": True, "score": 0.5}
    assert store.set_payload(missing, {"invalid": True}) is False
    assert store.get([missing]) == [] and store.count() == 1


def test_delete_removes_by_id_and_ignores_missing_ids(adapter: Adapter) -> None:
    store = adapter.open(4)
    a, b, missing = ids(3)
    store.put([Point(a, unit(1, 0, 0, 0), {}), Point(b, unit(0, 1, 0, 0), {})])
    store.delete([a, missing])
    assert [point.id for point in store.get([a, b])] == [b]
    store.delete([])
    assert store.count() == 1


def test_count_with_and_without_a_filter(adapter: Adapter) -> None:
    store = adapter.open(4)
    store.put(
        [
            Point(i, unit(1, n, 0, 0), {"project": "p" if n < 3 else "q", "invalid": n == 1})
            for n, i in enumerate(ids(5))
        ]
    )
    assert store.count() == 5
    assert store.count(Filter(must={"project": "p"})) == 3
    assert store.count(Filter(must={"project": "p", "invalid": False})) == 2
    assert store.count(Filter(must_not={"project": "p"})) == 2


def test_nearest_orders_by_similarity_and_keeps_the_limit(adapter: Adapter) -> None:
    store = adapter.open(4)
    far, near, nearest, other = ids(4)
    store.put(
        [
            Point(far, unit(1, 1, 1, 0), {}),
            Point(nearest, unit(1, 0.1, 0, 0), {}),
            Point(near, unit(1, 0.5, 0, 0), {}),
            Point(other, unit(0, 0, 0, 1), {}),
        ]
    )
    hits = store.nearest(unit(1, 0, 0, 0), limit=3, where=Filter())
    assert [hit.id for hit in hits] == [nearest, near, far]
    expected = [unit(1, 0.1, 0, 0)[0], unit(1, 0.5, 0, 0)[0], unit(1, 1, 1, 0)[0]]  # cosines
    np.testing.assert_allclose([hit.score for hit in hits], expected, atol=1e-5)
    assert [hit.id for hit in store.nearest(unit(1, 0, 0, 0), limit=1, where=Filter())] == [nearest]


def test_a_query_with_no_direction_or_no_room_finds_nothing(adapter: Adapter) -> None:
    store = adapter.open(4)
    store.put([Point(ids(1)[0], unit(1, 0, 0, 0), {})])
    assert store.nearest(np.zeros(4, dtype=np.float32), limit=3, where=Filter()) == []
    assert store.nearest(unit(1, 0, 0, 0), limit=0, where=Filter()) == []
    assert len(store.nearest(unit(1, 0, 0, 0), limit=3, where=Filter())) == 1


def test_the_store_applies_the_threshold(adapter: Adapter) -> None:
    store = adapter.open(4)
    close, loose = ids(2)
    store.put(
        [
            Point(close, unit(1, 0.2, 0, 0), {"project": "p"}),  # cosine 0.98 to the query
            Point(loose, unit(1, 1, 0, 0), {"project": "p"}),
        ]
    )  # cosine 0.71
    where = Filter(must={"project": "p"})
    assert [
        hit.id for hit in store.nearest(unit(1, 0, 0, 0), limit=5, where=where, threshold=0.85)
    ] == [close]
    assert len(store.nearest(unit(1, 0, 0, 0), limit=5, where=where, threshold=0.5)) == 2


def test_must_invalid_false_keeps_only_points_whose_flag_is_exactly_false(adapter: Adapter) -> None:
    store = adapter.open(4)
    valid, zero, unflagged, invalid, other_project = ids(5)
    store.put(
        [
            Point(valid, unit(1, 0, 0, 0), {"project": "p", "invalid": False}),
            Point(zero, unit(1, 0, 0, 0), {"project": "p", "invalid": 0}),
            Point(unflagged, unit(1, 0, 0, 0), {"project": "p"}),
            Point(invalid, unit(1, 0, 0, 0), {"project": "p", "invalid": True}),
            Point(other_project, unit(1, 0, 0, 0), {"project": "q", "invalid": False}),
        ]
    )
    where = Filter(must={"project": "p", "invalid": False})
    assert [hit.id for hit in store.nearest(unit(1, 0, 0, 0), limit=10, where=where)] == [valid]
    assert store.count(where) == 1


def test_must_not_drops_a_lineage_and_keeps_points_without_one(adapter: Adapter) -> None:
    store = adapter.open(4)
    mine, in_list, theirs, no_lineage = ids(4)
    own, other = ids(2)
    store.put(
        [
            Point(mine, unit(1, 0, 0, 0), {"lineage": own}),
            Point(in_list, unit(1, 0, 0, 0), {"lineage": [other, own]}),
            Point(theirs, unit(1, 0, 0, 0), {"lineage": other}),
            Point(no_lineage, unit(1, 0, 0, 0), {}),
        ]
    )
    hits = store.nearest(unit(1, 0, 0, 0), limit=10, where=Filter(must_not={"lineage": own}))
    assert {hit.id for hit in hits} == {theirs, no_lineage}


def test_a_collection_of_another_dimension_is_refused(adapter: Adapter) -> None:
    adapter.occupy(4, 8)
    with pytest.raises(StoreMismatch, match="8"):
        adapter.open(4)


# -- the Qdrant adapter only: what a server that is not there, or not well, does -----------


def test_qdrant_collection_is_per_model_and_dim_with_the_filter_indexes(qdrant_url: str) -> None:  # noqa: F811
    base = f"t{uuid.uuid4().hex[:12]}"
    create_collection(qdrant_url, collection_name(base, MODEL, 8), 8)  # made without indexes
    for dim in (4, 8):
        store = QdrantStore(qdrant_url, collection_base=base, model_id=MODEL, dim=dim)
        # A write that waits: the queued index creations before it are applied by then.
        store.put([Point(ids(1)[0], unit(*[1.0] * dim), {})])
        store.close()
    client = QdrantClient(url=qdrant_url, check_compatibility=False)
    try:
        names = {c.name for c in client.get_collections().collections if c.name.startswith(base)}
        assert names == {f"{base}__test-model-a_4", f"{base}__test-model-a_8"}
        for name in names:
            info = client.get_collection(name)
            assert info.config.params.vectors == qm.VectorParams(
                size=int(name[-1]), distance=qm.Distance.COSINE
            )
            schema = {key: index.data_type for key, index in info.payload_schema.items()}
            assert schema == {
                "project": qm.PayloadSchemaType.KEYWORD,
                "lineage": qm.PayloadSchemaType.KEYWORD,
                "invalid": qm.PayloadSchemaType.BOOL,
            }
    finally:
        client.close()


def test_qdrant_mismatch_says_what_and_what_to_do(qdrant_url: str) -> None:  # noqa: F811
    base = f"t{uuid.uuid4().hex[:12]}"
    create_collection(qdrant_url, collection_name(base, MODEL, 4), 8)
    with pytest.raises(StoreMismatch) as raised:
        QdrantStore(qdrant_url, collection_base=base, model_id=MODEL, dim=4)
    message = str(raised.value)
    assert f"{base}__test-model-a_4" in message and "8-d" in message and "4-d" in message
    assert "\n" not in message and "delete the collection" in message


@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
def test_qdrant_down_is_store_unavailable_with_the_url_and_no_key() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there any more
    with pytest.raises(VectorStoreUnavailable) as raised:
        QdrantStore(
            url, api_key="sekrit-key-123", collection_base="t", model_id=MODEL, dim=4, timeout=1
        )
    assert url in str(raised.value) and "sekrit" not in str(raised.value)


def test_qdrant_that_never_answers_times_out_as_store_unavailable() -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does) but never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(VectorStoreUnavailable, match=r"127\.0\.0\.1"):
            QdrantStore(url, collection_base="t", model_id=MODEL, dim=4, timeout=1)


@pytest.mark.parametrize("status", [503, 429])
def test_qdrant_http_errors_are_store_unavailable(status: int) -> None:
    class Failing(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Retry-After", "1")
            self.end_headers()
            self.wfile.write(b"overloaded")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://user:pw@127.0.0.1:{server.server_address[1]}"
        with pytest.raises(VectorStoreUnavailable) as raised:
            QdrantStore(url, collection_base="t", model_id=MODEL, dim=4, timeout=1)
        assert "127.0.0.1" in str(raised.value) and "pw@" not in str(raised.value)
    finally:
        server.shutdown()
        server.server_close()
