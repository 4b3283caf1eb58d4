"""The wire: what one chat-completions request carries for this server (shaped by what it has
been learned to accept, `theus.model.capabilities`), and a stream read with every wait
bounded: the first token, each later one, and the caller's deadline."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from knowledge.core.errors import TheusError
from theus.config import ModelSettings
from theus.model.capabilities import Capabilities
from theus.model.errors import Stalled

# Output room never shrinks below this to fit a known context: a smaller answer is useless.
MIN_OUTPUT_TOKENS = 256


class PastDeadline(TheusError):
    """The caller's deadline passed mid-stream."""


def request_kwargs(
    settings: ModelSettings,
    caps: Capabilities,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    stream: bool,
    prompt_tokens: Callable[[], int],
) -> dict[str, Any]:
    """The arguments of `chat.completions.create` for this request to this server."""
    kwargs: dict[str, Any] = {"model": settings.model, "messages": messages, "stream": stream}
    if stream and caps.stream_options:
        kwargs["stream_options"] = {"include_usage": True}
    if tools:
        kwargs["tools"] = tools
        # Some servers (llama.cpp's) take a missing tool_choice as "none".
        if caps.tool_choice:
            kwargs["tool_choice"] = "auto"
        if stream and caps.streams_tool_calls is None:
            # This stream may break off after its 200 (llama-cpp-python): its connection
            # must not be reused for the next request, which would fail on it.
            kwargs["extra_headers"] = {"Connection": "close"}
    limit = output_limit(settings, caps, prompt_tokens)
    if limit and caps.max_tokens_param:
        kwargs[caps.max_tokens_param] = limit
    return kwargs


def output_limit(
    settings: ModelSettings, caps: Capabilities, prompt_tokens: Callable[[], int]
) -> int:
    """THEUS_MAX_OUTPUT_TOKENS, within what the server allows and the context leaves (0: send
    none)."""
    limit = settings.max_output_tokens
    if limit <= 0:
        return 0
    if caps.max_output_cap:
        limit = min(limit, caps.max_output_cap)
    if caps.context_tokens:
        limit = min(limit, max(MIN_OUTPUT_TOKENS, caps.context_tokens - prompt_tokens()))
    return limit


def clean(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages any server accepts: `content: null` (an assistant step that only called
    tools, an empty answer in an old session) becomes "", which strict servers require and
    the others take."""
    return [
        {**m, "content": ""} if "content" in m and m["content"] is None else m for m in messages
    ]


def is_event_stream(stream: Any) -> bool:
    response = getattr(stream, "response", None)
    headers = getattr(response, "headers", None) or {}
    return "text/event-stream" in str(headers.get("content-type", ""))


async def bounded(
    stream: Any, first_s: float, idle_s: float, deadline: float | None
) -> AsyncIterator[Any]:
    """The stream's chunks, failing with `Stalled` when the first takes longer than
    `first_s` or any later one longer than `idle_s`, and with `PastDeadline` once
    `deadline` passes; the stream is closed either way."""
    chunks = stream.__aiter__()
    wait, phrase = first_s, f"did not start answering within {first_s:g}s (THEUS_TIMEOUT)"
    try:
        while True:
            bound = wait
            if deadline is not None:
                bound = min(bound, deadline - time.monotonic())
                if bound <= 0:
                    raise PastDeadline()
            try:
                chunk = await asyncio.wait_for(chunks.__anext__(), bound)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise PastDeadline() from None
                raise Stalled(phrase) from None
            yield chunk
            wait, phrase = idle_s, f"sent nothing for {idle_s:g}s mid-answer (THEUS_IDLE_TIMEOUT)"
    finally:
        with contextlib.suppress(Exception):
            await stream.close()
