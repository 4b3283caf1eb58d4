"""Sizes: the token estimate of a request (messages and tool schemas), and the context size a
server states about itself (llama.cpp `/props`, Ollama `/api/show`, vLLM `/v1/models`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2

from knowledge.core.token_count import count_tokens
from theus.model.bounds import bounded_client
from theus.model.errors import Unreadable

# Each self-description is one short GET/POST; a server that is slow to say is not waited on.
DISCOVERY_TIMEOUT_S = 2.0
NOT_STATED = "not stated by the server"


# A chat template's own tokens (ChatML: `<|im_start|>`, the role, a newline, `<|im_end|>`
# around each message; `<|im_start|>assistant` and a newline to open the reply).
MESSAGE_FRAMING = 4
REPLY_FRAMING = 3


def conversation_tokens(messages: list[Any]) -> int:
    """Estimated tokens of chat messages: their text, tool-call arguments and a few per
    message for the chat template's framing."""
    return sum(MESSAGE_FRAMING + message_tokens(message) for message in messages)


def message_tokens(message: Any) -> int:
    """A message's own tokens, framing aside: its text (a list of parts: their texts) and
    its tool calls."""
    content = message.get("content") or ""
    if isinstance(content, list):
        content = "\n".join(str(part.get("text") or "") for part in content)
    calls = message.get("tool_calls") or ()
    return count_tokens(str(content)) + sum(
        count_tokens(json.dumps(call.get("function", {}))) for call in calls
    )


def prompt_tokens(messages: list[Any], tools: list[dict[str, Any]] | None) -> int:
    """Estimated prompt tokens of a request as a server counts them: its messages, the tool
    schemas and the reply's opening (what `theus.agent.ledger` splits into parts)."""
    return conversation_tokens(messages) + schema_tokens(tools) + REPLY_FRAMING


def schema_tokens(tools: list[dict[str, Any]] | None) -> int:
    """Estimated tokens of the tool schemas: a server renders them into the prompt."""
    return count_tokens(json.dumps(tools)) if tools else 0


def server_root(base_url: str) -> str:
    """The server's root: `http://host:8080/v1` -> `http://host:8080`."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    path = path[: -len("/v1")] if path.endswith("/v1") else path
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _from_props(data: Any, model: str) -> int | None:  # llama.cpp server
    settings = data.get("default_generation_settings") if isinstance(data, dict) else None
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None


def _from_show(data: Any, model: str) -> int | None:  # Ollama: num_ctx it runs with, else the
    if not isinstance(data, dict):  # model's own length
        return None
    for line in str(data.get("parameters") or "").splitlines():
        name, _, value = line.partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            return int(value.strip())
    info = data.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if key.endswith(".context_length") and isinstance(value, int) and value > 0:
                return value
    return None


def _from_models(data: Any, model: str) -> int | None:  # vLLM
    for entry in (data.get("data") or []) if isinstance(data, dict) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            size = entry.get("max_model_len")
            return size if isinstance(size, int) and size > 0 else None
    return None


async def discover_context(base_url: str, model: str, api_key: str) -> tuple[int, str] | None:
    """(context tokens, where it was read) as the server states it, or None when it does not
    say (hosted APIs, llama-cpp-python): then the setting, or an overflow's own words, rule."""
    root = server_root(base_url)
    headers = {"Authorization": f"Bearer {api_key}"}
    probes = [
        ("GET", f"{root}/props", None, _from_props, "llama.cpp /props"),
        ("POST", f"{root}/api/show", {"model": model}, _from_show, "Ollama /api/show"),
        ("GET", f"{base_url}/models", None, _from_models, "vLLM /v1/models"),
    ]
    async with bounded_client(timeout=DISCOVERY_TIMEOUT_S, headers=headers) as client:

        async def ask(method: str, url: str, body: Any) -> Any:
            with contextlib.suppress(httpx2.HTTPError, Unreadable, ValueError):
                response = await client.request(method, url, json=body)
                if response.status_code == 200:
                    return response.json()
            return None

        answers = await asyncio.gather(*(ask(m, u, b) for m, u, b, _, _ in probes))
    for answer, (_, _, _, read, source) in zip(answers, probes, strict=True):
        size = read(answer, model)
        if size:
            return size, source
    return None
