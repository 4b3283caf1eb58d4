"""The embedder cascade, for each combination of settings."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from knowledge.core.credentials import ChatCredentials
from knowledge.embed.base import EmbedderUnavailable, Vectors
from knowledge.embed.hosted import HostedEmbedder
from knowledge.embed.select import DEFAULT_HOSTED_MODEL, OPENAI_BASE_URL, select_embedder
from tests.conftest import from_env

SAVED = ChatCredentials("https://gateway.example/v1", "sk-saved", "chat-model")


class FakeLocal:
    model_id = "fake-local"
    dim = 3

    def embed(self, texts: list[str], max_tokens: int | None = None) -> Vectors:
        rows: Vectors = np.ones((len(texts), 3), dtype=np.float32) / np.sqrt(3)
        return rows

    def close(self) -> None:
        pass


class Loader:
    """Counts calls; returns a fake local embedder or fails like a missing model would."""

    def __init__(self, error: Exception | None = None) -> None:
        self.calls = 0
        self.error = error

    def __call__(self) -> FakeLocal:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return FakeLocal()


def failing() -> Loader:
    return Loader(EmbedderUnavailable("model file missing"))


def hosted(selection_embedder: object) -> HostedEmbedder:
    assert isinstance(selection_embedder, HostedEmbedder)
    return selection_embedder


def test_kill_switch_wins_over_everything_and_loads_nothing() -> None:
    loader = Loader()
    env = {"THEUS_NO_EMBEDDINGS": "1", "THEUS_EMBEDDINGS_URL": "http://e/v1"}
    selection = select_embedder(from_env(env), SAVED, local_loader=loader)
    assert (selection.embedder, selection.provider) == (None, "off")
    assert "THEUS_NO_EMBEDDINGS" in selection.reason
    assert loader.calls == 0


def test_kill_switch_imports_neither_runtime_nor_client() -> None:
    # A fresh interpreter, so modules imported by other tests do not hide an import.
    code = textwrap.dedent(
        """
        import sys
        from knowledge.core.credentials import ChatCredentials
        from knowledge.embed import select_embedder
        from knowledge.core.settings import MemorySettings
        off = MemorySettings(no_embeddings=True, embeddings_url="http://e/v1")
        s = select_embedder(off, ChatCredentials("http://g/v1", "k", "m"))
        assert s.provider == "off", s
        loaded = [m for m in ("onnxruntime", "tokenizers", "openai") if m in sys.modules]
        assert not loaded, loaded
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_embeddings_url_always_wins() -> None:
    loader = Loader()
    env = {
        "THEUS_EMBEDDINGS_URL": "http://embed.local/v1",
        "THEUS_EMBEDDINGS_KEY": "ek",
        "THEUS_EMBEDDINGS_MODEL": "nomic-embed",
        "THEUS_BASE_URL": "http://chat.local/v1",
    }
    selection = select_embedder(from_env(env), SAVED, local_loader=loader)
    embedder = hosted(selection.embedder)
    assert selection.provider == "hosted"
    assert (embedder.base_url, embedder.api_key, embedder.model) == (
        "http://embed.local/v1",
        "ek",
        "nomic-embed",
    )
    assert "THEUS_EMBEDDINGS_URL" in selection.reason
    assert loader.calls == 0


def test_embeddings_url_without_model_uses_default() -> None:
    selection = select_embedder(
        from_env({"THEUS_EMBEDDINGS_URL": "http://e/v1"}), None, local_loader=Loader()
    )
    embedder = hosted(selection.embedder)
    assert (embedder.model, embedder.api_key) == (DEFAULT_HOSTED_MODEL, None)


def test_local_model_is_next() -> None:
    env = {"THEUS_BASE_URL": "http://chat.local/v1", "THEUS_API_KEY": "ck"}
    selection = select_embedder(from_env(env), SAVED, local_loader=Loader())
    assert selection.provider == "local"
    assert isinstance(selection.embedder, FakeLocal)
    assert "fake-local" in selection.reason


@pytest.mark.parametrize(
    ("env", "credentials", "base_url", "api_key", "source"),
    [
        (
            {"THEUS_BASE_URL": "http://chat/v1", "THEUS_API_KEY": "tk", "OPENAI_API_KEY": "ok"},
            SAVED,
            "http://chat/v1",
            "tk",
            "THEUS_BASE_URL",
        ),
        # A THEUS_* endpoint without a key must not borrow OPENAI_API_KEY.
        (
            {"THEUS_BASE_URL": "http://chat/v1", "OPENAI_API_KEY": "ok"},
            None,
            "http://chat/v1",
            None,
            "THEUS_BASE_URL",
        ),
        ({"THEUS_API_KEY": "tk"}, None, OPENAI_BASE_URL, "tk", "THEUS_API_KEY"),
        (
            {"OPENAI_BASE_URL": "http://oai/v1", "OPENAI_API_KEY": "ok"},
            SAVED,
            "http://oai/v1",
            "ok",
            "OPENAI_BASE_URL",
        ),
        ({"OPENAI_API_KEY": "ok"}, None, OPENAI_BASE_URL, "ok", "OPENAI_API_KEY"),
        ({}, SAVED, SAVED.base_url, SAVED.api_key, "saved credentials"),
    ],
)
def test_chat_endpoint_when_local_cannot_load(
    env: dict[str, str],
    credentials: ChatCredentials | None,
    base_url: str,
    api_key: str | None,
    source: str,
) -> None:
    selection = select_embedder(from_env(env), credentials, local_loader=failing())
    embedder = hosted(selection.embedder)
    assert selection.provider == "chat-endpoint"
    assert (embedder.base_url, embedder.api_key, embedder.model) == (
        base_url,
        api_key,
        DEFAULT_HOSTED_MODEL,
    )
    assert source in selection.reason and "model file missing" in selection.reason


def test_chat_endpoint_uses_embeddings_model_setting() -> None:
    env = {"THEUS_BASE_URL": "http://chat/v1", "THEUS_EMBEDDINGS_MODEL": "theus-embed"}
    selection = select_embedder(from_env(env), None, local_loader=failing())
    assert hosted(selection.embedder).model == "theus-embed"


def test_off_when_nothing_is_available_says_why() -> None:
    selection = select_embedder(from_env({}), None, local_loader=failing())
    assert (selection.embedder, selection.provider) == (None, "off")
    assert "model file missing" in selection.reason


def test_unexpected_loader_crash_fails_open() -> None:
    selection = select_embedder(
        from_env({}), None, local_loader=Loader(RuntimeError("onnx exploded"))
    )
    assert selection.provider == "off"
    assert "RuntimeError: onnx exploded" in selection.reason


def test_default_loader_loads_the_real_local_model() -> None:
    selection = select_embedder(from_env({}), None)
    assert selection.provider == "local"
    assert selection.embedder is not None and selection.embedder.dim == 384
