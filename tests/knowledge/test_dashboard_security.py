"""DNS rebinding, Origin, token and binding checks of the dashboard, over real HTTP."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator

import pytest

from knowledge.core.graph import Graph, Node
from theus.dashboard.server import Dashboard, UnsafeHostError
from theus.service.http_guard import token_ok

ROUTES = (
    "/",
    "/dashboard",
    "/dashboard/app.js",
    "/dashboard/app.css",
    "/api/health",
    "/api/status",
    "/api/graph",
    "/api/database",
    "/api/schema",
    "/nope",
)
DATA_ROUTES = ("/api/status", "/api/graph", "/api/database", "/api/schema")


@pytest.fixture
def dash() -> Iterator[Dashboard]:
    graph = Graph()
    graph.upsert(Node("file:secret_plans.py", "file", "secret_plans.py", path="secret_plans.py"))
    server = Dashboard(lambda: graph, status=lambda: {"index": {"root": "/home/me/repo"}})
    server.start()
    yield server
    server.stop()


def fetch(
    dash: Dashboard, path: str, headers: dict[str, str], method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", dash.port, timeout=10)
    try:
        conn.request(method, path, headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def good(dash: Dashboard, **extra: str) -> dict[str, str]:
    return {"Host": f"127.0.0.1:{dash.port}", "X-Theus-Token": dash.token, **extra}


def test_rebinding_hosts_are_refused_on_every_route(dash: Dashboard) -> None:
    other = dash.port + 1 if dash.port < 65535 else dash.port - 1
    for host in (
        f"evil.example:{dash.port}",
        f"localhost.evil.example:{dash.port}",
        f"localhost:{other}",
        f"127.0.0.1:{other}",
        "localhost",
        "127.0.0.1",
        f"127.0.0.1.nip.io:{dash.port}",
        f"[::2]:{dash.port}",
        "",
    ):
        for route in ROUTES:
            status, headers, body = fetch(dash, route, good(dash, Host=host))
            assert status == 403, (host, route, status)
            assert json.loads(body) == {"error": "forbidden host"}
            assert "access-control-allow-origin" not in headers


def test_loopback_hosts_are_accepted(dash: Dashboard) -> None:
    for host in (
        f"127.0.0.1:{dash.port}",
        f"localhost:{dash.port}",
        f"[::1]:{dash.port}",
        f"LocalHost:{dash.port}",
    ):
        for route in DATA_ROUTES:
            status, _, _ = fetch(dash, route, good(dash, Host=host))
            assert status == 200, (host, route)


def test_missing_or_repeated_host_header_is_refused(dash: Dashboard) -> None:
    for raw in (
        b"GET /api/health HTTP/1.0\r\n\r\n",
        b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nHost: evil.example\r\n"
        b"Connection: close\r\n\r\n" % dash.port,
    ):
        with socket.create_connection(("127.0.0.1", dash.port), timeout=10) as sock:
            sock.sendall(raw)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 403"), answer[:60]


def test_foreign_and_null_origins_are_refused(dash: Dashboard) -> None:
    other = dash.port + 1 if dash.port < 65535 else dash.port - 1
    for origin in (
        "https://evil.example",
        "null",
        "http://evil.example",
        f"http://localhost:{other}",
        f"http://127.0.0.1:{dash.port}.evil.example",
        f"https://127.0.0.1:{dash.port}",
        "file://",
        "",
    ):
        for route in ROUTES:
            status, headers, body = fetch(dash, route, good(dash, Origin=origin))
            assert status == 403, (origin, route, status)
            assert json.loads(body)["error"] == "forbidden origin"
            assert "access-control-allow-origin" not in headers


def test_same_origin_requests_pass(dash: Dashboard) -> None:
    for origin in (f"http://127.0.0.1:{dash.port}", f"http://localhost:{dash.port}"):
        status, _, _ = fetch(dash, "/api/graph", good(dash, Origin=origin))
        assert status == 200


def test_cross_site_fetch_metadata_is_refused_on_data_routes(dash: Dashboard) -> None:
    status, _, _ = fetch(dash, "/api/graph", good(dash, **{"Sec-Fetch-Site": "cross-site"}))
    assert status == 403
    status, _, _ = fetch(dash, "/api/graph", good(dash, **{"Sec-Fetch-Site": "same-origin"}))
    assert status == 200


def test_data_routes_need_the_token(dash: Dashboard) -> None:
    host = {"Host": f"127.0.0.1:{dash.port}"}
    wrong = dash.token[:-1] + ("A" if dash.token[-1] != "A" else "B")
    for route in DATA_ROUTES:
        for headers, query in (
            (host, ""),
            ({**host, "X-Theus-Token": ""}, ""),
            ({**host, "X-Theus-Token": wrong}, ""),
            ({**host, "Authorization": f"Bearer {wrong}"}, ""),
            (host, f"?token={wrong}"),
            (host, f"?token={dash.token[:10]}"),
            ({**host, "Cookie": f"token={dash.token}"}, ""),
        ):
            status, headers_back, body = fetch(dash, route + query, headers)
            assert status == 401, (route, headers, query)
            assert b"secret_plans" not in body and b"/home/me" not in body
            assert "access-control-allow-origin" not in headers_back
        for headers, query in (
            ({**host, "X-Theus-Token": dash.token}, ""),
            ({**host, "Authorization": f"Bearer {dash.token}"}, ""),
            (host, f"?token={dash.token}"),
        ):
            status, _, _ = fetch(dash, route + query, headers)
            assert status == 200, (route, headers, query)


def test_health_reveals_nothing_but_liveness(dash: Dashboard) -> None:
    status, headers, body = fetch(dash, "/api/health", {"Host": f"localhost:{dash.port}"})
    assert status == 200 and json.loads(body) == {"ok": True}
    for leak in (b"secret_plans", b"/home/me", b"version", dash.token.encode()):
        assert leak not in body
    assert headers["server"].strip() == "theus-dashboard"  # no Python version either


def test_no_cors_and_no_preflight(dash: Dashboard) -> None:
    status, headers, _ = fetch(
        dash,
        "/api/graph",
        good(dash, Origin="https://evil.example", **{"Access-Control-Request-Method": "GET"}),
        method="OPTIONS",
    )
    assert status == 403 and "access-control-allow-origin" not in headers
    status, headers, _ = fetch(dash, "/api/graph", good(dash), method="OPTIONS")
    assert status == 405 and "access-control-allow-origin" not in headers
    for method in ("POST", "PUT", "DELETE"):
        status, headers, _ = fetch(dash, "/api/graph", good(dash), method=method)
        assert status == 405
    status, headers, body = fetch(dash, "/api/graph", good(dash), method="HEAD")
    assert status == 200 and body == b"" and int(headers["content-length"]) > 0
    for route in ROUTES:
        _, headers, _ = fetch(dash, route, good(dash))
        assert not any(k.startswith("access-control-") for k in headers)
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["cache-control"] == "no-store"
        assert headers["x-frame-options"] == "DENY"


def test_token_is_random_per_run_and_in_the_url() -> None:
    graph = Graph()
    a, b = Dashboard(lambda: graph), Dashboard(lambda: graph)
    try:
        assert a.token != b.token and len(a.token) >= 40
        assert a.url == f"http://127.0.0.1:{a.port}/dashboard?token={a.token}"
    finally:
        a.stop()
        b.stop()
    assert token_ok(a.token, a.token) and not token_ok(None, a.token)
    assert not token_ok("é", a.token)  # non-ASCII input is refused, not a crash


def test_binds_loopback_only_unless_told() -> None:
    graph = Graph()
    dash = Dashboard(lambda: graph)
    try:
        assert dash.httpd.server_address[0] == "127.0.0.1"
    finally:
        dash.stop()
    for host in ("0.0.0.0", "192.0.2.10", "example.com", "::"):
        with pytest.raises(UnsafeHostError):
            Dashboard(lambda: graph, host=host)


def test_another_loopback_address_answers_to_its_own_name() -> None:
    graph = Graph()
    dash = Dashboard(lambda: graph, host="127.0.0.2").start()
    try:
        conn = http.client.HTTPConnection("127.0.0.2", dash.port, timeout=10)
        conn.request("GET", "/api/health", headers={"Host": f"127.0.0.2:{dash.port}"})
        assert conn.getresponse().status == 200
        conn.close()
        assert dash.url.startswith(f"http://127.0.0.2:{dash.port}/")
    finally:
        dash.stop()


def _pipelined(dash: Dashboard, *requests: bytes) -> bytes:
    """Send `requests` back to back on one connection; everything read until the server
    closes it."""
    with socket.create_connection(("127.0.0.1", dash.port), timeout=30) as sock:
        sock.sendall(b"".join(requests))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _get(dash: Dashboard, path: str, *lines: str) -> bytes:
    head = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{dash.port}", *lines]
    return ("\r\n".join(head) + "\r\n\r\n").encode()


@pytest.mark.parametrize(
    "refused", ["foreign-origin", "foreign-host", "no-token", "cross-site", "method", "post-body"]
)
def test_a_refused_request_closes_its_connection(dash: Dashboard, refused: str) -> None:
    # A page that got one request refused must not reach the data with the next one it
    # pipelines on the same connection (or hides in the refused request's body).
    wanted = _get(dash, "/api/graph", f"X-Theus-Token: {dash.token}", "Connection: close")
    first = {
        "foreign-origin": _get(dash, "/api/graph", "Origin: https://evil.example"),
        "foreign-host": _get(dash, "/api/graph").replace(
            f"127.0.0.1:{dash.port}".encode(), b"evil.example"
        ),
        "no-token": _get(dash, "/api/graph"),
        "cross-site": _get(
            dash, "/api/graph", f"X-Theus-Token: {dash.token}", "Sec-Fetch-Site: cross-site"
        ),
        "method": _get(dash, "/api/graph").replace(b"GET", b"PUT", 1),
        "post-body": (
            f"POST /api/history/x/invalidate HTTP/1.1\r\nHost: 127.0.0.1:"
            f"{dash.port}\r\nOrigin: https://evil.example\r\nContent-Length: "
            f"{len(wanted)}\r\n\r\n"
        ).encode()
        + wanted,
    }[refused]
    answer = _pipelined(dash, first, wanted)
    assert answer.count(b"HTTP/1.1 ") == 1, answer
    assert answer.split(b" ", 2)[1] in (b"401", b"403", b"405")
    assert b"connection: close" in answer.lower()
    assert b"secret_plans" not in answer


def test_accepted_requests_keep_their_connection(dash: Dashboard) -> None:
    ask = _get(dash, "/api/graph", f"X-Theus-Token: {dash.token}")
    answer = _pipelined(dash, ask, ask, _get(dash, "/api/health", "Connection: close"))
    assert answer.count(b"HTTP/1.1 200") == 3
