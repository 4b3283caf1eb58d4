"""The chat model: one chat-completions call with tools against any OpenAI-compatible server
(hosted, llama.cpp, Ollama, vLLM, LM Studio), with retries on 429/5xx and one clear line for
what cannot be retried.

Every wait is bounded: the first token must come within THEUS_TIMEOUT (a local server may
read a long prompt for a while), then a stream that sends nothing for THEUS_IDLE_TIMEOUT has
failed, no retry starts once THEUS_RETRY_DEADLINE has passed since the call began, and a
caller's `deadline` (the turn's) cuts even a stream that keeps sending.

What a server cannot do is learned from its answers (theus.model.capabilities) and worked
around from then on, each work-around said once in `Completion.notices`. The client steers;
the wire (`transport`), the retry policy (`retry`) and the answer's assembly (`answer`) are
modules of their own."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
import time
from typing import Any

import httpx2
import openai

from knowledge.core.token_count import count_tokens
from theus.config import ModelSettings
from theus.model import capabilities, limits, retry
from theus.model.answer import Completion, StreamedAnswer, TextCallback, whole_answer
from theus.model.bounds import bounded_client
from theus.model.errors import (
    BodyCut,
    EndedEarly,
    Malformed,
    ModelError,
    Stalled,
    Unreadable,
    after,
    classify,
    dropped,
    is_validation,
    prompt_count,
    short,
)
from theus.model.meter import Meter
from theus.model.transport import (
    PastDeadline,
    bounded,
    clean,
    is_event_stream,
    output_limit,
    request_kwargs,
)

log = logging.getLogger(__name__)
_AT_MOST = re.compile(r"at most (\d+)")


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
            http_client=bounded_client(backstop),  # no body past theus.model.bounds
        )
        self.caps = capabilities.for_server(settings.base_url, settings.model)
        self._discovery: asyncio.Task[None] | None = None
        self._fallback_unsaved = False
        self._last_sent: tuple[list[dict[str, Any]], list[dict[str, Any]] | None] | None = None
        self.meter = Meter()

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def context_tokens(self) -> int | None:
        """The context size the server stated or named in an overflow; None if unknown."""
        return self.caps.context_tokens

    def estimate_tokens(
        self, messages: list[Any], tools: list[dict[str, Any]] | None = None
    ) -> int:
        """Prompt tokens of a request, messages and tool schemas, scaled by how this server's
        counts compared with our estimate so far."""
        raw = limits.prompt_tokens(messages, tools)
        return math.ceil(raw * self.caps.token_ratio)

    async def close(self) -> None:
        if self._discovery is not None:
            self._discovery.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._discovery
        await self._client.close()

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        on_text: TextCallback | None = None,
        *,
        deadline: float | None = None,
    ) -> Completion:
        started = time.monotonic()
        result: Completion | None = None
        try:
            result = await self._complete(messages, tools, on_text, deadline=deadline)
            return result
        finally:  # a failed call's wait counts too
            self.meter.count(
                time.monotonic() - started,
                result.prompt_tokens if result else 0,
                result.completion_tokens if result else 0,
            )

    async def _complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        on_text: TextCallback | None = None,
        *,
        deadline: float | None = None,
    ) -> Completion:
        """One answer. `deadline` (time.monotonic) bounds the whole call, streaming included:
        past it the call fails with kind "deadline" and the text so far in `partial`."""
        await self._settle_discovery()
        messages = clean(messages)
        attempt = 0
        started = time.monotonic()
        notices: list[str] = []
        while True:
            emitted = False

            def relay(piece: str) -> None:
                nonlocal emitted
                emitted = True
                if on_text is not None:
                    on_text(piece)

            left = self.settings.retry_deadline_s - (time.monotonic() - started)
            if deadline is not None:
                left = min(left, deadline - time.monotonic())
            streaming = not (tools and self.caps.streams_tool_calls is False)
            try:
                if streaming:
                    result = await self._stream(messages, tools, relay, left, deadline)
                else:
                    result = await self._once(messages, tools, relay, left)
                self._learn(messages, tools, result, streaming)
                result.notices = notices + self._fallback_worked(streaming)
                self._start_discovery()
                return result
            except ModelError:
                raise
            except openai.BadRequestError as exc:
                if self._refused(exc):
                    continue
                if streaming and tools and not emitted and self._cannot_stream_tools(exc):
                    self._no_streamed_tools()
                    continue
                raise classify(exc, *self._where()) from exc
            except (
                openai.APIError,
                httpx2.TransportError,
                Stalled,
                Malformed,
                EndedEarly,
                Unreadable,
                json.JSONDecodeError,
            ) as exc:
                if streaming and tools and not emitted and self._cannot_stream_tools(exc):
                    self._no_streamed_tools()
                    continue
                if deadline is not None and time.monotonic() >= deadline:
                    raise ModelError(self._deadline_line(), kind="deadline") from exc
                if isinstance(exc, json.JSONDecodeError):  # the SSE body was not JSON
                    exc = Malformed(f"sent a malformed stream ({exc})")
                error = classify(exc, *self._where())
                delay = retry.delay_s(attempt, self.settings.retry_base_s, exc)
                spent = time.monotonic() - started
                if not retry.may_retry(
                    error.kind,
                    # An early end is an overflow or a mode the server lacks: not transient.
                    transient=not isinstance(exc, EndedEarly),
                    emitted=emitted,
                    attempt=attempt,
                    most=self.settings.max_retries,
                ):
                    raise after(error, attempt + 1, spent) from exc
                if spent + delay > self.settings.retry_deadline_s:
                    raise after(error, attempt + 1, spent, deadline=True) from exc
                log.warning("model call failed (%s), retry %d in %.2fs", error, attempt + 1, delay)
                attempt += 1
                await asyncio.sleep(delay)

    # -- the two ways of asking ---------------------------------------------------------------

    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, stream: bool
    ) -> dict[str, Any]:
        self._last_sent = (messages, tools)
        return request_kwargs(
            self.settings,
            self.caps,
            messages,
            tools,
            stream,
            lambda: self.estimate_tokens(messages, tools),
        )

    async def _stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_text: TextCallback,
        left_s: float,
        deadline: float | None,
    ) -> Completion:
        # The first token may take THEUS_TIMEOUT, but never past the call's deadline.
        first_token = max(1.0, min(self.settings.timeout_s, left_s))
        try:
            stream = await asyncio.wait_for(
                self._client.chat.completions.create(**self._request(messages, tools, True)),
                first_token,
            )
        except TimeoutError:
            raise Stalled(
                f"did not start answering within {first_token:g}s "
                "(raise THEUS_TIMEOUT or check the server)"
            ) from None
        answer = StreamedAnswer(on_text)
        try:
            async for chunk in bounded(stream, first_token, self.settings.idle_timeout_s, deadline):
                if chunk.usage is not None:
                    self.meter.cache(chunk.usage)
                if not answer.add(chunk):
                    break
        except PastDeadline:
            raise ModelError(
                self._deadline_line(answer.text), kind="deadline", partial=answer.text
            ) from None
        except BodyCut as exc:
            answer.result.cut_here(f"answer cut: the server {exc}")
        except Unreadable as exc:
            if answer.result.finish_reason is None:  # past the answer's end, it is whole
                error = classify(exc, *self._where())
                raise ModelError(str(error), kind=error.kind, partial=answer.text) from None
        except (httpx2.TransportError, openai.APIConnectionError) as exc:
            if answer.started:
                raise dropped(self.settings.base_url, answer.text) from exc
            raise EndedEarly() from exc  # a 200 that broke off (llama-cpp-python's, often)
        if answer.result.finish_reason is None:
            if answer.started:  # the stream stopped mid-answer, without a finish
                raise dropped(self.settings.base_url, answer.text)
            if not is_event_stream(stream):
                raise Malformed("sent no answer (an empty response, or not a chat stream)")
            raise EndedEarly()
        result = answer.completion()
        if not answer.usage_seen:
            self._estimate(result, messages, tools)
        return result

    async def _once(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_text: TextCallback,
        left_s: float,
    ) -> Completion:
        """A non-streaming call (a server that cannot stream tool calls): the text arrives
        whole, then goes to `on_text` in one piece."""
        bound = max(1.0, min(self.settings.timeout_s + self.settings.idle_timeout_s, left_s))
        try:
            reply = await asyncio.wait_for(
                self._client.chat.completions.create(**self._request(messages, tools, False)), bound
            )
        except TimeoutError:
            raise Stalled(
                f"did not answer within {bound:g}s (raise THEUS_TIMEOUT or check the server)"
            ) from None
        if not isinstance(reply, openai.types.chat.ChatCompletion):  # an HTML page, say
            raise Malformed("sent no chat completion")
        result = whole_answer(reply)
        if result is None:
            raise Malformed("sent no answer (a response without choices)")
        if result.text:
            on_text(result.text)
        if reply.usage is not None and reply.usage.prompt_tokens:
            result.prompt_tokens = reply.usage.prompt_tokens
            result.completion_tokens = reply.usage.completion_tokens or 0
            self.meter.cache(reply.usage)
        else:
            self._estimate(result, messages, tools)
        return result

    async def complete_json(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], name: str
    ) -> Completion:
        """One non-streaming call whose answer must be JSON of `schema` (strict structured
        output). A server that refuses `response_format` is asked again without it (the
        prompt asks for JSON too), and from then on at once. No retries: callers are optional
        layers that fail open. A server learned to answer something else than JSON
        (`learned_not_json`) is not asked: ModelError of kind "no_json"."""
        if not self.caps.answers_json:
            raise ModelError(
                f"the model at {self.settings.base_url} ({self.settings.model}) was found to "
                "answer structured requests with something else than JSON",
                kind="no_json",
            )
        request: dict[str, Any] = {"model": self.settings.model, "messages": clean(messages)}
        limit = output_limit(
            self.settings, self.caps, lambda: self.estimate_tokens(request["messages"])
        )
        if limit and self.caps.max_tokens_param:  # a local server would write until its context
            request[self.caps.max_tokens_param] = limit
        structured = {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": schema},
        }
        formats = [structured, None] if self.caps.response_format else [None]
        for response_format in formats:
            kwargs = {
                **request,
                **({"response_format": response_format} if response_format else {}),
            }
            started = time.monotonic()
            try:
                reply = await self._client.chat.completions.create(**kwargs)
            except openai.APIStatusError as exc:
                # A 400, or a validation 500 (llama-cpp-python), naming response_format.
                refused = exc.status_code == 400 or is_validation(exc)
                if response_format is not None and refused and "response_format" in short(exc):
                    self.caps.response_format = False
                    self._save()
                    continue
                raise classify(exc, *self._where()) from exc
            except (openai.APIError, Unreadable) as exc:
                raise classify(exc, *self._where()) from exc
            usage = reply.usage
            result = whole_answer(reply) or Completion(text="")
            if usage is not None:
                result.prompt_tokens = usage.prompt_tokens or 0
                result.completion_tokens = usage.completion_tokens or 0
            self.meter.count(
                time.monotonic() - started, result.prompt_tokens, result.completion_tokens
            )
            self.meter.cache(usage)
            return result
        raise ModelError("the server refused every response format", kind="request")

    def learned_not_json(self) -> None:
        """The caller found a structured answer of this server not JSON (a whole answer, not
        one cut at its length): kept, and saved, so `complete_json` does not ask it again
        while the record is fresh (a day; `theus doctor` starts over)."""
        self.caps.answers_json = False
        self._save()

    # -- learning -----------------------------------------------------------------------------

    def _learn(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        result: Completion,
        streamed: bool,
    ) -> None:
        caps, changed = self.caps, False
        if streamed and tools and result.tool_calls and caps.streams_tool_calls is None:
            caps.streams_tool_calls, changed = True, True
        reported = not result.usage_estimated
        if streamed and caps.reports_usage != reported:
            caps.reports_usage, changed = reported, True
        if not result.usage_estimated and result.prompt_tokens:
            raw = limits.prompt_tokens(messages, tools)
            ratio = min(3.0, max(0.5, result.prompt_tokens / max(1, raw)))
            if abs(ratio - caps.token_ratio) > 0.05 * caps.token_ratio:
                caps.token_ratio, changed = round(ratio, 3), True
        if changed:
            self._save()

    def _estimate(
        self, result: Completion, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> None:
        result.usage_estimated = True
        result.prompt_tokens = self.estimate_tokens(messages, tools)
        result.completion_tokens = count_tokens(result.text) + sum(
            count_tokens(c.arguments) for c in result.tool_calls
        )

    def _refused(self, exc: openai.BadRequestError) -> bool:
        """After a 400 about one of our parameters (or a context we did not know), learn what
        to drop or change; True when the request should be sent again so."""
        caps, detail = self.caps, short(exc)
        overflow_size = classify(exc, *self._where()).context_tokens
        if overflow_size and overflow_size != caps.context_tokens:
            # The prompt with its output room did not fit a context we did not know; the
            # server's count of the prompt, where it says one, calibrates our estimate.
            caps.context_tokens, caps.context_source = overflow_size, "the server's error"
            counted, sent = prompt_count(exc), self._last_sent
            if counted and sent is not None:
                raw = limits.prompt_tokens(*sent)
                caps.token_ratio = round(min(3.0, max(0.5, counted / max(1, raw))), 3)
            if self._fallback_unsaved:  # the failed stream was this overflow: try it again
                caps.streams_tool_calls, self._fallback_unsaved = None, False
            self._save()
            return True
        if caps.stream_options and "stream_options" in detail:
            caps.stream_options = False
            self._save()
            log.info("server refused stream_options; token usage will be estimated")
            return True
        if caps.tool_choice and "tool_choice" in detail:
            caps.tool_choice = False
            self._save()
            return True
        if caps.max_tokens_param and caps.max_tokens_param in detail:
            cap = _AT_MOST.search(detail)
            if "max_completion_tokens" in detail and caps.max_tokens_param == "max_tokens":
                caps.max_tokens_param = "max_completion_tokens"
            elif cap and int(cap.group(1)) != caps.max_output_cap:
                caps.max_output_cap = int(cap.group(1))
            else:
                caps.max_tokens_param = ""  # the server takes no output limit at all
            self._save()
            return True
        return False

    def _cannot_stream_tools(self, exc: BaseException) -> bool:
        """A streamed tool step failed in a way a non-streaming request may not: a 200 that
        ended empty or with an error event, or an error naming streaming. Only while this
        server has not yet streamed tool calls."""
        if self.caps.streams_tool_calls is not None:
            return False
        if isinstance(exc, EndedEarly):
            return True
        if isinstance(exc, openai.APIStatusError):
            return "stream" in short(exc).lower()
        return isinstance(exc, openai.APIError) and not isinstance(exc, openai.APIConnectionError)

    def _no_streamed_tools(self) -> None:
        """Ask without streaming from now on; kept (and said) once that has worked."""
        self.caps.streams_tool_calls = False
        self._fallback_unsaved = True

    def _fallback_worked(self, streamed: bool) -> list[str]:
        """After a non-streaming answer that followed a failed stream: save that the server
        cannot stream tool calls, and say it once per process."""
        if streamed or not self._fallback_unsaved:
            return []
        self._fallback_unsaved = False
        self._save()
        if "no-streamed-tools" in self.caps.told:
            return []
        self.caps.told.add("no-streamed-tools")
        return [
            f"the server at {self.settings.base_url} cannot stream tool calls: tool steps "
            "use non-streaming requests from now on"
        ]

    async def list_models(self) -> list[str]:
        """The model ids the server lists (`theus doctor`)."""
        try:
            return [m.id async for m in self._client.models.list()]
        except (openai.APIError, httpx2.TransportError, Unreadable) as exc:
            raise classify(exc, *self._where()) from exc

    async def discover_context(self) -> None:
        """Ask the server its context size; kept, and saved for the next run."""
        found = await limits.discover_context(
            self.settings.base_url, self.settings.model, self.settings.api_key
        )
        if found is not None:
            self.caps.context_tokens, self.caps.context_source = found
        elif not self.caps.context_source:
            self.caps.context_source = limits.NOT_STATED  # asked: not again for a day
        self._save()

    def _start_discovery(self) -> None:
        """`discover_context` in the background, after an answer (the first request does not
        wait for it): used from the next step on."""
        if self._discovery is None and not self.caps.context_source:
            self._discovery = asyncio.get_running_loop().create_task(self.discover_context())

    async def _settle_discovery(self) -> None:
        """Let a discovery in flight finish first (bounded): llama-cpp-python's server drops
        the answer it is streaming when any other request comes in."""
        if self._discovery is not None and not self._discovery.done():
            await asyncio.wait({self._discovery}, timeout=limits.DISCOVERY_TIMEOUT_S + 1.0)

    def _save(self) -> None:
        capabilities.save(self.settings.base_url, self.settings.model, self.caps)

    # -- plumbing -----------------------------------------------------------------------------

    def _where(self) -> tuple[str, str]:
        return self.settings.base_url, self.settings.model

    def _deadline_line(self, partial: str = "") -> str:
        kept = "; the partial answer is kept, marked incomplete" if partial else ""
        return (
            f"the turn passed its deadline (THEUS_TURN_DEADLINE) while the model at "
            f"{self.settings.base_url} was still answering{kept}"
        )
