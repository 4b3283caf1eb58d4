"""Run a shell command in the project root, after approval, with a timeout, in the sandbox
(`sandbox`) where this machine has one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

from theus.protocol import ApprovalRequest
from theus.tools.base import Tool, ToolContext, ToolError, int_arg, string_arg
from theus.tools.sandbox import NO_SANDBOX_WARNING, sandbox_argv, shell_env

MAX_OUTPUT = 30_000


async def run_shell(args: dict[str, Any], ctx: ToolContext) -> str:
    command = string_arg(args, "command")
    if not command.strip():
        raise ToolError("command is empty")
    timeout = int_arg(args, "timeout_s", int(ctx.shell_timeout_s), low=1, high=600)
    if not await ctx.approve(ApprovalRequest("shell", f"run: {command[:80]}", command)):
        raise ToolError(f"refused: the command was not approved ({ctx.denied_hint})")
    argv = sandbox_argv(command, ctx.jail.root)
    warning = ""
    if argv is None:
        argv = ["/bin/sh", "-c", command]
        if NO_SANDBOX_WARNING not in ctx.warned:  # said once a session, not every call
            ctx.warned.add(NO_SANDBOX_WARNING)
            warning = NO_SANDBOX_WARNING + "\n"
    ctx.commands.append(command)
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=ctx.jail.root, env=shell_env(os.environ), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True)  # its own process group, so the whole tree can be killed
    assert proc.stdout is not None
    try:
        text = await asyncio.wait_for(_bounded_output(proc.stdout), timeout)
        await proc.wait()
    except (TimeoutError, asyncio.CancelledError):
        _kill_group(proc.pid)
        await proc.wait()
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        raise ToolError(f"timed out after {timeout}s (the command was killed)") from None
    _kill_group(proc.pid)  # what it left running in its group ends with the call
    return f"{warning}exit {proc.returncode}\n{text}".rstrip()


async def _bounded_output(stream: asyncio.StreamReader) -> str:
    """All of a command's output read, but only its head and tail kept (`MAX_OUTPUT`
    characters in all): a command printing gigabytes costs time, never memory."""
    half = MAX_OUTPUT // 2
    head = bytearray()
    tail = bytearray()
    total = 0
    while chunk := await stream.read(65536):
        total += len(chunk)
        if len(head) < half:
            take = half - len(head)
            head += chunk[:take]
            chunk = chunk[take:]
        tail += chunk
        if len(tail) > 2 * half:  # trimmed in steps, not on every read
            del tail[: len(tail) - half]
    decode = lambda data: data.decode("utf-8", errors="replace")  # noqa: E731
    if total <= MAX_OUTPUT:
        return decode(bytes(head + tail))
    cut = total - len(head) - min(len(tail), half)
    return (decode(bytes(head)) + f"\n... ({cut:,} bytes of output cut) ...\n"
            + decode(bytes(tail[-half:])))


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
