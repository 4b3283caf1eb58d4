"""`theus mcp --http PORT`: Streamable HTTP on 127.0.0.1 only, behind the dashboard's rules
(`theus.service.http_guard`): the Host header must name this server, a foreign or `null`
Origin is refused (DNS rebinding), and every request carries the token, compared in constant
time (`Authorization: Bearer TOKEN`). The token is THEUS_MCP_TOKEN when set (so a client's
configuration can name it), else a fresh random one printed at start."""

from __future__ import annotations

import socket
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from theus.service.http_guard import allowed_hosts, host_ok, new_token, origin_ok, token_ok
from theus.settings import current

LOOPBACK = "127.0.0.1"
PATH = "/mcp"
TOKEN_ENV = "THEUS_MCP_TOKEN"


class Guard:
    """ASGI middleware: Host, then Origin, then the token, before the MCP app sees anything."""

    def __init__(self, app: ASGIApp, port: int, token: str) -> None:
        self.app = app
        self.allowed = allowed_hosts(port)
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(Headers(scope=scope))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, headers: Headers) -> JSONResponse | None:
        hosts = headers.getlist("host")
        if len(hosts) != 1 or not host_ok(hosts[0], self.allowed):
            return JSONResponse({"error": "forbidden host"}, status_code=403)
        if not origin_ok(headers.get("origin"), self.allowed):
            return JSONResponse({"error": "forbidden origin"}, status_code=403)
        auth = headers.get("authorization", "")
        given = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        if not token_ok(given, self.token):
            return JSONResponse(
                {"error": "missing or wrong token"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="theus"'},
            )
        return None


def token() -> str:
    return current().mcp_token or new_token()


def bind(port: int) -> socket.socket:
    """The listening socket on 127.0.0.1 (port 0: any free one). Raises OSError."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Inherited by each accepted connection: an answer's head and body go out at once, not
    # 40 ms apart (Nagle's algorithm waiting on the client's delayed ACK).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((LOOPBACK, port))
        sock.listen(128)  # from now on a client's connection waits for the server, not fails
    except OSError:
        sock.close()
        raise
    return sock


def serve(server: Any, sock: socket.socket, secret: str) -> None:
    """Serve `server` (an MCPServer) on `sock` until SIGINT/SIGTERM (uvicorn's handlers)."""
    import uvicorn

    port = sock.getsockname()[1]
    app = Guard(server.streamable_http_app(streamable_http_path=PATH, host=LOOPBACK), port, secret)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    uvicorn.Server(config).run(sockets=[sock])
