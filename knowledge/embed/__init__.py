"""Embedders for the semantic recall layer: local ONNX, hosted OpenAI-compatible, and the
cascade that picks one. Importing this package loads no model and imports neither onnxruntime
nor openai; the adapters import them on first use."""

from knowledge.embed.base import (
    DimensionMismatch,
    Embedder,
    EmbedderUnavailable,
    EmbeddingError,
    EndpointError,
    EndpointTimeout,
    ModelIntegrityError,
    Vectors,
)
from knowledge.embed.cache import VectorCache
from knowledge.embed.select import Selection, select_embedder

__all__ = [
    "DimensionMismatch",
    "Embedder",
    "EmbedderUnavailable",
    "EmbeddingError",
    "EndpointError",
    "EndpointTimeout",
    "ModelIntegrityError",
    "Selection",
    "VectorCache",
    "Vectors",
    "select_embedder",
]
