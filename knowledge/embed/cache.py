"""Vector cache: the semantic layer's vectors, keyed by (model id, sha1 of the text), kept in the
embedded vector store (`knowledge.vectors`), one collection per model.

A collection records its dimension, so opening the cache with an embedder whose dimension
differs from what was stored is an error at start (`DimensionMismatch`), never silent garbage.
Vectors of different models share the file but are never returned for one another. It is only
a cache: a file the store cannot read is moved aside by the store and a fresh one created.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from knowledge.embed.base import DimensionMismatch
from knowledge.vectors.embedded import EmbeddedStore
from knowledge.vectors.port import Point, StoreMismatch, VectorStoreUnavailable


def text_key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()


def _point_id(text: str) -> str:
    return str(uuid.UUID(bytes=text_key(text)[:16]))


def collection(model_id: str) -> str:
    return f"text:{model_id}"


class VectorCache:
    """One model's view of the cache file. Safe to share between a background embedding thread
    and a reader (the store serialises its connection)."""

    def __init__(self, path: Path, model_id: str, dim: int) -> None:
        self.path = path
        self.model_id = model_id
        self.dim = dim
        try:
            self._store = EmbeddedStore(path, collection(model_id), dim)
        except StoreMismatch:
            stored = EmbeddedStore.existing(path, collection(model_id))
            raise DimensionMismatch(
                model_id, expected=stored.dim if stored else -1, got=dim
            ) from None

    def get_many(self, texts: Iterable[str]) -> dict[str, npt.NDArray[np.float32]]:
        """Cached vectors for those texts that have one, keyed by text."""
        by_id = {_point_id(t): t for t in texts}
        return {by_id[p.id]: p.vector for p in self._store.get(list(by_id), with_vectors=True)}

    def put_many(self, texts: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        """Store one vector per text (rows in the same order), replacing older ones."""
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ValueError(f"{len(texts)} texts but vectors of shape {vectors.shape}")
        if vectors.shape[1] != self.dim:
            raise DimensionMismatch(self.model_id, expected=self.dim, got=vectors.shape[1])
        self._store.put([Point(_point_id(t), v, {}) for t, v in zip(texts, vectors, strict=True)])

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> VectorCache:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def cached(
    path: Path, model_id: str, texts: Iterable[str] = ()
) -> tuple[int | None, int, set[str]]:
    """(stored dimension, vectors stored, which of `texts` have one) for `model_id`, read-only:
    never creates the file (`theus status`)."""
    try:
        store = EmbeddedStore.existing(path, collection(model_id))
    except VectorStoreUnavailable:
        store = None
    if store is None:
        return None, 0, set()
    try:
        by_id = {_point_id(t): t for t in texts}
        return store.dim, store.count(), {by_id[i] for i in store.has(list(by_id))}
    finally:
        store.close()
