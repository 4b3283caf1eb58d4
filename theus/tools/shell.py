"""Run a shell command in the project root, after approval, with a timeout, in the sandbox
(`sandbox`) where this machine has one."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
from typing import Annotated

from theus.protocol import ApprovalRequest
from theus.settings import current
from theus.tools.base import Bounds, Effect, ToolContext, ToolError, tool
from theus.tools.sandbox import (
    NO_SANDBOX,
    TooLarge,
    put_aside_new_protected,
    sandbox_available,
    sandboxed,
    shell_env,
)

log = logging.getLogger("theus")
MAX_OUTPUT = 30_000
SETUP_ATTEMPTS = 3  # sandbox set-ups tried when what it covers changes under it
MARKER = "THEUS_SHELL_RUN"  # unconfined: marks every process a command started
UNSANDBOXED_HINT = (
    "no sandbox on this machine: install bubblewrap, or allow commands to run "
    "with the user's permissions: --allow-unsandboxed-shell headless, a yes in "
    "the app"
)


@tool(Effect.SHELL, name="shell")
async def run_shell(
    ctx: ToolContext, command: str, timeout_s: Annotated[int | None, Bounds(1, 600)] = None
) -> str:
    """Run a shell command in the project root (asks for approval). Returns exit code and
    combined output."""
    if not command.strip():
        raise ToolError("command is empty")
    timeout = timeout_s or max(1, min(600, int(ctx.shell_timeout_s)))
    protect = not ctx.allow_config_edits
    # Without a sandbox the request says so: no "always" rule covers it, the app asks with
    # the reason, headless needs --allow-unsandboxed-shell. THEUS_NO_SANDBOX=1 chose it.
    unconfined = "" if sandbox_available() or current().no_sandbox else NO_SANDBOX
    request = ApprovalRequest("shell", f"run: {command[:80]}", command, protected=unconfined)
    if not await ctx.approve(request):
        hint = request.reason or ctx.denied_hint + (f"; {UNSANDBOXED_HINT}" if unconfined else "")
        raise ToolError(f"refused: the command was not approved ({hint})")
    ctx.commands.append(command)
    try:
        for attempt in range(SETUP_ATTEMPTS):
            with sandboxed(command, ctx.jail.root, protect=protect) as launch:
                if launch is None:
                    status, text = await _run(
                        ["/bin/sh", "-c", command], (), ctx, timeout, marker=secrets.token_hex(8)
                    )
                    break
                status, text = await _run(launch.argv, launch.pass_fds, ctx, timeout)
            # bubblewrap refused to set up before the command ran: something it was to cover
            # (a socket, a secrets file) vanished after the scan. The command never ran: again.
            if not (status == 1 and text.startswith("bwrap: ")) or attempt + 1 == SETUP_ATTEMPTS:
                break
    except TooLarge as exc:
        raise ToolError(f"refused: {exc} (the sandbox could not hide them)") from None
    moved = put_aside_new_protected(ctx.jail.root, launch.before) if launch and protect else []
    unwarned = launch is None and NO_SANDBOX not in ctx.warned
    if unwarned:  # said once a session, to the user (stderr headless) and to the model
        ctx.warned.add(NO_SANDBOX)
        log.warning("shell: %s", NO_SANDBOX)
    notes = "".join(
        f"{line}\n"
        for line in (
            f"note: {NO_SANDBOX}" if unwarned else "",
            f"note: protected files the command created or replaced were moved out of the project "
            f"(they run code later; --allow-config-edits allows them): {', '.join(moved)}"
            if moved
            else "",
        )
        if line
    )
    return f"{notes}exit {status}\n{text}".rstrip()


async def _run(
    argv: list[str],
    pass_fds: tuple[int, ...],
    ctx: ToolContext,
    timeout: int,
    marker: str | None = None,
) -> tuple[int | None, str]:
    """Runs `argv`; what it leaves behind dies with it: its process group, and, unconfined,
    every process that inherited `marker` in its environment (a `setsid` daemon leaves the
    group; the sandbox's own PID namespace needs no marker)."""
    env = shell_env(os.environ, current().shell_env)
    if marker is not None:
        env[MARKER] = marker
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=ctx.jail.root,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        pass_fds=pass_fds,
        start_new_session=True,
    )  # its own process group, so the whole tree can be killed
    assert proc.stdout is not None
    output = asyncio.ensure_future(_bounded_output(proc.stdout))
    try:
        async with asyncio.timeout(timeout):
            await proc.wait()
            # The command is over when its shell is: what it left running ends now, and with
            # it their end of the output pipe.
            _kill_leftovers(proc.pid, marker)
            text = await output
    except (TimeoutError, asyncio.CancelledError):
        output.cancel()
        _kill_leftovers(proc.pid, marker)
        await proc.wait()
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        raise ToolError(f"timed out after {timeout}s (the command was killed)") from None
    return proc.returncode, text


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
    if total <= MAX_OUTPUT:
        return _decode(bytes(head + tail))
    cut = total - len(head) - min(len(tail), half)
    return (
        _decode(bytes(head))
        + f"\n... ({cut:,} bytes of output cut) ...\n"
        + _decode(bytes(tail[-half:]))
    )


def _kill_leftovers(pid: int, marker: str | None) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    if marker is None:
        return
    needle = f"{MARKER}={marker}".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as environ:
                if needle in environ.read():
                    os.kill(int(entry.name), signal.SIGKILL)
        except OSError:  # gone, or another user's
            continue


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
