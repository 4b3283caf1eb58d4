"""A FIFO, a socket or a device in the project: opening a FIFO for reading waits for a writer
that never comes, which hung `read` and `grep` past the turn deadline and past Ctrl-C. The real
tools, on real special files, refuse them in one line or walk past them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_tree
from tests.scripted_server import ScriptedServer, text, tool
from tests.theus.test_headless import blocks, lines, theus
from theus.tools import files
from theus.tools.base import ToolContext, ToolError
from theus.tools.jail import Jail

# A guard only: without the fix a read of a FIFO never returns, so the test fails here.
NEVER = 60.0


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = write_tree(
        tmp_path / "repo", {"notes.txt": "the needle is here\n", "src/app.py": "needle = 1\n"}
    )
    os.mkfifo(root / "pipe")
    monkeypatch.chdir(root)  # a socket's path is short-limited: bound by a relative one
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("agent.sock")
        yield root


async def call(tool: Any, args: dict[str, Any], root: Path) -> str:
    async def approve(request: Any) -> bool:
        return True

    ctx = ToolContext(jail=Jail(root), approve=approve)
    try:
        result: str = await asyncio.wait_for(tool.run(args, ctx), NEVER)
    except TimeoutError:
        # The reader still blocked gets its end of file, so the test fails instead of hanging.
        with contextlib.suppress(OSError):
            os.close(os.open(root / "pipe", os.O_WRONLY | os.O_NONBLOCK))
        raise
    return result


@pytest.mark.parametrize(
    ("path", "what"), [("pipe", "a named pipe (FIFO)"), ("agent.sock", "a socket")]
)
async def test_read_refuses_a_special_file_in_one_line(project: Path, path: str, what: str) -> None:
    with pytest.raises(ToolError) as refused:
        await call(files.read_file, {"path": path}, project)
    assert str(refused.value) == (
        f"{path}: {what}, not a regular file; the file tools open regular files only"
    )


async def test_grep_walks_past_special_files_and_refuses_one_it_is_given(project: Path) -> None:
    found = await call(files.grep, {"pattern": "needle"}, project)
    assert found.splitlines() == ["notes.txt:1: the needle is here", "src/app.py:1: needle = 1"]
    with pytest.raises(ToolError, match=r"^pipe: a named pipe \(FIFO\), not a regular file"):
        await call(files.grep, {"pattern": "needle", "path": "pipe"}, project)
    listed = await call(files.list_files, {"pattern": "*"}, project)
    assert listed.splitlines() == ["notes.txt", "src/app.py"]


async def test_edit_and_write_never_open_a_fifo(project: Path) -> None:
    with pytest.raises(ToolError, match="named pipe"):
        await call(files.edit_file, {"path": "pipe", "old_string": "a", "new_string": "b"}, project)
    with pytest.raises(ToolError, match="named pipe"):
        await call(files.write_file, {"path": "pipe", "content": "x"}, project)


def test_a_headless_run_over_fifos_ends_with_its_answer(project: Path) -> None:
    os.mkfifo(project / "src" / "queue.fifo")
    with ScriptedServer(
        [
            tool("read", {"path": "pipe"}),
            tool("grep", {"pattern": "needle"}),
            tool("grep", {"pattern": "needle", "path": "src/queue.fifo"}),
            text("done"),
        ]
    ) as server:
        done = theus(
            ["-p", "look", "--output-format", "stream-json"],
            server,
            project,
            THEUS_TURN_DEADLINE="45",
            THEUS_NO_FACTS="1",
        )
    assert done.returncode == 0, done.stderr
    events = lines(done.stdout)
    results = [b["content"] for b in blocks(done.stdout, "tool_result")]
    assert results == [
        "error: pipe: a named pipe (FIFO), not a regular file; the file tools open regular "
        "files only",
        "notes.txt:1: the needle is here\nsrc/app.py:1: needle = 1",
        "error: src/queue.fifo: a named pipe (FIFO), not a regular file; the file tools open "
        "regular files only",
    ]
    result = events[-1]
    assert result["subtype"] == "success" and result["result"] == "done", json.dumps(result)
