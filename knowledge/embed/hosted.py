"""Hosted embedder: any OpenAI-compatible `/embeddings` endpoint, through the `openai` client.

The client is built (and `openai` imported, ~0.6 s) on the first call, so choosing this
embedder costs nothing and touches no network. The dimension is learned from the first answer
and every later answer must match it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import numpy as np

from knowledge.core.redact import redact
from knowledge.embed.base import (
    DimensionMismatch,
    EndpointError,
    EndpointTimeout,
    Vectors,
    encodable,
    normalise_rows,
)

if TYPE_CHECKING:
    import openai

DEFAULT_TIMEOUT = 10.0
# Well under the 2048 inputs per request the OpenAI API accepts; smaller requests also keep
# one slow batch from holding the whole index pass.
BATCH_SIZE = 128
# The openai client insists on a key; servers that need none ignore this one. Passing our own
# value also stops the client from falling back to OPENAI_API_KEY and sending that key to an
# endpoint it was not meant for.
_NO_KEY = "unused"


def hosted_model_id(base_url: str, model: str) -> str:
    """Vector-space id: the same model name on two servers may be two different models."""
    parts = urlsplit(base_url)
    # hostname/port, not netloc: credentials embedded in the URL must not end up in the cache.
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"hosted:{host}{parts.path.rstrip('/')}:{model}"


class HostedEmbedder:
    """Embeddings from an OpenAI-compatible server; raises `EndpointError` subclasses."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = 1,
        dim: int | None = None,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.api_key = api_key
        self._timeout = timeout
        self._max_retries = max_retries
        self._dim = dim
        self._client: openai.OpenAI | None = None
        self._closed = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HostedEmbedder({self.base_url!r}, model={self.model!r})"

    @property
    def model_id(self) -> str:
        return hosted_model_id(self.base_url, self.model)

    @property
    def dim(self) -> int:
        """The model's dimension; if no answer was seen yet, one short probe request learns it."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: list[str], max_tokens: int | None = None) -> Vectors:
        # No tokenizer here: a request's cost is the server's, its text already cut by length.
        rows = [
            self._embed_batch(texts[i : i + BATCH_SIZE]) for i in range(0, len(texts), BATCH_SIZE)
        ]
        if not rows:
            return np.empty((0, self._dim or 0), dtype=np.float32)
        return np.concatenate(rows)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _get_client(self) -> openai.OpenAI:
        with self._lock:
            if self._closed:
                raise EndpointError(f"{self.base_url}: embedder closed")
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    base_url=self.base_url,
                    api_key=self.api_key or _NO_KEY,
                    timeout=self._timeout,
                    max_retries=self._max_retries,
                )
            return self._client

    def _embed_batch(self, texts: list[str]) -> Vectors:
        import openai

        client = self._get_client()
        # The API rejects empty strings; a blank embeds as "nothing" just the same.
        # Nothing secret leaves the machine; the cache keeps the original texts' digests.
        inputs = [encodable(redact(t)) if t.strip() else " " for t in texts]
        try:
            # "float", not the client's default base64: every compatible server speaks it.
            response = client.embeddings.create(
                model=self.model, input=inputs, encoding_format="float"
            )
        except openai.APITimeoutError as exc:
            raise EndpointTimeout(f"{self.base_url}: no answer within {self._timeout:g}s") from exc
        except openai.APIStatusError as exc:
            raise EndpointError(
                f"{self.base_url}: HTTP {exc.status_code} from /embeddings", exc.status_code
            ) from exc
        except openai.OpenAIError as exc:
            raise EndpointError(f"{self.base_url}: {exc}") from exc
        except ValueError as exc:  # a body that is not JSON at all
            raise EndpointError(f"{self.base_url}: not an embeddings answer ({exc})") from exc
        data = getattr(response, "data", None)
        if not isinstance(data, list):  # an HTML page or a proxy's error, parsed as a string
            raise EndpointError(
                f"{self.base_url}: not an embeddings answer (got "
                f"{type(response).__name__}); check THEUS_EMBEDDINGS_URL"
            )
        return self._check(data, len(texts))

    def _check(self, data: list[openai.types.Embedding], expected_rows: int) -> Vectors:
        if len(data) != expected_rows:
            raise EndpointError(
                f"{self.base_url}: {len(data)} embeddings for {expected_rows} inputs"
            )
        try:
            ordered = sorted(data, key=lambda item: item.index)
            matrix = np.array([item.embedding for item in ordered], dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EndpointError(f"{self.base_url}: malformed embeddings: {exc}") from exc
        if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
            raise EndpointError(f"{self.base_url}: malformed embeddings")
        got = matrix.shape[1]
        with self._lock:
            if self._dim is None:
                self._dim = got
        if got != self._dim:
            raise DimensionMismatch(self.model_id, self._dim, got)
        # OpenAI's vectors are unit length already; other servers' are not always.
        return normalise_rows(matrix)
