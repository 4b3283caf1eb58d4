"""A local hash embedding: words and character trigrams hashed into a small sparse vector.

Costs microseconds and needs no model. It only breaks ties between candidates that already
share a keyword with the request (``HASH_WEIGHT`` of the score): trigrams make "parsing" close
to "parser", but on its own such a vector would match noise, so it never creates a hit.
"""

from __future__ import annotations

import zlib
from functools import lru_cache

import numpy as np

from knowledge.recall.tokens import fold, split_words

DIM = 256
HASH_WEIGHT = 0.2

Vector = np.ndarray


def _bucket(feature: str) -> int:
    return zlib.crc32(feature.encode()) % DIM


@lru_cache(maxsize=65536)
def _features(word: str) -> tuple[int, ...]:
    """Buckets of a word: the whole word twice (it weighs double), then its trigrams."""
    padded = f"^{fold(word)}$"
    whole = _bucket("w:" + padded)
    return (whole, whole, *(_bucket(padded[i : i + 3]) for i in range(len(padded) - 2)))


def embed(text: str) -> Vector:
    """L2-normalised bag of hashed features."""
    buckets = [b for w in split_words(text[:2000]) if len(w) > 1 for b in _features(w)]
    vec = np.bincount(buckets, minlength=DIM).astype(np.float32)
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm else vec


def cosines(query: Vector, rows: list[Vector]) -> list[float]:
    """Cosine of `query` with each row, clipped to [0, 1]."""
    if not rows:
        return []
    scores: list[float] = np.clip(np.stack(rows) @ query, 0.0, 1.0).tolist()
    return scores
