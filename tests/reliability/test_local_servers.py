"""`theus -p` against a server with llama.cpp's quirks (no streamed tool calls, no usage,
strict messages) and an answer cut at its length limit, in each output format."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_tree
from tests.scripted_server import Quirks, ScriptedServer, text, tool


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_a_llama_cpp_like_server_runs_a_tool_turn(tmp_path: Path, fmt: str) -> None:
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n"})
    script = [tool("read", {"path": "a.py"}), text("x is one and", finish="length")]
    quirks = Quirks(no_streamed_tools=True, ignores_stream_options=True, strict_messages=True)
    with ScriptedServer(script, quirks=quirks) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
        env.update(
            {
                "THEUS_HOME": str(tmp_path / "home"),
                "THEUS_NO_EMBEDDINGS": "1",
                "THEUS_NO_WATCH": "1",
                "THEUS_NO_FACTS": "1",
                "THEUS_BASE_URL": server.url,
                "THEUS_MODEL": "test-model",
            }
        )
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "entrypoint",
                "--path",
                str(root),
                "-p",
                "what is x?",
                "--output-format",
                fmt,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        sent = server.requests
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("theus: warning:")]
    assert len([w for w in warnings if "cannot stream tool calls" in w]) == 1
    assert any(re.search(r"answer cut at \d+ tokens", w) for w in warnings)
    assert [r.get("stream", False) for r in sent] == [True, False, False]
    assert all(m.get("content") is not None for r in sent for m in r["messages"])
    lines = done.stdout.splitlines()
    if fmt == "text":
        assert lines == ["x is one and"]
        return
    result = json.loads(lines[-1])
    assert result["subtype"] == "success" and result["result"] == "x is one and"
    assert re.fullmatch(r"answer cut at \d+ tokens", result["incomplete"])
    assert result["usage"]["estimated"] is True and result["usage"]["prompt_tokens"] > 0
    if fmt == "stream-json":
        events = [json.loads(line) for line in lines]
        notices = [e["message"] for e in events if e.get("subtype") == "error" and not e["fatal"]]
        assert any(n.startswith("answer cut at") for n in notices)
