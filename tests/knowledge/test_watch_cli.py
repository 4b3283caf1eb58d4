"""`theus watch` in the foreground: one line per update, Ctrl-C stops after a final save."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from knowledge.index.project import Project
from tests.conftest import write_tree

DEADLINE = 30.0


def _lines(stream) -> queue.Queue[str]:  # type: ignore[no-untyped-def]
    out: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            out.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return out


def _expect(lines: queue.Queue[str], needle: str) -> str:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            continue
        if needle in line:
            return line
    raise AssertionError(f"no line with {needle!r}")


def test_watch_prints_updates_and_saves_on_ctrl_c(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"app.py": "def one():\n    pass\n"})
    child = subprocess.Popen(
        [sys.executable, "-m", "entrypoint", "watch", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        lines = _lines(child.stdout)
        _expect(lines, "Watching")
        (root / "app.py").write_text("def one():\n    pass\n\ndef two():\n    pass\n")
        line = _expect(lines, "app.py")
        assert "nodes +1 -0" in line and line.rstrip().endswith("ms")
        child.send_signal(signal.SIGINT)
        assert child.wait(DEADLINE) == 0
        _expect(lines, "the graph is saved")
    finally:
        if child.poll() is None:
            child.kill()
    assert "sym:app.py#two" in Project(root).graph


def test_watch_honours_the_kill_switch(tmp_path: Path) -> None:
    env = dict(os.environ, THEUS_NO_WATCH="1")
    done = subprocess.run(
        [sys.executable, "-m", "entrypoint", "watch", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=DEADLINE,
    )
    assert done.returncode == 1
    assert "THEUS_NO_WATCH" in done.stderr and done.stderr.count("\n") == 1
