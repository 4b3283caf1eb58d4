"""The hosted embedder against a scripted /embeddings server on 127.0.0.1 (real openai client)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from knowledge.embed.base import DimensionMismatch, EndpointError, EndpointTimeout
from knowledge.embed.hosted import HostedEmbedder, hosted_model_id
from tests.scripted_embeddings import EmbeddingsScript as Script
from tests.scripted_embeddings import serve_embeddings


def _vector(text: str, dim: int) -> list[float]:
    # Deterministic and deliberately not unit length: the client must normalise.
    seed = sum(text.encode()) + 1
    return [float((seed * (i + 3)) % 17 + 1) for i in range(dim)]


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script(vector=_vector, dim=8)
    with serve_embeddings(script) as url:
        yield url, script


def _embedder(url: str, **kwargs: Any) -> HostedEmbedder:
    return HostedEmbedder(url, "sk-test", "embed-small", timeout=2.0, max_retries=0, **kwargs)


def test_embeds_in_order_normalised_and_learns_dimension(server: tuple[str, Script]) -> None:
    url, script = server
    embedder = _embedder(url)
    vectors = embedder.embed(["alpha", "beta", ""])
    assert vectors.shape == (3, 8) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    expected = np.array(_vector("beta", 8), dtype=np.float32)
    np.testing.assert_allclose(vectors[1], expected / np.linalg.norm(expected), atol=1e-6)
    assert embedder.dim == 8
    body = script.requests[0]
    assert body["model"] == "embed-small" and body["encoding_format"] == "float"
    assert body["input"] == ["alpha", "beta", " "]  # the API rejects empty strings
    assert script.headers[0]["authorization"] == "Bearer sk-test"


def test_dimension_probe_and_model_id(server: tuple[str, Script]) -> None:
    url, script = server
    embedder = _embedder(url)
    assert embedder.model_id == hosted_model_id(url, "embed-small")
    assert embedder.model_id.startswith("hosted:127.0.0.1:")
    assert embedder.dim == 8
    assert len(script.requests) == 1
    assert embedder.embed([]).shape == (0, 8)


def test_no_key_never_falls_back_to_openai_api_key(
    server: tuple[str, Script], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, script = server
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-this-server")
    HostedEmbedder(url, None, "m", max_retries=0).embed(["x"])
    assert "sk-not-for-this-server" not in script.headers[0]["authorization"]


def test_large_inputs_are_split_into_batches(server: tuple[str, Script]) -> None:
    url, script = server
    vectors = _embedder(url).embed([f"text {i}" for i in range(300)])
    assert vectors.shape == (300, 8)
    assert [len(r["input"]) for r in script.requests] == [128, 128, 44]


def test_http_500_is_a_typed_error(server: tuple[str, Script]) -> None:
    url, script = server
    script.mode = "error"
    with pytest.raises(EndpointError) as info:
        _embedder(url).embed(["x"])
    assert info.value.status == 500


def test_hanging_server_times_out(server: tuple[str, Script]) -> None:
    url, script = server
    script.mode = "hang"
    embedder = HostedEmbedder(url, "k", "m", timeout=0.3, max_retries=0)
    with pytest.raises(EndpointTimeout):  # waiting would end in a dropped connection instead
        embedder.embed(["x"])


def test_changed_dimension_is_refused(server: tuple[str, Script]) -> None:
    url, script = server
    embedder = _embedder(url)
    embedder.embed(["x"])
    script.dim = 4
    with pytest.raises(DimensionMismatch) as info:
        embedder.embed(["y"])
    assert (info.value.expected, info.value.got) == (8, 4)


def test_declared_dimension_is_enforced(server: tuple[str, Script]) -> None:
    url, _ = server
    with pytest.raises(DimensionMismatch):
        _embedder(url, dim=1536).embed(["x"])


def test_ragged_answer_is_malformed(server: tuple[str, Script]) -> None:
    url, script = server
    script.mode = "ragged"
    with pytest.raises(EndpointError, match="malformed"):
        _embedder(url).embed(["a", "b"])


def test_unreachable_server_is_a_typed_error() -> None:
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    with pytest.raises(EndpointError):
        HostedEmbedder("http://127.0.0.1:9/v1", "k", "m", timeout=1.0, max_retries=0).embed(["x"])


def test_lone_surrogates_are_replaced_before_sending(server: tuple[str, Script]) -> None:
    url, script = server
    _embedder(url).embed(["caf\udce9"])
    assert script.requests[0]["input"] == ["caf?"]
