"""A recording proxy in front of a real OpenAI-compatible server, for benchmarks that read the
wire as the scripted server keeps it: every chat request body (`requests`), the structured-
output ones apart (`structured_requests`), and the usage each answer reported (`usage`, by
the body's id; none for a stream that sent no usage). Answers pass through as they come
(streams included), one request at a time as a local server needs."""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class RecordingProxy:
    def __init__(self, upstream_root: str) -> None:
        self.upstream = upstream_root.rstrip("/")
        self.requests: list[dict[str, Any]] = []
        self.structured_requests: list[dict[str, Any]] = []
        self.usage: dict[int, dict[str, int]] = {}
        self.script: list[Any] = []  # the scripted server's, for callers that clear it
        self._one = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _forward(self, method: str, path: str, raw: bytes | None, headers: dict[str, str]) -> Any:
        request = urllib.request.Request(
            self.upstream + path, data=raw, headers=headers, method=method
        )
        try:
            return urllib.request.urlopen(request, timeout=1800)
        except urllib.error.HTTPError as exc:
            return exc

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._pass(None)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._pass(raw)

            def _pass(self, raw: bytes | None) -> None:
                body: dict[str, Any] | None = None
                if raw and self.path.rstrip("/").endswith("/chat/completions"):
                    body = kept = json.loads(raw)
                    structured = bool(kept.get("response_format"))
                    (proxy.structured_requests if structured else proxy.requests).append(kept)
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() in ("content-type", "authorization")
                }
                with proxy._one:
                    answer = proxy._forward(self.command, self.path, raw, headers)
                    self.send_response(answer.status)
                    self.send_header(
                        "Content-Type", answer.headers.get("Content-Type", "application/json")
                    )
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.close_connection = True
                    read = getattr(answer, "read1", answer.read)  # a stream as it comes
                    seen = b""
                    while chunk := read(65536):
                        seen += chunk
                        with contextlib.suppress(ConnectionError):  # the client gave up
                            self.wfile.write(chunk)
                            self.wfile.flush()
                if body is not None:
                    usage = _usage(seen)
                    if usage:
                        proxy.usage[id(body)] = usage

        return Handler


def _usage(data: bytes) -> dict[str, int] | None:
    """The usage an answer reported: a JSON body's, or a stream's last usage chunk."""
    text = data.decode("utf-8", "replace")
    candidates = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    for raw in reversed(candidates or [text]):
        try:
            usage = json.loads(raw).get("usage")
        except (ValueError, AttributeError):
            continue
        if isinstance(usage, dict) and usage.get("prompt_tokens"):
            return {k: int(v) for k, v in usage.items() if isinstance(v, int)}
    return None
