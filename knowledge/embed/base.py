"""The embedder port and the typed errors every embedding adapter raises.

The recall layer catches `EmbeddingError` and carries on without the semantic layer (fail open),
so adapters translate whatever their backend throws into one of these.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from knowledge.core.errors import TheusError

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into float32 rows of unit L2 norm, one row per text, in input order."""

    @property
    def model_id(self) -> str:
        """Names the vector space: vectors with different ids must never be compared or mixed."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str], max_tokens: int | None = None) -> Vectors:
        """`max_tokens` bounds the model's work: only the first word pieces of each text are
        read (an embedder without a tokenizer of its own, a hosted one, may ignore it)."""
        ...

    def close(self) -> None:
        """Stop: work in progress ends with `EmbeddingError` as soon as it can, later calls
        are refused (a process must not exit while a runtime computes on another thread)."""
        ...


class EmbeddingError(TheusError):
    """Base of every failure of the semantic layer."""


class EmbedderUnavailable(EmbeddingError):
    """The embedder cannot be loaded (missing file, runtime error)."""


class ModelIntegrityError(EmbedderUnavailable):
    """A bundled or installed model file does not have its pinned sha256."""


class EndpointError(EmbeddingError):
    """A hosted `/embeddings` call failed: HTTP error, connection error or malformed answer."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EndpointTimeout(EndpointError):
    """A hosted `/embeddings` call did not answer within its timeout."""


class DimensionMismatch(EmbeddingError):
    """Vectors of one dimension met a model or a store that expects another."""

    def __init__(self, model_id: str, expected: int, got: int) -> None:
        super().__init__(f"{model_id}: expected {expected}-d vectors, got {got}-d")
        self.model_id = model_id
        self.expected = expected
        self.got = got


def encodable(text: str) -> str:
    """`text` with lone surrogates (from files decoded with surrogateescape) replaced by "?":
    tokenizers refuses them outright and JSON endpoints may reject them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def normalise_rows(matrix: npt.NDArray[np.floating]) -> Vectors:
    """L2-normalise each row; an all-zero row stays zero instead of becoming NaN."""
    rows = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    normalised: Vectors = (rows / np.maximum(norms, np.float32(1e-12))).astype(
        np.float32, copy=False
    )
    return normalised
