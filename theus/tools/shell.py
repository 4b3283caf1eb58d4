"""Run a shell command in the project root, after approval, with a timeout."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

from theus.agent.events import ApprovalRequest
from theus.tools.base import Tool, ToolContext, ToolError, int_arg, string_arg

MAX_OUTPUT = 30_000
# The agent's own secrets never reach the commands it runs.
_HIDDEN_ENV = ("THEUS_API_KEY", "OPENAI_API_KEY", "THEUS_EMBEDDINGS_KEY")


async def run_shell(args: dict[str, Any], ctx: ToolContext) -> str:
    command = string_arg(args, "command")
    if not command.strip():
        raise ToolError("command is empty")
    timeout = int_arg(args, "timeout_s", int(ctx.shell_timeout_s), low=1, high=600)
    if not await ctx.approve(ApprovalRequest("shell", f"run: {command[:80]}", command)):
        raise ToolError(f"refused: the command was not approved ({ctx.denied_hint})")
    env = {k: v for k, v in os.environ.items() if k not in _HIDDEN_ENV}
    proc = await asyncio.create_subprocess_shell(
        command, cwd=ctx.jail.root, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True)  # its own process group, so a timeout kills the whole tree
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except (TimeoutError, asyncio.CancelledError):
        _kill_group(proc.pid)
        await proc.wait()
        if asyncio.current_task() is not None and asyncio.current_task().cancelling():
            raise
        raise ToolError(f"timed out after {timeout}s (the command was killed)") from None
    text = out.decode("utf-8", errors="replace")
    if len(text) > MAX_OUTPUT:
        text = text[:MAX_OUTPUT // 2] + "\n... (output cut) ...\n" + text[-MAX_OUTPUT // 2:]
    return f"exit {proc.returncode}\n{text}".rstrip()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


SHELL = Tool(
    "shell", "Run a shell command in the project root (asks for approval). Returns exit code and "
    "combined output.",
    {"type": "object", "properties": {"command": {"type": "string"},
                                      "timeout_s": {"type": "integer"}},
     "required": ["command"]},
    run_shell)
