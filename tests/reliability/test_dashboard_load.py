"""Idle connections by the hundred, then all closed at once: the dashboard keeps answering
at once, with no traceback for the clients that went away."""

from __future__ import annotations

import socket
import time

import pytest

from tests.knowledge.test_dashboard_security import dash, fetch, good  # noqa: F401
from theus.dashboard.server import Dashboard


def test_idle_connections_then_a_mass_close_leave_it_responsive(
    dash: Dashboard,  # noqa: F811
    capfd: pytest.CaptureFixture[str],
) -> None:
    idle = []
    for _ in range(500):
        sock = socket.create_connection(("127.0.0.1", dash.port), timeout=5)
        idle.append(sock)
    half = [s for i, s in enumerate(idle) if i % 2]
    for sock in half:  # some say something, then all go away mid-request
        sock.sendall(b"GET /api/graph HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    for sock in idle:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()  # RST: the rudest close
    status, _, _ = fetch(dash, "/api/status", good(dash))  # a stuck server times it out
    assert status == 200
    time.sleep(0.5)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipe" not in err and "ConnectionReset" not in err
