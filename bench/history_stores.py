"""Vector stores for the run history, measured (a benchmark, not a test).

    python bench/history_stores.py [--points 10000 100000] [--queries 200] [--runs 3]
        [--engines embedded qdrant edge]

For each engine and size: random 384-d unit vectors with run-history payloads (`project`, one
of 10; `invalid`, true for 10%; `lineage`, a UUID) inserted in batches of 1000, then filtered
nearest searches as a run's retrieval makes them (must project and invalid false, must_not one
lineage, limit 3, threshold 0.2). Runs come in clusters of related requests (see `make_data`),
so a query has a few true matches above the threshold.

Engines: `embedded` is knowledge.vectors.embedded (SQLite + exact numpy search); `qdrant` is
knowledge.vectors.qdrant against a real Qdrant server (the binary tests/qdrant_server.py
installs, on loopback); `edge` is qdrant-edge-py (Qdrant's in-process engine, `bench` extra)
through the thin adapter below. "insert" is the wall time of the batched puts; "ready" adds
what the engine needs before searches use its index (Qdrant builds HNSW in the background and
reports green; edge runs `optimize()`, and `edge-raw` rows are the same shard searched before
it; booleans go to edge as keywords, see `_edge_value`). "recall" is the share of the exact
top-3 ids (numpy over the same points) found, "hits/q" the hits a query returned. Latencies
are wall-clock on a shared 2-core machine; figures are the median over `--runs`, the minimum
in brackets. At 100k points the server's HNSW build and edge's `optimize()` take minutes each
on 2 cores: the default command runs for about an hour.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import qdrant_edge as edge
from qdrant_client import QdrantClient
from qdrant_client import models as qm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from entrypoint.settings import apply as apply_settings
from knowledge.vectors.embedded import EmbeddedStore
from knowledge.vectors.port import Filter, Hit, Point, Vector
from knowledge.vectors.qdrant import QdrantStore
from tests.qdrant_server import running_qdrant

DIM = 384
BATCH = 1000
PROJECTS = 10
CLUSTER = 20
LIMIT = 3
THRESHOLD = 0.2

V = TypeVar("V")


@dataclass
class Data:
    ids: list[str]
    vectors: np.ndarray
    payloads: list[dict[str, str | bool]]
    queries: np.ndarray
    filters: list[Filter]


def make_data(points: int, queries: int, seed: int) -> Data:
    """Clusters of `CLUSTER` related runs in one project each (cosine ~0.5 between two of a
    cluster, ~0 across); each query is a new request of a cluster that excludes the lineage of
    one of the cluster's runs (its own earlier run)."""
    rng = np.random.default_rng(seed)

    def unit_rows(rows: np.ndarray) -> np.ndarray:
        unit: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return unit

    centres = unit_rows(rng.standard_normal((-(-points // CLUSTER), DIM), dtype=np.float32))
    cluster = np.arange(points) // CLUSTER
    vectors = unit_rows(
        centres[cluster] + unit_rows(rng.standard_normal((points, DIM), dtype=np.float32))
    )
    payloads: list[dict[str, str | bool]] = [
        {
            "project": f"p{c % PROJECTS}",
            "invalid": bool(rng.random() < 0.1),
            "lineage": str(uuid.UUID(bytes=rng.bytes(16))),
        }
        for c in cluster
    ]
    asked = rng.integers(len(centres), size=queries)
    query_vectors = unit_rows(
        centres[asked] + unit_rows(rng.standard_normal((queries, DIM), dtype=np.float32))
    )
    filters = []
    for c in asked:
        own = int(rng.integers(c * CLUSTER, min((c + 1) * CLUSTER, points)))
        filters.append(
            Filter(
                must={"project": f"p{c % PROJECTS}", "invalid": False},
                must_not={"lineage": payloads[own]["lineage"]},
            )
        )
    ids = [str(uuid.UUID(bytes=rng.bytes(16))) for _ in range(points)]
    return Data(ids, vectors, payloads, query_vectors, filters)


def exact_top(data: Data) -> list[set[str]]:
    """The true top-`LIMIT` ids over the threshold of every query: numpy, every point."""
    project = np.array([p["project"] for p in data.payloads])
    valid = ~np.array([p["invalid"] for p in data.payloads])
    lineage = np.array([p["lineage"] for p in data.payloads])
    tops = []
    for query, where in zip(data.queries, data.filters, strict=True):
        keep = (project == where.must["project"]) & valid & (lineage != where.must_not["lineage"])
        scores = np.where(keep, data.vectors @ query, -np.inf)
        best = np.argsort(-scores)[:LIMIT]
        tops.append({data.ids[i] for i in best if scores[i] >= THRESHOLD})
    return tops


def _edge_value(value: V) -> V | str:
    # qdrant-edge-py 0.9.0 turns MatchValue(False) into MatchValue(0): it matches `0` and never
    # `false`, so booleans travel as the keywords "true"/"false" here (same selectivity).
    return str(value).lower() if isinstance(value, bool) else value


class EdgeStore:
    """The two calls the benchmark makes, over a qdrant-edge shard (not the whole port)."""

    def __init__(self, path: Path) -> None:
        self.shard = edge.EdgeShard.create(
            str(path),
            edge.EdgeConfig(vectors=edge.EdgeVectorParams(size=DIM, distance=edge.Distance.Cosine)),
        )
        for key, schema in (
            ("project", edge.PayloadSchemaType.Keyword),
            ("lineage", edge.PayloadSchemaType.Keyword),
            ("invalid", edge.PayloadSchemaType.Keyword),
        ):
            self.shard.update(edge.UpdateOperation.create_field_index(key, schema))

    def put(self, points: list[Point]) -> None:
        self.shard.update(
            edge.UpdateOperation.upsert_points(
                [
                    edge.Point(
                        p.id, p.vector.tolist(), {k: _edge_value(v) for k, v in p.payload.items()}
                    )
                    for p in points
                ]
            )
        )

    def nearest(
        self, vector: Vector, *, limit: int, where: Filter, threshold: float | None = None
    ) -> list[Hit]:
        def condition(key: str, value: str | int | float | bool) -> edge.FieldCondition:
            assert not isinstance(value, float)
            return edge.FieldCondition(key=key, match=edge.MatchValue(_edge_value(value)))

        query = edge.QueryRequest(
            limit=limit,
            query=edge.Query.Nearest(vector.tolist()),
            with_payload=True,
            score_threshold=threshold,
            filter=edge.Filter(
                must=[condition(k, v) for k, v in where.must.items()],
                must_not=[condition(k, v) for k, v in where.must_not.items()],
            ),
        )
        return [Hit(str(p.id), p.score, p.payload or {}) for p in self.shard.query(query)]

    def close(self) -> None:
        self.shard.close()


@dataclass
class Row:
    engine: str
    points: int
    insert: float
    ready: float
    p50_ms: float
    p95_ms: float
    recall: float
    hits: float


def insert(store: EmbeddedStore | QdrantStore | EdgeStore, data: Data) -> float:
    started = time.perf_counter()
    for start in range(0, len(data.ids), BATCH):
        store.put(
            [
                Point(data.ids[i], data.vectors[i], data.payloads[i])
                for i in range(start, min(start + BATCH, len(data.ids)))
            ]
        )
    return time.perf_counter() - started


def search(
    engine: str,
    store: EmbeddedStore | QdrantStore | EdgeStore,
    data: Data,
    exact: list[set[str]],
    points: int,
    insert_s: float,
    ready_s: float,
) -> Row:
    latencies, found, wanted, hits = [], 0, 0, 0
    for query, where, top in zip(data.queries, data.filters, exact, strict=True):
        started = time.perf_counter()
        result = store.nearest(query, limit=LIMIT, where=where, threshold=THRESHOLD)
        latencies.append((time.perf_counter() - started) * 1000)
        ids = {hit.id for hit in result}
        found, wanted, hits = found + len(ids & top), wanted + len(top), hits + len(result)
    p50, p95 = np.percentile(latencies, [50, 95])
    return Row(
        engine,
        points,
        insert_s,
        ready_s,
        float(p50),
        float(p95),
        found / wanted if wanted else 1.0,
        hits / len(data.queries),
    )


def run_embedded(data: Data, exact: list[set[str]], folder: Path, _url: str) -> list[Row]:
    store = EmbeddedStore(folder / "vectors.db", "runs", DIM)
    try:
        took = insert(store, data)
        started = time.perf_counter()
        store.count(Filter(must={"invalid": False}))  # loads the matrix, as the first search does
        ready = took + time.perf_counter() - started
        return [search("embedded", store, data, exact, len(data.ids), took, ready)]
    finally:
        store.close()


def run_qdrant(data: Data, exact: list[set[str]], folder: Path, url: str) -> list[Row]:
    base = f"bench{uuid.uuid4().hex[:8]}"
    store = QdrantStore(url, collection_base=base, model_id="bench", dim=DIM, timeout=60)
    client = QdrantClient(url=url, check_compatibility=False)
    try:
        took = insert(store, data)
        started = time.perf_counter()
        ready_since = None  # green with the same indexed count twice, 0.5 s apart: settled
        while True:
            info = client.get_collection(store.collection)
            state = (info.status, info.indexed_vectors_count)
            if state[0] == qm.CollectionStatus.GREEN and state == ready_since:
                break
            ready_since = state
            time.sleep(0.5)
        ready = took + time.perf_counter() - started - 0.5  # less the confirming poll
        return [search("qdrant", store, data, exact, len(data.ids), took, ready)]
    finally:
        client.delete_collection(store.collection)
        client.close()
        store.close()


def run_edge(data: Data, exact: list[set[str]], folder: Path, _url: str) -> list[Row]:
    store = EdgeStore(folder / "edge")
    try:
        took = insert(store, data)
        raw = search("edge-raw", store, data, exact, len(data.ids), took, took)
        started = time.perf_counter()
        store.shard.optimize()
        ready = took + time.perf_counter() - started
        return [raw, search("edge", store, data, exact, len(data.ids), took, ready)]
    finally:
        store.close()


ENGINES: dict[str, Callable[[Data, list[set[str]], Path, str], list[Row]]] = {
    "embedded": run_embedded,
    "qdrant": run_qdrant,
    "edge": run_edge,
}


@contextmanager
def no_server() -> Iterator[str]:
    yield ""


def main(argv: list[str] | None = None) -> None:
    apply_settings({}, os.environ)  # as `theus` does at start
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engines", nargs="+", choices=list(ENGINES), default=list(ENGINES))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="theus-bench-") as tmp:
        server: AbstractContextManager[str] = (
            running_qdrant(Path(tmp)) if "qdrant" in args.engines else no_server()
        )
        with server as url:
            rows: dict[tuple[str, int], list[Row]] = {}
            for points in args.points:
                for run in range(args.runs):
                    data = make_data(points, args.queries, seed=run)
                    exact = exact_top(data)
                    for name in args.engines:
                        folder = Path(tmp) / f"{name}-{points}-{run}"
                        folder.mkdir()
                        for row in ENGINES[name](data, exact, folder, url):
                            rows.setdefault((row.engine, points), []).append(row)
                            print(f"  run {run + 1}: {row}", file=sys.stderr, flush=True)
                        shutil.rmtree(folder)
    print(
        f"\n{args.queries} filtered queries (limit {LIMIT}, threshold {THRESHOLD}), "
        f"{DIM}-d, batches of {BATCH}; median of {args.runs} runs [min]"
    )
    print(
        f"{'engine':<9} {'points':>7} {'insert s':>15} {'ready s':>15} {'p50 ms':>13} "
        f"{'p95 ms':>13} {'recall':>6} {'hits/q':>6}"
    )
    for (engine, points), runs in rows.items():

        def cell(values: list[float], digits: int) -> str:
            return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}]"

        print(
            f"{engine:<9} {points:>7} {cell([r.insert for r in runs], 2):>15} "
            f"{cell([r.ready for r in runs], 2):>15} {cell([r.p50_ms for r in runs], 2):>13} "
            f"{cell([r.p95_ms for r in runs], 2):>13} "
            f"{statistics.median(r.recall for r in runs):>6.3f} "
            f"{statistics.median(r.hits for r in runs):>6.2f}"
        )


if __name__ == "__main__":
    main()
