"""The dashboard's HTTP server: stdlib `ThreadingHTTPServer`, loopback only unless told.

Every request passes the Host and Origin checks (all routes, the page included); data routes
also need the per-run token. The run history's consistency operations (`POST
/api/history/ID/invalidate|restore`, `DELETE /api/history/ID`) need the token in a header (a
form cannot send one) and answer 503 with code VECTOR_STORE_UNAVAILABLE when the vector store
holding the run cannot be reached: nothing is changed then. The graph is read through
`SnapshotCache`, which holds ``graph.lock`` only while copying, so indexing and chat never
wait on a browser.
"""

from __future__ import annotations

import gzip
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import assets
from knowledge.core.errors import TheusError
from knowledge.core.graph import Graph
from knowledge.core.redact import redact_data
from theus.dashboard import api
from theus.dashboard.snapshot import Snapshot, SnapshotCache
from theus.service.http_guard import (
    HEADERS,
    allowed_hosts,
    host_ok,
    is_loopback,
    new_token,
    origin_ok,
    token_ok,
)

if TYPE_CHECKING:
    from knowledge.index.project import Project
    from knowledge.run_history.layer import RunHistory

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
StatusProvider = Callable[[], Mapping[str, Any]]

_STATIC = {
    "/dashboard": ("index.html", "text/html; charset=utf-8"),
    "/dashboard/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/dashboard/app.css": ("app.css", "text/css; charset=utf-8"),
}
_GZIP_FROM = 8192  # bytes; smaller answers are not worth compressing
# A refused request ends its connection: a request pipelined after it (or hidden in its
# unread body) is never answered.
_REFUSALS = frozenset({401, 403, 405})


class UnsafeHostError(TheusError, ValueError):
    """Binding beyond loopback was asked for without the explicit unsafe flag."""


class StaleCursor(TheusError):
    def __init__(self, version: int) -> None:
        super().__init__(version)
        self.version = version


class Dashboard:
    """One running server for one graph. ``graph`` returns the live graph on every request."""

    def __init__(
        self,
        graph: Callable[[], Graph],
        *,
        host: str = LOOPBACK,
        port: int = 0,
        status: StatusProvider | None = None,
        unsafe_host: bool = False,
        token: str | None = None,
        title: str = "",
        history: RunHistory | None = None,
    ) -> None:
        if not is_loopback(host) and not unsafe_host:
            raise UnsafeHostError(f"refusing to serve on {host}: not a loopback address")
        self.graph = graph
        self.history = history
        self.status = status
        self.title = title
        self.token = token or new_token()
        self.snapshots = SnapshotCache()
        self.httpd = _server_class(host)((host.strip("[]"), port), _Handler)
        self.httpd.dashboard = self  # type: ignore[attr-defined]
        self.host = host
        self.port: int = self.httpd.server_address[1]
        # Any other address it was told to bind (127.0.0.2, a LAN IP) is a name to answer to.
        bound = host.strip("[]")
        extra = () if bound in ("127.0.0.1", "localhost", "::1") else (bound,)
        self.allowed = allowed_hosts(self.port, extra)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"http://{host}:{self.port}/dashboard?token={self.token}"

    def start(self) -> Dashboard:
        self._thread = threading.Thread(
            target=self.httpd.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="theus-dashboard",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.httpd.server_close()

    # -- data ---------------------------------------------------------------------------------
    def snapshot(self, version: int | None = None) -> Snapshot:
        current = self.snapshots.current(self.graph())
        if version is None or version == current.version:
            return current
        pinned = self.snapshots.at(version)
        if pinned is None:
            raise StaleCursor(current.version)
        return pinned

    def sections(self) -> Mapping[str, Any]:
        if self.status is None:
            return {}
        try:
            return self.status()
        except Exception as exc:  # status fails open: shown as an error, never a 500
            log.warning("dashboard status provider failed", exc_info=True)
            return {"status": {"error": f"{type(exc).__name__}: {exc}"}}


MAX_CONNECTIONS = 64  # open at once; more are closed at once (a tab needs a handful)


def _server_class(host: str) -> type[ThreadingHTTPServer]:
    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 64
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        _slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

        def process_request(self, request: Any, client_address: Any) -> None:
            # Thousands of idle connections must not cost thousands of threads, nor slow the
            # answers to the one browser that is really asking.
            if not self._slots.acquire(blocking=False):
                self.shutdown_request(request)
                return
            try:
                super().process_request(request, client_address)
            except BaseException:
                self._slots.release()
                raise

        def process_request_thread(self, request: Any, client_address: Any) -> None:
            try:
                super().process_request_thread(request, client_address)
            finally:
                self._slots.release()

        def handle_error(self, request: Any, client_address: Any) -> None:
            # A client that went away mid-answer is routine, not a traceback on stderr.
            if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
                super().handle_error(request, client_address)

    return Server


def _route_status(d: Dashboard, params: Mapping[str, list[str]]) -> dict[str, Any]:
    with_sections = params.get("sections", ["1"])[-1] != "0"
    payload = api.status(d.snapshot(), d.sections() if with_sections else {})
    payload["title"] = d.title
    return payload


def _route_graph(d: Dashboard, params: Mapping[str, list[str]]) -> dict[str, Any]:
    query = api.parse_graph_query(params)
    return api.graph_page(d.snapshot(query.version), query)


_API: dict[str, Callable[[Dashboard, Mapping[str, list[str]]], dict[str, Any]]] = {
    "/api/status": _route_status,
    "/api/graph": _route_graph,
    "/api/database": lambda d, _: api.database(d.snapshot()),
    "/api/schema": lambda d, _: api.schema(d.snapshot()),
    "/api/history": lambda d, _: {
        "runs": [r.to_json() for r in d.history.journal.records()] if d.history is not None else []
    },
}
HISTORY_ACTIONS = {("POST", "invalidate"), ("POST", "restore"), ("DELETE", "")}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "theus-dashboard"
    sys_version = ""
    timeout = 5  # an idle connection must not hold a thread (and a slot) for long

    def do_GET(self) -> None:
        self._handle(head=False)

    def do_HEAD(self) -> None:
        self._handle(head=True)

    def _refuse_method(self) -> None:
        if self._checked():
            self._json(405, {"error": "method not allowed"}, extra={"Allow": "GET, HEAD"})

    def _change(self) -> None:
        """A history consistency operation, or 405 for any other route."""
        self._head = False
        parts = urlsplit(self.path).path.strip("/").split("/")
        if parts[:2] != ["api", "history"] or len(parts) not in (3, 4):
            self._refuse_method()
            return
        action = parts[3] if len(parts) == 4 else ""
        if not self._checked():
            return
        if (self.command, action) not in HISTORY_ACTIONS:
            self._json(405, {"error": "method not allowed"})
            return
        if not token_ok(self._token({}), self.dashboard.token):  # headers only
            self._json(
                401,
                {"error": "missing or wrong token (send X-Theus-Token)"},
                extra={"WWW-Authenticate": 'Bearer realm="theus"'},
            )
            return
        self._history_change(parts[2], action)

    def _history_change(self, ref: str, action: str) -> None:
        from knowledge.run_history.journal import AmbiguousRun, NoSuchRun
        from knowledge.vectors.port import VectorStoreUnavailable

        history = self.dashboard.history
        if history is None:
            self._json(404, {"error": "no run history here"})
            return
        try:
            record = (
                history.delete(ref)
                if action == ""
                else history.set_invalid(ref, action == "invalidate")
            )
        except NoSuchRun:
            self._json(404, {"error": f"no run matches {ref!r}"})
        except AmbiguousRun as exc:
            self._json(400, {"error": str(exc)})
        except VectorStoreUnavailable as exc:
            self._json(
                503,
                {"error": f"{exc}; nothing was changed", "code": "VECTOR_STORE_UNAVAILABLE"},
                extra={"Retry-After": "30"},
            )
        except Exception:
            log.exception("dashboard: history %s %s failed", action or "delete", ref)
            self._json(500, {"error": "internal error"})
        else:
            self._json(200, {"id": record.id, "invalid": record.invalid, "deleted": action == ""})

    do_POST = do_DELETE = _change
    do_PUT = do_PATCH = do_OPTIONS = _refuse_method

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("dashboard: " + format, *args)

    # -- routing ------------------------------------------------------------------------------
    @property
    def dashboard(self) -> Dashboard:
        return self.server.dashboard  # type: ignore[attr-defined,no-any-return]

    def _checked(self) -> bool:
        """Host and Origin: refused on every route, before anything else is looked at."""
        allowed = self.dashboard.allowed
        hosts = self.headers.get_all("Host") or []
        if len(hosts) != 1 or not host_ok(hosts[0], allowed):
            self._json(403, {"error": "forbidden host"})
            return False
        if not origin_ok(self.headers.get("Origin"), allowed):
            self._json(403, {"error": "forbidden origin"})
            return False
        return True

    def _handle(self, head: bool) -> None:
        self._head = head
        if not self._checked():
            return
        url = urlsplit(self.path)
        route = url.path.rstrip("/") or "/"
        if route == "/":
            target = "/dashboard" + (f"?{url.query}" if url.query else "")
            self._send(302, b"", "text/plain", extra={"Location": target})
        elif route == "/api/health":
            self._json(200, {"ok": True})
        elif route in _STATIC:
            name, ctype = _STATIC[route]
            self._send(200, assets.path(f"dashboard/{name}").read_bytes(), ctype)
        elif route in _API:
            self._api(route, parse_qs(url.query))
        else:
            self._json(404, {"error": "not found"})

    def _api(self, route: str, params: dict[str, list[str]]) -> None:
        if self.headers.get("Sec-Fetch-Site", "") == "cross-site":
            self._json(403, {"error": "cross-site request"})
            return
        if not token_ok(self._token(params), self.dashboard.token):
            self._json(
                401,
                {"error": "missing or wrong token"},
                extra={"WWW-Authenticate": 'Bearer realm="theus"'},
            )
            return
        try:
            payload = _API[route](self.dashboard, params)
        except api.QueryError as exc:
            self._json(400, {"error": str(exc)})
        except LookupError as exc:
            self._json(404, {"error": str(exc.args[0]) if exc.args else "not found"})
        except StaleCursor as exc:
            self._json(
                409, {"error": "the graph changed: start paging again", "version": exc.version}
            )
        except Exception:
            log.exception("dashboard: %s failed", route)
            self._json(500, {"error": "internal error"})
        else:
            self._json(200, payload)

    def _token(self, params: dict[str, list[str]]) -> str | None:
        header = self.headers.get("X-Theus-Token")
        if header:
            return header
        auth = self.headers.get("Authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        values = params.get("token")
        return values[-1] if values else None

    # -- answers ------------------------------------------------------------------------------
    def _json(self, code: int, payload: Any, extra: Mapping[str, str] | None = None) -> None:
        # Redacted string by string before it is JSON, whose escapes break the shapes.
        text = json.dumps(redact_data(payload), ensure_ascii=False, separators=(",", ":"))
        self._send(code, text.encode(), "application/json; charset=utf-8", extra)

    def _send(
        self, code: int, body: bytes, ctype: str, extra: Mapping[str, str] | None = None
    ) -> None:
        gzipped = len(body) >= _GZIP_FROM and "gzip" in self.headers.get("Accept-Encoding", "")
        if gzipped:
            body = gzip.compress(body, compresslevel=3)
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if gzipped:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        if code in _REFUSALS:  # sets close_connection: nothing pipelined after it is read
            self.send_header("Connection", "close")
        for name, value in {**HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        if not getattr(self, "_head", False):
            self.wfile.write(body)


def project_status(project: Project) -> dict[str, Any]:
    """The index section a bare `knowledge` host can offer (the app passes a richer one)."""
    for _ in range(3):  # the indexer may be mutating these dicts: retry, never lock it out
        try:
            return {
                "index": {
                    "root": str(project.root),
                    "indexed": project.has_index,
                    "skipped": dict(sorted(project.skipped_counts().items())),
                    "last_index": time.strftime(
                        "%Y-%m-%d %H:%M:%S", time.localtime(project.last_index)
                    )
                    if project.last_index
                    else None,
                }
            }
        except RuntimeError:
            continue
    return {"index": {"root": str(project.root), "error": "busy indexing"}}


def start_dashboard(
    project: Project,
    *,
    port: int = 0,
    host: str = LOOPBACK,
    unsafe_host: bool = False,
    status_provider: StatusProvider | None = None,
) -> tuple[str, Callable[[], None]]:
    """Serve ``project``'s live graph from a background thread. Returns (url, stop).

    The graph is the project's own (live while it is indexed or watched); when nothing has
    loaded it yet, the first request loads the persisted store, once.
    """
    loading = threading.Lock()

    def graph() -> Graph:
        with loading:  # `Project.graph` loads lazily: two first requests must not both load
            return project.graph

    from knowledge.run_history.layer import RunHistory

    dashboard = Dashboard(
        graph,
        host=host,
        port=port,
        unsafe_host=unsafe_host,
        status=status_provider or (lambda: project_status(project)),
        title=project.root.name,
        history=RunHistory.for_project(project.paths),
    ).start()
    return dashboard.url, dashboard.stop
