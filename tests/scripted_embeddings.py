"""A scripted OpenAI-compatible `/embeddings` server on 127.0.0.1, for the hosted path's tests.

    script = EmbeddingsScript(vector=my_vector, dim=8)
    with serve_embeddings(script) as base_url:   # "http://127.0.0.1:PORT/v1"
        ...
        script.mode = "hang"                     # ok | error | hang | ragged | html

Every request body and its headers are recorded. Answers come back out of order, as some
servers send them: a client must sort by `index`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class EmbeddingsScript:
    vector: Callable[[str, int], list[float]]  # text, dimension -> the vector to answer
    # ok | error (500) | hang (until released) | ragged (last vector short) | html (a proxy's
    # page with status 200)
    mode: str = "ok"
    dim: int = 8
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    @property
    def inputs(self) -> list[str]:
        return [text for body in self.requests for text in body["input"]]


def _handler(script: EmbeddingsScript) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            script.requests.append(body)
            script.headers.append({k.lower(): v for k, v in self.headers.items()})
            if script.mode == "hang":
                script.release.wait(10)
                return
            if script.mode == "error":
                self._send(500, {"error": {"message": "boom", "type": "server_error"}})
                return
            if script.mode == "html":
                page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
                return
            data: list[dict[str, Any]] = [
                {"object": "embedding", "index": i, "embedding": script.vector(text, script.dim)}
                for i, text in enumerate(body["input"])
            ]
            if script.mode == "ragged":
                data[-1]["embedding"] = data[-1]["embedding"][:-1]
            data.reverse()
            self._send(200, {"object": "list", "data": data, "model": body["model"]})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler


@contextmanager
def serve_embeddings(script: EmbeddingsScript) -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        script.release.set()
        httpd.shutdown()
        httpd.server_close()
