"""The vector-store port: what the memory asks of a store of vectors with payloads.

One store object is one collection of one dimension, cosine similarity. Ids are UUID strings
(what a Qdrant server accepts). Payload values are JSON scalars or lists of them. Adapters: the
embedded store (`knowledge.vectors.embedded`, nothing to run) and a Qdrant server
(`knowledge.vectors.qdrant`); both pass the same contract test.

`Filter` semantics, the same in every adapter: `must` keeps a point only when its payload has
the key with exactly that value (same JSON type: `false` is not `0`, and a point without the
key is not kept — a positive requirement); `must_not` drops a point whose payload has the key
with that value (a point without the key is not dropped). A list value matches when one of
its items does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from knowledge.core.errors import TheusError

Scalar = str | int | float | bool
Payload = Mapping[str, Scalar | list[Scalar] | None]
Vector = npt.NDArray[np.float32]


class VectorStoreUnavailable(TheusError):
    """The store cannot be reached or refused the operation (server down, file locked, disk
    full): reads fail open on it; consistency operations refuse and say so."""


class StoreMismatch(TheusError):
    """The collection holds vectors of another dimension than the embedder makes: refusing to
    start beats storing vectors nobody can search."""


@dataclass(frozen=True, slots=True)
class Filter:
    must: Mapping[str, Scalar] = field(default_factory=dict)
    must_not: Mapping[str, Scalar] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Point:
    id: str
    vector: Vector
    payload: Payload


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    score: float  # cosine similarity, higher is closer
    payload: Payload


class VectorStore(Protocol):
    dim: int

    def put(self, points: Sequence[Point]) -> None:
        """Insert or replace these points (by id)."""

    def get(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Point]:
        """The points of these ids that exist (order not kept); vectors empty unless asked."""

    def has(self, ids: Sequence[str]) -> set[str]:
        """Which of these ids the collection holds, as given (cheaper than `get`: no payload
        or vector is read)."""

    def set_payload(self, point_id: str, payload: Payload) -> bool:
        """Merge these keys into one point's payload; False when there is no such point."""

    def delete(self, ids: Sequence[str]) -> None:
        """Remove these points; ids that do not exist are not an error."""

    def nearest(
        self, vector: Vector, *, limit: int, where: Filter, threshold: float | None = None
    ) -> list[Hit]:
        """Up to `limit` points passing `where`, closest first; with `threshold`, only points
        at least that similar (the store applies it, not the caller)."""

    def count(self, where: Filter | None = None) -> int:
        """How many points (passing `where`) the collection holds."""

    def close(self) -> None:
        """Release the store; idempotent."""


def collection_name(base: str, model_id: str, dim: int) -> str:
    """The collection of `model_id`'s `dim`-dimensional vectors, in every adapter: the model id
    lowercased, each run of other characters than letters and digits one `-`
    (`theus_runs__local-minilm_384`)."""
    slug = re.sub(r"[^a-z0-9]+", "-", model_id.lower()).strip("-")
    return f"{base}__{slug}_{dim}"


def matches(payload: Payload, where: Filter) -> bool:
    """`Filter` semantics for adapters that filter in-process (see the module docstring)."""
    for key, value in where.must.items():
        if key not in payload or not _same(payload[key], value):
            return False
    return not any(
        key in payload and _same(payload[key], value) for key, value in where.must_not.items()
    )


def _same(have: object, want: Scalar) -> bool:
    if isinstance(have, list):  # a list matches when one of its items does, as in Qdrant
        return any(_same(item, want) for item in have)
    if isinstance(have, bool) or isinstance(want, bool):  # JSON: false is not 0 (unlike Python)
        return type(have) is type(want) and have == want
    return have == want
