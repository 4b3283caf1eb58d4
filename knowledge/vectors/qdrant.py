"""The Qdrant server adapter: one collection of a Qdrant server through `qdrant-client` (REST).

For a team sharing its run history. One collection per embedding model and dimension, since
vectors of different models are not comparable: `f"{base}__{slug(model_id)}_{dim}"`, where the
slug is the model id lowercased with every run of characters other than letters and digits made
one `-` (`theus_runs__minilm-l6-v2_384`). The collection is created when missing (cosine, with
payload indexes for the filters every search uses: `project`, `lineage` keyword, `invalid`
bool); one that exists with another vector size or distance raises `StoreMismatch`, so nothing
is ever stored that a search could not find.

The constructor connects (a short timeout), so a server that is down raises `VectorStoreUnavailable`
there, as does every later failure to reach it or a request it refuses; messages carry the URL,
never the API key. Qdrant keeps cosine vectors normalised, so `get(with_vectors=True)` returns
unit vectors. Point ids are UUID strings (anything else is a ValueError), returned in their
canonical lowercase form.
"""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.common.client_exceptions import QdrantException
from qdrant_client.http.exceptions import ApiException

from knowledge.vectors.port import (
    Filter,
    Hit,
    Payload,
    Point,
    Scalar,
    StoreMismatch,
    Vector,
    VectorStoreUnavailable,
    collection_name,
)

DEFAULT_TIMEOUT = 5  # seconds; qdrant-client takes whole seconds
# Keyword or bool indexes on the keys every history search filters on.
_INDEXES = {
    "project": qm.PayloadSchemaType.KEYWORD,
    "lineage": qm.PayloadSchemaType.KEYWORD,
    "invalid": qm.PayloadSchemaType.BOOL,
}
_T = TypeVar("_T")


class QdrantStore:
    """The `VectorStore` port over one collection of the Qdrant server at `url`."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        collection_base: str,
        model_id: str,
        dim: int,
        timeout: int = DEFAULT_TIMEOUT,
    ) -> None:
        self.dim = dim
        self.collection = collection_name(collection_base, model_id, dim)
        self._where = _without_credentials(url)
        # No version check: it costs a request and warns on any skew; the calls used here are
        # in every server since 1.10.
        self._client = QdrantClient(
            url=url, api_key=api_key, timeout=timeout, check_compatibility=False
        )
        try:
            self._call(self._ensure_collection)
        except BaseException:
            self._client.close()
            raise

    def _ensure_collection(self) -> None:
        if not self._client.collection_exists(self.collection):
            try:
                self._client.create_collection(
                    self.collection,
                    vectors_config=qm.VectorParams(size=self.dim, distance=qm.Distance.COSINE),
                )
            except ApiException:
                if not self._client.collection_exists(self.collection):
                    raise  # not another client creating it at the same moment
        info = self._client.get_collection(self.collection)
        params = info.config.params.vectors
        if not isinstance(params, qm.VectorParams):
            raise StoreMismatch(
                f"Qdrant collection {self.collection!r} at {self._where} has "
                "named vectors, not one: use a collection Theus made"
            )
        if params.size != self.dim or params.distance != qm.Distance.COSINE:
            raise StoreMismatch(
                f"Qdrant collection {self.collection!r} at {self._where} holds "
                f"{params.size}-d {params.distance.value} vectors but the embedder makes "
                f"{self.dim}-d cosine ones: use the model that filled it, or delete the "
                "collection to start a new one"
            )
        for key, schema in _INDEXES.items():  # also after a start that stopped half-way
            if key not in (info.payload_schema or {}):  # queued: later requests come after
                self._client.create_payload_index(
                    self.collection, key, field_schema=schema, wait=False
                )

    # -- the port --------------------------------------------------------------------------

    def put(self, points: Sequence[Point]) -> None:
        for point in points:
            if np.shape(point.vector) != (self.dim,):
                raise StoreMismatch(
                    f"a {np.shape(point.vector)}-shaped vector for the "
                    f"{self.dim}-d collection {self.collection!r}"
                )
        structs = [
            qm.PointStruct(
                id=_id(point.id),
                vector=np.asarray(point.vector, float).tolist(),
                payload=dict(point.payload),
            )
            for point in points
        ]
        if structs:
            self._call(lambda: self._client.upsert(self.collection, structs, wait=True))

    def get(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Point]:
        if not ids:
            return []
        records = self._call(
            lambda: self._client.retrieve(
                self.collection, [_id(i) for i in ids], with_payload=True, with_vectors=with_vectors
            )
        )
        return [
            Point(str(record.id), _vector(record.vector), _payload(record.payload))
            for record in records
        ]

    def has(self, ids: Sequence[str]) -> set[str]:
        given = {_id(i): i for i in ids}
        if not given:
            return set()
        records = self._call(
            lambda: self._client.retrieve(
                self.collection, list(given), with_payload=False, with_vectors=False
            )
        )
        return {given[str(record.id)] for record in records if str(record.id) in given}

    def set_payload(self, point_id: str, payload: Payload) -> bool:
        # Asked first: the server answers 404 for a missing id, which is not "unavailable".
        key = _id(point_id)
        if not self._call(
            lambda: self._client.retrieve(self.collection, [key], with_payload=False)
        ):
            return False
        self._call(
            lambda: self._client.set_payload(
                self.collection, dict(payload), points=[key], wait=True
            )
        )
        return True

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._call(
                lambda: self._client.delete(
                    self.collection, qm.PointIdsList(points=[_id(i) for i in ids]), wait=True
                )
            )

    def nearest(
        self, vector: Vector, *, limit: int, where: Filter, threshold: float | None = None
    ) -> list[Hit]:
        query = np.asarray(vector, float)
        if query.shape != (self.dim,) or not query.any() or limit <= 0:
            return []  # as the embedded store: no direction, nothing near it
        response = self._call(
            lambda: self._client.query_points(
                self.collection,
                query=query.tolist(),
                query_filter=_filter(where),
                limit=limit,
                score_threshold=threshold,
                with_payload=True,
            )
        )
        return [
            Hit(str(found.id), float(found.score), _payload(found.payload))
            for found in response.points
        ]

    def count(self, where: Filter | None = None) -> int:
        query_filter = None if where is None else _filter(where)
        return self._call(
            lambda: self._client.count(self.collection, count_filter=query_filter, exact=True)
        ).count

    def close(self) -> None:
        self._client.close()

    # -- plumbing --------------------------------------------------------------------------

    def _call(self, request: Callable[[], _T]) -> _T:
        """`request()`, with a server that cannot be reached or refuses as
        `VectorStoreUnavailable`."""
        # Connection errors come wrapped in ApiException; a 429 (rate limit) is a QdrantException.
        try:
            return request()
        except (ApiException, QdrantException) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise VectorStoreUnavailable(f"Qdrant at {self._where}: {reason}") from exc


def _id(point_id: str) -> str:
    """The canonical form of a UUID point id (as the embedded store returns it)."""
    try:
        return str(uuid.UUID(point_id))
    except ValueError as exc:
        raise ValueError(f"point ids are UUIDs, not {point_id!r}") from exc


def _filter(where: Filter) -> qm.Filter:
    return qm.Filter(
        must=[_condition(k, v) for k, v in where.must.items()],
        must_not=[_condition(k, v) for k, v in where.must_not.items()],
    )


def _condition(key: str, value: Scalar) -> qm.FieldCondition:
    if isinstance(value, float):  # MatchValue takes str, int and bool; a float is a point range
        return qm.FieldCondition(key=key, range=qm.Range(gte=value, lte=value))
    return qm.FieldCondition(key=key, match=qm.MatchValue(value=value))


def _vector(raw: object) -> Vector:
    if isinstance(raw, list) and all(isinstance(x, float | int) for x in raw):
        return np.asarray(raw, dtype=np.float32)
    return np.zeros(0, dtype=np.float32)  # not asked for


def _payload(raw: Mapping[str, object] | None) -> Payload:
    """A payload as the port types it; nested objects (never written by Theus) are left out."""
    payload: dict[str, Scalar | list[Scalar] | None] = {}
    for key, value in (raw or {}).items():
        if value is None or isinstance(value, str | int | float | bool):
            payload[key] = value
        elif isinstance(value, list):
            items = [x for x in value if isinstance(x, str | int | float | bool)]
            if len(items) == len(value):
                payload[key] = items
    return payload


def _without_credentials(url: str) -> str:
    """`url` without a `user:password@` part, for messages."""
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
