"""A reader that stops reading (`theus sessions | head`) ends the command quietly, exit 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_tree


def run_with_closed_stdout(args: list[str], root: Path, home: Path) -> tuple[int, str]:
    """Run `theus ARGS` with stdout a pipe whose reader is already gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update({"THEUS_HOME": str(home), "THEUS_NO_EMBEDDINGS": "1", "THEUS_NO_WATCH": "1"})
    try:
        done = subprocess.run(
            [sys.executable, "-m", "entrypoint", "--path", str(root), *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    return done.returncode, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["status"],
        ["status", "--json"],
        ["recall", "cart total"],
        ["sessions"],
        ["episodes"],
        ["index"],
    ],
)
def test_a_closed_pipe_exits_quietly(tmp_path: Path, args: list[str]) -> None:
    root = write_tree(
        tmp_path / "repo", {"shop/cart.py": "class Cart:\n    def total(self):\n        return 0\n"}
    )
    code, stderr = run_with_closed_stdout(args, root, tmp_path / "home")
    assert code == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr


def test_a_headless_stream_read_by_head_exits_quietly(tmp_path: Path) -> None:
    from tests.scripted_server import ScriptedServer, text, tool

    root = write_tree(tmp_path / "repo", {"cart.py": "def total():\n    return 0\n"})
    with ScriptedServer() as server:
        server.add(tool("read", {"path": "cart.py"}), text("done"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
        env.update(
            {
                "THEUS_HOME": str(tmp_path / "home"),
                "THEUS_NO_EMBEDDINGS": "1",
                "THEUS_NO_WATCH": "1",
                "THEUS_BASE_URL": server.url,
                "THEUS_MODEL": "test-model",
            }
        )
        # `theus -p … --output-format stream-json | head -1`
        theus = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "entrypoint",
                "--path",
                str(root),
                "-p",
                "read cart.py",
                "--output-format",
                "stream-json",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert theus.stdout is not None and theus.stderr is not None
        first = theus.stdout.readline()
        theus.stdout.close()
        stderr = theus.stderr.read().decode()
        code = theus.wait(timeout=60)
    assert first.startswith(b"{")
    assert code == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr
