"""The chat model: one streaming chat-completions call with tools, against any
OpenAI-compatible server, with retries on 429/5xx and one clear line for what cannot be retried.

Every wait is bounded: the first token must come within THEUS_TIMEOUT (a local server may
read a long prompt for a while), then a stream that sends nothing for THEUS_IDLE_TIMEOUT has
failed, and no retry starts once THEUS_RETRY_DEADLINE has passed since the call began; the
message says how long was really waited."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import openai

from theus.config import ModelSettings
from theus.protocol import ToolCall

log = logging.getLogger(__name__)
# An answer (text and tool-call arguments) is cut here: a server streaming without end must
# not fill the memory and the session file (about 250k tokens, past any real reply).
MAX_ANSWER_CHARS = 1_000_000


class ModelError(Exception):
    """A model call that failed for good. `str(exc)` is one line saying what to do."""

    def __init__(self, message: str, *, kind: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


@dataclass(slots=True)
class Completion:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None


TextCallback = Callable[[str], None]


class ModelClient:
    """Wraps `openai.AsyncOpenAI`. Retries are ours (the client's are off) so the backoff is
    visible, bounded and testable; a stream that already produced text is never retried, so the
    user never sees an answer twice."""

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        # Our own waits (`_stream`) are the real bounds; httpx's are a backstop past them.
        backstop = max(settings.timeout_s, settings.idle_timeout_s) + 5.0
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key,
            timeout=backstop,
            max_retries=0,
        )
        self._usage_in_stream = True

    @property
    def model(self) -> str:
        return self.settings.model

    async def close(self) -> None:
        await self._client.close()

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        on_text: TextCallback | None = None,
    ) -> Completion:
        attempt = 0
        started = time.monotonic()
        while True:
            emitted = False

            def relay(piece: str) -> None:
                nonlocal emitted
                emitted = True
                if on_text is not None:
                    on_text(piece)

            left = self.settings.retry_deadline_s - (time.monotonic() - started)
            try:
                return await self._stream(messages, tools, relay, left)
            except openai.BadRequestError as exc:
                if self._usage_in_stream and "stream_options" in _short(exc):
                    # Some compatible servers reject stream_options: go on without usage.
                    log.info("server refused stream_options; token usage will read 0")
                    self._usage_in_stream = False
                    continue
                raise self._classify(exc) from exc
            except json.JSONDecodeError as exc:  # the SSE body was not JSON: no chat stream
                error = self._classify(_Malformed(f"sent a malformed stream ({exc})"))
                if emitted or attempt >= self.settings.max_retries:
                    raise _after(error, attempt + 1, time.monotonic() - started) from exc
                attempt += 1
                await asyncio.sleep(self._delay(attempt - 1, exc))
            except (openai.APIError, _Stalled, _Malformed) as exc:
                error = self._classify(exc)
                retryable = error.kind in ("rate_limit", "server", "network", "timeout")
                delay = self._delay(attempt, exc)
                spent = time.monotonic() - started
                if not retryable or emitted or attempt >= self.settings.max_retries:
                    raise _after(error, attempt + 1, spent) from exc
                if spent + delay > self.settings.retry_deadline_s:
                    raise _after(error, attempt + 1, spent, deadline=True) from exc
                log.warning("model call failed (%s), retry %d in %.2fs", error, attempt + 1, delay)
                attempt += 1
                await asyncio.sleep(delay)

    async def _stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
        on_text: TextCallback, left_s: float,
    ) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.settings.model,
            "messages": messages,
            "stream": True,
        }
        if self._usage_in_stream:
            kwargs["stream_options"] = {"include_usage": True}
        if tools:
            kwargs["tools"] = tools
        # The first token may take THEUS_TIMEOUT, but never past the call's deadline.
        first_token = max(1.0, min(self.settings.timeout_s, left_s))
        try:
            stream = await asyncio.wait_for(
                self._client.chat.completions.create(**kwargs), first_token)
        except TimeoutError:
            raise _Stalled(f"did not start answering within {first_token:g}s "
                           "(raise THEUS_TIMEOUT or check the server)") from None
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        result = Completion(text="")
        size = 0
        chunks_seen = 0
        async for chunk in _bounded(stream, first_token, self.settings.idle_timeout_s):
            chunks_seen += 1
            if size > MAX_ANSWER_CHARS:
                log.warning("the answer was cut at %s characters", f"{MAX_ANSWER_CHARS:,}")
                result.finish_reason = "length"
                break
            if chunk.usage is not None:
                result.prompt_tokens = chunk.usage.prompt_tokens or 0
                result.completion_tokens = chunk.usage.completion_tokens or 0
            for choice in chunk.choices or ():
                delta = choice.delta
                if delta is not None and delta.content:
                    size += len(delta.content)
                    text.append(delta.content)
                    on_text(delta.content)
                for tc in (delta.tool_calls or ()) if delta is not None else ():
                    slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function is not None:
                        slot["name"] += tc.function.name or ""
                        slot["arguments"] += tc.function.arguments or ""
                        size += len(tc.function.arguments or "")
                if choice.finish_reason:
                    result.finish_reason = choice.finish_reason
        if not chunks_seen:
            raise _Malformed("sent no answer (an empty response, or not a chat stream)")
        result.text = "".join(text)
        result.tool_calls = [
            ToolCall(id=c["id"] or f"call_{i}", name=c["name"], arguments=c["arguments"])
            for i, c in sorted(calls.items())
        ]
        return result

    async def complete_json(self, messages: list[dict[str, Any]], schema: dict[str, Any],
                            name: str) -> Completion:
        """One non-streaming call whose answer must be JSON of `schema` (strict structured
        output). A server that refuses `response_format` is asked again without it (the
        prompt asks for JSON too). No retries: callers are optional layers that fail open."""
        request: dict[str, Any] = {"model": self.settings.model, "messages": messages}
        formats = [{"type": "json_schema",
                    "json_schema": {"name": name, "strict": True, "schema": schema}}, None]
        for response_format in formats:
            kwargs = {**request, **({"response_format": response_format}
                                    if response_format else {})}
            try:
                reply = await self._client.chat.completions.create(**kwargs)
            except openai.BadRequestError as exc:
                if response_format is not None and "response_format" in _short(exc):
                    continue
                raise self._classify(exc) from exc
            except openai.APIError as exc:
                raise self._classify(exc) from exc
            choice = reply.choices[0] if reply.choices else None
            usage = reply.usage
            return Completion(
                text=(choice.message.content or "") if choice is not None else "",
                prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
                completion_tokens=(usage.completion_tokens or 0) if usage else 0,
                finish_reason=choice.finish_reason if choice is not None else None)
        raise ModelError("the server refused every response format", kind="request")

    def _delay(self, attempt: int, exc: Exception) -> float:
        base = self.settings.retry_base_s
        delay = base * (2**attempt) * (0.5 + random.random() / 2)
        response = getattr(exc, "response", None)
        retry_after = response.headers.get("retry-after") if response is not None else None
        if retry_after:
            with contextlib.suppress(ValueError):
                delay = max(delay, float(retry_after))
        return min(delay, 30.0)

    def _classify(self, exc: Exception) -> ModelError:
        url, model = self.settings.base_url, self.settings.model
        if isinstance(exc, _Stalled):
            return ModelError(f"the model server at {url} {exc}", kind="timeout")
        if isinstance(exc, _Malformed):
            return ModelError(f"the model server at {url} {exc}; check THEUS_BASE_URL points "
                              "at an OpenAI-compatible /v1 endpoint", kind="server")
        if isinstance(exc, openai.APITimeoutError):
            return ModelError(
                f"the model server at {url} timed out ({_short(exc)}); check the server",
                kind="timeout")
        if isinstance(exc, openai.APIConnectionError):
            return ModelError(
                f"cannot reach the model server at {url} (check THEUS_BASE_URL and that the "
                "server is running)", kind="network")
        status = getattr(exc, "status_code", None)
        detail = _short(exc)
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return ModelError(
                f"the model server at {url} rejected the API key ({status}): check THEUS_API_KEY "
                "or run `theus login`", kind="auth", status=status)
        if isinstance(exc, openai.NotFoundError):
            return ModelError(
                f"model '{model}' not found at {url} ({detail}): check THEUS_MODEL or --model",
                kind="model", status=status)
        if isinstance(exc, openai.RateLimitError):
            return ModelError(f"rate limited by {url} (429): {detail}", kind="rate_limit",
                              status=status)
        if status is not None and status >= 500:
            return ModelError(f"the model server at {url} failed ({status}): {detail}",
                              kind="server", status=status)
        if isinstance(exc, openai.BadRequestError) and "model" in detail.lower():
            return ModelError(
                f"the server at {url} refused model '{model}' ({detail}): check THEUS_MODEL",
                kind="model", status=status)
        return ModelError(f"the model call failed ({status}): {detail}", kind="request",
                          status=status)


class _Stalled(Exception):
    """The server sent nothing within a bound; `str` says which, as a phrase."""


class _Malformed(Exception):
    """The server answered, but not with a chat stream; `str` says how, as a phrase."""


async def _bounded(stream: Any, first_s: float, idle_s: float) -> Any:
    """The stream's chunks, failing with `_Stalled` when the first takes longer than
    `first_s` or any later one longer than `idle_s`; the stream is closed either way."""
    chunks = stream.__aiter__()
    wait, phrase = first_s, f"did not start answering within {first_s:g}s (THEUS_TIMEOUT)"
    try:
        while True:
            try:
                chunk = await asyncio.wait_for(chunks.__anext__(), wait)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise _Stalled(phrase) from None
            yield chunk
            wait, phrase = idle_s, f"sent nothing for {idle_s:g}s mid-answer (THEUS_IDLE_TIMEOUT)"
    finally:
        with contextlib.suppress(Exception):
            await stream.close()


def _after(error: ModelError, attempts: int, spent: float, deadline: bool = False
           ) -> ModelError:
    """`error`, saying how many attempts it took and how long was waited in all."""
    if attempts == 1:
        return error
    why = " (THEUS_RETRY_DEADLINE)" if deadline else ""
    return ModelError(f"{error}; gave up after {attempts} attempts in {spent:.0f}s{why}",
                      kind=error.kind, status=error.status)


def _short(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return " ".join(str(message).split())[:200]
    return " ".join(str(exc).split())[:200]
