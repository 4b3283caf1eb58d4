"""`theus dashboard` as a user runs it: a real process, its printed link, Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.conftest import write_tree


def start(args: list[str], home: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "entrypoint", "dashboard", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "THEUS_HOME": str(home)},
    )


def read_url(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        found = re.search(r"http://\S+", line)
        if found:
            return found.group(0)
    raise AssertionError(f"no URL printed; stderr: {proc.stderr.read() if proc.stderr else ''}")


def get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        answer: dict[str, Any] = json.loads(resp.read())
        return answer


def test_serves_an_unindexed_project_and_stops_on_ctrl_c(tmp_path: Path, theus_home: Path) -> None:
    root = write_tree(
        tmp_path / "repo",
        {
            "app.py": "def main():\n    return 1\n",
            "schema.prisma": "model Order {\n  id Int @id\n}\n",
        },
    )
    proc = start([str(root), "--port", "0"], theus_home)
    try:
        url = read_url(proc)
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/dashboard\?token=[\w-]{40,}", url)
        base, token = url.split("/dashboard?token=")
        deadline = time.monotonic() + 30
        while True:  # the first index runs in the background; the server answers meanwhile
            status = get(f"{base}/api/status?token={token}")
            if status["counts"].get("table") == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        counts = status["counts"]
        assert counts["file"] == 2 and counts["table"] == 1 and counts["column"] == 1
        assert status["sections"]["index"]["root"] == str(root)  # theus status, injected
        with urllib.request.urlopen(url, timeout=10) as page:
            assert b"<canvas" in page.read()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_standalone_dashboard_follows_edits(tmp_path: Path, theus_home: Path) -> None:
    """As the app's dashboard does: a file added while it serves shows up without a restart."""
    root = write_tree(tmp_path / "repo", {"app.py": "def main():\n    return 1\n"})
    proc = start([str(root), "--port", "0"], theus_home)
    try:
        base, token = read_url(proc).split("/dashboard?token=")

        def files() -> object:
            counts = get(f"{base}/api/status?token={token}")["counts"]
            return counts.get("file") if isinstance(counts, dict) else None

        def until(wanted: int) -> object:
            deadline = time.monotonic() + 30
            while (found := files()) != wanted and time.monotonic() < deadline:
                time.sleep(0.1)
            return found

        assert until(1) == 1
        # Written while the watcher may still be starting: its first scan catches up.
        (root / "billing.py").write_text("def invoice_total(lines):\n    return sum(lines)\n")
        assert until(2) == 2
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_arguments_are_one_line_errors(tmp_path: Path, theus_home: Path) -> None:
    for args, expected in (
        ([str(tmp_path), "--port", "70000"], "--port must be between 0 and 65535"),
        ([str(tmp_path / "missing")], "no such folder"),
    ):
        proc = start(args, theus_home)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 2
        assert expected in err and err.count("\n") == 1


def test_a_taken_port_is_reported(tmp_path: Path, theus_home: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        proc = start([str(tmp_path), "--port", str(busy.getsockname()[1])], theus_home)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "pick another with --port" in err
