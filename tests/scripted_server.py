"""A scripted OpenAI-compatible chat server for tests (the model is the only thing we fake).

    with ScriptedServer([tool("read", path="a.py"), text("done")]) as server:
        os.environ["THEUS_BASE_URL"] = server.url      # http://127.0.0.1:<port>/v1
        ...                                            # run the real openai client against it
        server.requests                                 # every chat request body, parsed

Serves `POST /v1/chat/completions` (streaming SSE, with `stream_options.include_usage`, and
non-streaming) and `GET /v1/models`. Each chat request consumes the next scripted `Reply`:
text, tool calls, an error status, a delay before answering, a stall mid-stream. A reply with
`repeat=True` is served forever (a server that always fails). A script item may also be a
callable `body -> Reply` for replies that depend on the request. When the script runs out
the server answers 500 "script exhausted", so a test that expects fewer calls fails loudly.

`Quirks` make it behave like a real local server (llama.cpp, llama-cpp-python, vLLM):
strict message validation, no streamed tool calls, ignored `stream_options`, a small
context with a real `context_length_exceeded` 400, a `/props` endpoint. A reply may end
`finish="length"`, be an `empty` 200 stream, or `drop_after` N chunks mid-answer. A `flood`
(`huge_event`, `endless_line`) is a body far larger than memory should hold, written in pieces.
`most_in_flight` is the most requests it was answering at once; a reply's `gate` (a
barrier) holds it until as many requests as the barrier has parties are answered side by side;
its `hold` (an event) until the test sets it.

Structured-output requests (a `response_format`: the facts layer's extraction) are a second
conversation with the server: they consume `structured` (recorded in `structured_requests`),
and when that runs out get what a model that found nothing returns: the schema's object with
every list empty. So a test scripts the chat and the extractions apart.

Usage counts the prompt exactly as a server would with a ChatML template and the tokenizer
Theus's estimator stands for (`knowledge.core.token_count`): `MESSAGE_FRAMING` tokens around
each message, `REPLY_FRAMING` to open the answer, the texts, the tool calls' JSON and the tool
schemas' JSON (`prompt_count`). So a request's ledger can be checked against it to the token.
Runs on a daemon thread on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from knowledge.core.token_count import count_tokens

__all__ = [
    "Quirks",
    "Reply",
    "ScriptedServer",
    "endless_line",
    "error",
    "huge_event",
    "prompt_count",
    "text",
    "tool",
    "tools",
]


@dataclass
class Reply:
    text: str = ""
    # (name, arguments) pairs; arguments as a dict (sent as JSON) or a raw string (may be bad).
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    status: int = 200
    error: str = ""
    delay_s: float = 0.0  # before answering at all (a server still reading the prompt)
    # After this many chunks the stream goes silent for `stall_s` (a server that hangs
    # mid-answer); None streams straight through.
    stall_after: int | None = None
    stall_s: float = 0.0
    raw: bytes | None = None  # sent as the whole response body instead (garbage, HTML...)
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)  # more headers of a `raw` reply
    code: str = "scripted_error"  # the error body's `code`
    repeat: bool = False
    # Overrides for the usage report; by default ~4 characters a token of the request/reply.
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None  # reported as usage.prompt_tokens_details.cached_tokens
    finish: str | None = None  # the finish_reason sent instead of "stop"/"tool_calls"
    empty: bool = False  # a 200 stream that ends at once: no chunk, no finish, no [DONE]
    drop_after: int | None = None  # the stream stops after this many chunks, unfinished
    # A 200 stream of `head`, then `size` bytes of "x", then `tail`, written a MiB at a time.
    flood: tuple[bytes, int, bytes] | None = None
    gate: threading.Barrier | None = None  # waited on (outside the lock) before answering
    # Waited on before answering: the test sets it once the client has done what it must do
    # while the answer is pending (a wait that does not hang on the machine's speed).
    hold: threading.Event | None = None


@dataclass
class Quirks:
    """How real OpenAI-compatible servers differ from OpenAI's (all off by default)."""

    # llama-cpp-python: an assistant `content: null` is a 500 with pydantic's validation text.
    strict_messages: bool = False
    # llama-cpp-python: without `tool_choice` tools are ignored; with "auto" a streamed
    # request answers 200 and then ends empty; only a non-streaming request calls tools.
    no_streamed_tools: bool = False
    ignores_stream_options: bool = False  # never reports usage, and does not refuse it
    # A prompt (messages and tools, ~4 characters a token) over this many tokens is refused
    # with OpenAI's/vLLM's 400 `context_length_exceeded`.
    context_tokens: int | None = None
    props_n_ctx: int | None = None  # `GET /props` states it, as llama.cpp's server does


def text(content: str, **kw: Any) -> Reply:
    return Reply(text=content, **kw)


def tool(name: str, arguments: dict[str, Any] | str | None = None, **kw: Any) -> Reply:
    """One tool call. `arguments` may be a raw (even malformed) JSON string."""
    return Reply(tool_calls=[(name, arguments if arguments is not None else {})], **kw)


def tools(*calls: tuple[str, dict[str, Any] | str], **kw: Any) -> Reply:
    return Reply(tool_calls=list(calls), **kw)


def error(status: int, message: str = "scripted failure", **kw: Any) -> Reply:
    return Reply(status=status, error=message, **kw)


def huge_event(size: int) -> Reply:
    """One stream event whose text is `size` characters, then a finished answer."""
    head = (
        b'data: {"id":"x","object":"chat.completion.chunk","created":0,"model":"m",'
        b'"choices":[{"index":0,"delta":{"content":"'
    )
    tail = (
        b'"},"finish_reason":null}]}\n\ndata: {"id":"x","object":"chat.completion.chunk",'
        b'"created":0,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'
        b"\n\ndata: [DONE]\n\n"
    )
    return Reply(flood=(head, size, tail))


def endless_line(size: int) -> Reply:
    """A stream line of `size` bytes that does not end; then the connection closes."""
    return Reply(flood=(b"data: ", size, b""))


ScriptItem = Reply | Callable[[dict[str, Any]], Reply]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout test, cancelled turn) is expected, not a failure.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ScriptedServer:
    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        models: Iterable[str] = ("test-model",),
        api_key: str | None = None,
        chunk_chars: int = 8,
        quirks: Quirks | None = None,
    ) -> None:
        self.script: list[ScriptItem] = list(script)
        self.models = list(models)
        self.api_key = api_key
        self.chunk_chars = chunk_chars
        self.quirks = quirks or Quirks()
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.structured: list[ScriptItem] = []
        self.structured_requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, daemon=True, name="scripted-openai"
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def add(self, *items: ScriptItem) -> None:
        with self._lock:
            self.script.extend(items)

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def remaining(self) -> int:
        with self._lock:
            return len(self.script)

    def _next(self, body: dict[str, Any]) -> Reply:
        if body.get("response_format"):
            found_nothing = text(json.dumps(_empty_of(body["response_format"])))
            return self._take(self.structured, self.structured_requests, body, found_nothing)
        exhausted = error(500, "scripted server: script exhausted")
        return self._take(self.script, self.requests, body, exhausted)

    def _refusal(self, body: dict[str, Any]) -> Reply | None:
        """What a quirky server answers before the model sees the request, if it refuses."""
        quirks = self.quirks
        for i, message in enumerate(body.get("messages", [])):
            if quirks.strict_messages and "content" in message and message["content"] is None:
                return error(
                    500,
                    "1 validation error: {'type': 'string_type', 'loc': "
                    f"('body', 'messages', {i}, 'content'), 'msg': 'Input should be a "
                    "valid string', 'input': None}",
                )
        sent = len(json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))) // 4
        if quirks.context_tokens is not None and sent > quirks.context_tokens:
            return Reply(
                status=400,
                error=(
                    f"This model's maximum context length is {quirks.context_tokens} tokens. "
                    f"However, your messages resulted in {sent} tokens. Please reduce the length "
                    "of the messages."
                ),
                code="context_length_exceeded",
            )
        if (
            quirks.no_streamed_tools
            and body.get("tools")
            and body.get("stream")
            and body.get("tool_choice") == "auto"
        ):
            return Reply(empty=True)
        return None

    def _answer(self, body: dict[str, Any], reply: Reply) -> Reply:
        """`reply` as this server gives it: one without `tool_choice` calls no tools on a
        server that takes a missing one as "none"."""
        if self.quirks.no_streamed_tools and body.get("tool_choice") in (None, "none"):
            return replace(reply, tool_calls=[])
        return reply

    def _take(
        self,
        script: list[ScriptItem],
        seen: list[dict[str, Any]],
        body: dict[str, Any],
        when_empty: Reply,
    ) -> Reply:
        """The next reply of `script` for `body` (kept when it repeats), recorded in `seen`."""
        with self._lock:
            seen.append(body)
            if not script:
                return when_empty
            item = script[0]
            reply = item(body) if callable(item) else item
            if not reply.repeat:
                script.pop(0)
            return reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if not self._authorised():
                    return
                if self.path == "/props" and server.quirks.props_n_ctx:
                    self._json(
                        200,
                        {
                            "default_generation_settings": {"n_ctx": server.quirks.props_n_ctx},
                            "total_slots": 1,
                        },
                    )
                elif self.path.rstrip("/").endswith("/models"):
                    data = [
                        {"id": m, "object": "model", "created": 0, "owned_by": "scripted"}
                        for m in server.models
                    ]
                    self._json(200, {"object": "list", "data": data})
                else:
                    self._json(404, _err("not found", "not_found"))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self._authorised():
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, _err("not found", "not_found"))
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._json(400, _err("invalid JSON body", "invalid_request_error"))
                    return
                if server.models and body.get("model") not in server.models:
                    with server._lock:
                        server.requests.append(body)
                    self._json(
                        404,
                        _err(f"The model `{body.get('model')}` does not exist", "model_not_found"),
                    )
                    return
                refusal = server._refusal(body)
                if refusal is not None:
                    with server._lock:
                        server.requests.append(body)
                reply = refusal or server._next(body)
                with server._lock:
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    self._reply(body, reply)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _reply(self, body: dict[str, Any], reply: Reply) -> None:
                if reply.gate is not None:
                    reply.gate.wait()
                if reply.hold is not None:
                    reply.hold.wait(timeout=120)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.flood is not None:
                    self._flood(*reply.flood)
                elif reply.raw is not None:
                    self._raw(reply)
                elif reply.status != 200:
                    self._json(reply.status, _err(reply.error, reply.code))
                elif body.get("stream"):
                    self._stream(body, server._answer(body, reply))
                else:
                    self._json(
                        200,
                        _completion(
                            body,
                            server._answer(body, reply),
                            not server.quirks.ignores_stream_options,
                        ),
                    )

            def _authorised(self) -> bool:
                if server.api_key is None:
                    return True
                if self.headers.get("Authorization") == f"Bearer {server.api_key}":
                    return True
                self._json(401, _err("Incorrect API key provided", "invalid_api_key"))
                return False

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _raw(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Connection", "close")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.close_connection = True
                self.wfile.write(reply.raw or b"")
                self.wfile.flush()

            def _flood(self, head: bytes, size: int, tail: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                self.wfile.write(head)
                block = b"x" * (1 << 20)
                for start in range(0, size, len(block)):
                    self.wfile.write(block[: size - start])
                self.wfile.write(tail)
                self.wfile.flush()

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                if reply.empty:
                    return
                usage = not server.quirks.ignores_stream_options
                for i, chunk in enumerate(_chunks(body, reply, server.chunk_chars, usage)):
                    if i == reply.drop_after:
                        return
                    if i == reply.stall_after:
                        time.sleep(reply.stall_s)
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler


def _empty_of(response_format: dict[str, Any]) -> dict[str, Any]:
    schema = response_format.get("json_schema", {}).get("schema", {})
    return {
        name: []
        for name, spec in schema.get("properties", {}).items()
        if spec.get("type") == "array"
    }


def _err(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def _arguments(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


# This server's chat template: `<|im_start|>`, the role, a newline and `<|im_end|>` around
# each message; `<|im_start|>assistant` and a newline before the answer.
MESSAGE_FRAMING = 4
REPLY_FRAMING = 3


def prompt_count(body: dict[str, Any]) -> int:
    """The prompt tokens of a chat request: each message's text (a list of parts: their
    texts, a line apart) and tool calls with their framing, the tool schemas, the reply's
    opening."""
    total = REPLY_FRAMING
    for message in body.get("messages", []):
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "\n".join(str(part.get("text") or "") for part in content)
        total += MESSAGE_FRAMING + count_tokens(str(content))
        for call in message.get("tool_calls") or ():
            total += count_tokens(json.dumps(call.get("function", {})))
    if body.get("tools"):
        total += count_tokens(json.dumps(body["tools"]))
    return total


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    prompt = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_count(body)
    out = count_tokens(reply.text) + sum(count_tokens(_arguments(a)) for _, a in reply.tool_calls)
    completion = reply.completion_tokens if reply.completion_tokens is not None else out
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if reply.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    return usage


def _base(body: dict[str, Any], kind: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": kind,
        "created": int(time.time()),
        "model": body.get("model", ""),
    }


def _completion(body: dict[str, Any], reply: Reply, usage: bool = True) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": _arguments(args)},
            }
            for i, (name, args) in enumerate(reply.tool_calls)
        ]
    finish = reply.finish or ("tool_calls" if reply.tool_calls else "stop")
    return {
        **_base(body, "chat.completion"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        **({"usage": _usage(body, reply)} if usage else {}),
    }


def _chunks(
    body: dict[str, Any], reply: Reply, size: int, usage: bool = True
) -> Iterable[dict[str, Any]]:
    base = _base(body, "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for start in range(0, len(reply.text), size):
        yield chunk({"content": reply.text[start : start + size]})
    # Calls' ids and names come first, arguments in two pieces: clients must accumulate.
    stamp = f"{len(body.get('messages', []))}"
    for i, (name, args) in enumerate(reply.tool_calls):
        raw = _arguments(args)
        half = len(raw) // 2
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": f"call_{stamp}_{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": raw[:half]},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": i, "function": {"arguments": raw[half:]}}]})
    yield chunk({}, reply.finish or ("tool_calls" if reply.tool_calls else "stop"))
    if usage and (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(body, reply)}
