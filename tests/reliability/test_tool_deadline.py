"""A tool that blocks (a file open()ed while it became a FIFO, a server that never answers)
ends with its turn's deadline or Ctrl-C, and cannot keep the process from exiting. A child
process runs the real agent loop and model client against the scripted server; its tool blocks
in a real open() of a real FIFO nobody writes, on the file tools' own kind of thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import write_tree
from tests.scripted_server import ScriptedServer, text, tool

REPO = Path(__file__).resolve().parents[2]
NEVER = 120  # a guard only: without the fix the child never exits

CHILD = textwrap.dedent("""
    import asyncio, faulthandler, os, signal, sys
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `exited` prints the stacks of a hang
    from entrypoint.settings import apply
    apply({}, os.environ)  # as `theus` does at start
    from pathlib import Path
    from theus.agent.injection import Injector
    from theus.agent.loop import Agent
    from theus.config import AgentSettings, ModelSettings
    from theus.model import ModelClient
    from theus.protocol import ToolCallStarted
    from theus.tools.base import Tool, in_thread

    root, url, deadline = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])

    async def wait_for_pipe(args, ctx):
        fd = await in_thread(os.open, str(root / "pipe"), os.O_RDONLY)  # no writer comes
        return "the pipe opened"

    def sink(event):
        if isinstance(event, ToolCallStarted):
            print("started", flush=True)

    async def main():
        settings = AgentSettings(inject=False, turn_deadline_s=deadline)
        model = ModelClient(ModelSettings(base_url=url, api_key="k", model="test-model",
                                          source="test"))
        stuck = Tool("wait_for_pipe", "Wait for the pipe.", {"type": "object"}, wait_for_pipe)
        agent = Agent(model, root, settings=settings, injector=Injector(settings, None),
                      tools={"wait_for_pipe": stuck}, sink=sink)
        try:
            result = await agent.run_turn("go")
            print(result.stop, "|", result.error)
            print(agent.messages[-1]["content"])
        finally:
            await model.close()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        print("interrupted")
""")


def start(root: Path, url: str, deadline: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), url, str(deadline)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def exited(child: subprocess.Popen[str]) -> tuple[str, str]:
    """The child's output once it exited; if it never does, a failure with its threads'
    stacks (a hang seen only on loaded machines is found from its CI log)."""
    try:
        return child.communicate(timeout=NEVER)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGUSR1)
        try:
            child.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
        out, err = child.communicate()
        raise AssertionError(f"the child never exited; its threads:\n{err}\n{out}") from None


def project(tmp_path: Path) -> Path:
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n"})
    os.mkfifo(root / "pipe")
    return root


def test_a_blocked_tool_ends_with_the_turn_deadline_and_the_process_exits(tmp_path: Path) -> None:
    root = project(tmp_path)
    with ScriptedServer([tool("wait_for_pipe")]) as server:
        child = start(root, server.url, 3)
        out, err = exited(child)
    assert child.returncode == 0, err
    started, ended, last = out.splitlines()
    assert started == "started"
    assert ended == "error | stopped: the request passed its deadline of 3s (THEUS_TURN_DEADLINE)"
    assert last == (
        "error: stopped: the request passed its deadline of 3s "
        "(THEUS_TURN_DEADLINE) while this tool ran"
    )


def test_ctrl_c_stops_a_blocked_tool_and_the_process_exits(tmp_path: Path) -> None:
    root = project(tmp_path)
    with ScriptedServer([tool("wait_for_pipe"), text("never asked")]) as server:
        child = start(root, server.url, 1800)
        assert child.stdout is not None
        assert child.stdout.readline() == "started\n"
        child.send_signal(signal.SIGINT)
        out, err = exited(child)
    assert child.returncode == 0, err
    assert out.splitlines() == ["interrupted"]
