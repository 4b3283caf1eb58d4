"""Which embedder the semantic layer uses, and why (the reason is shown in `theus status`).

Cascade, first match wins:
1. THEUS_NO_EMBEDDINGS=1: off; nothing is loaded and nothing touches the network.
2. THEUS_EMBEDDINGS_URL (+ THEUS_EMBEDDINGS_KEY, THEUS_EMBEDDINGS_MODEL): that endpoint.
3. The local ONNX model, if it loads.
4. The configured chat endpoint (THEUS_BASE_URL/THEUS_API_KEY, else OPENAI_BASE_URL/
   OPENAI_API_KEY, else saved credentials) with THEUS_EMBEDDINGS_MODEL.
5. Off.
Choosing a hosted embedder does no I/O; its first request happens on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from knowledge.core.credentials import ChatCredentials
from knowledge.core.settings import MemorySettings
from knowledge.embed.base import Embedder, EmbedderUnavailable

Provider = Literal["hosted", "local", "chat-endpoint", "off"]

DEFAULT_HOSTED_MODEL = "text-embedding-3-small"
# What the openai client itself uses when only a key is given.
OPENAI_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True)
class Selection:
    embedder: Embedder | None
    provider: Provider
    reason: str


def _load_local_default() -> Embedder:
    # Imported here so that the kill switch, and a hosted choice, never import onnxruntime.
    from knowledge.embed.local import load_local

    return load_local()


def select_embedder(
    settings: MemorySettings,
    credentials: ChatCredentials | None,
    *,
    local_loader: Callable[[], Embedder] = _load_local_default,
    timeout: float | None = None,
) -> Selection:
    """Resolve the cascade. `local_loader` returns a loaded embedder or raises (normally
    `EmbedderUnavailable`); `timeout` (seconds) applies to hosted requests."""
    if settings.is_off("embeddings"):
        return Selection(None, "off", "semantic layer off: THEUS_NO_EMBEDDINGS=1")

    model = settings.embeddings_model or DEFAULT_HOSTED_MODEL
    url = settings.embeddings_url
    if url:
        embedder = _hosted(url, settings.embeddings_key or None, model, timeout)
        return Selection(embedder, "hosted", f"{model} at {url} (THEUS_EMBEDDINGS_URL)")

    try:
        local = local_loader()
    # Any failure, even an unexpected one, only means "no local model": fail open.
    except Exception as exc:
        detail = (
            str(exc) if isinstance(exc, EmbedderUnavailable) else f"{type(exc).__name__}: {exc}"
        )
        local_failure = f"local model unavailable: {detail}"
    else:
        return Selection(local, "local", f"local ONNX model {local.model_id} ({local.dim}-d)")

    endpoint = _chat_endpoint(settings, credentials)
    if endpoint is None:
        return Selection(None, "off", f"semantic layer off: {local_failure}; no endpoint set")
    base_url, api_key, source = endpoint
    return Selection(
        _hosted(base_url, api_key, model, timeout),
        "chat-endpoint",
        f"{model} at {base_url} (chat endpoint from {source}); {local_failure}",
    )


def _hosted(base_url: str, api_key: str | None, model: str, timeout: float | None) -> Embedder:
    from knowledge.embed.hosted import DEFAULT_TIMEOUT, HostedEmbedder

    return HostedEmbedder(base_url, api_key, model, timeout=timeout or DEFAULT_TIMEOUT)


def _chat_endpoint(
    settings: MemorySettings, credentials: ChatCredentials | None
) -> tuple[str, str | None, str] | None:
    """(base_url, api_key, source) of the chat endpoint, or None. The settings take the
    endpoint whole from one place, so a key from one place is never sent to a URL from
    another; saved credentials come last."""
    if settings.base_url or settings.api_key:
        return (
            settings.base_url or OPENAI_BASE_URL,
            settings.api_key or None,
            settings.source("base_url" if settings.base_url else "api_key"),
        )
    if credentials is not None and credentials.base_url:
        return credentials.base_url, credentials.api_key or None, "saved credentials"
    return None
