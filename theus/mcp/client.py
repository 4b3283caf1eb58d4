"""The agent's MCP connections: every configured server started at once, on one event loop
of their own (a daemon thread), so that any front end — the app's loop, `theus -p`'s, a worker
thread — can start them early and call their tools from its own loop.

A server that fails to start, or has not listed its tools within the `mcp_start_timeout`
setting, is one warning (`warnings`), and the others go on. A stdio server's stderr goes to a
log file in the data folder (`mcp-logs/<name>.log`), never onto the app's screen.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from knowledge.core.errors import TheusError
from knowledge.core.paths import data_home
from theus.mcp.config import ServerConfig
from theus.settings import current

if TYPE_CHECKING:  # the SDK takes ~1.5 s to import: only on the hub's thread, when needed
    import mcp_types

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 2.0
SETTLE_GRACE_S = 0.5  # past a start-up deadline, for the hub's timer to mark the server failed


class McpCallError(TheusError):
    """The call did not reach an answer: server not running, timed out, connection lost."""


@dataclass
class Connection:
    config: ServerConfig
    state: Literal["starting", "ready", "failed", "stopped"] = "starting"
    error: str = ""
    tools: list[mcp_types.Tool] = field(default_factory=list)
    client: Any = None  # mcp.Client while ready
    settled: threading.Event = field(default_factory=threading.Event)  # ready or failed
    deadline: float = 0.0  # time.monotonic() by which it is ready or failed

    @property
    def name(self) -> str:
        return self.config.name

    def settle(self, state: Literal["ready", "failed"], error: str = "") -> None:
        if self.state == "starting":
            self.state, self.error = state, error
        self.settled.set()


class McpHub:
    """Owns the connections. `connect` returns at once (servers start on the hub's thread);
    `wait_ready` waits for them, bounded; `close` stops them all."""

    def __init__(self, *, start_timeout_s: float | None = None) -> None:
        self.connections: dict[str, Connection] = {}
        self.config_warnings: list[str] = []
        self.start_timeout_s = start_timeout_s or current().mcp_start_timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._logs: list[TextIO] = []
        self._lock = threading.Lock()

    # -- life -----------------------------------------------------------------------------------
    def connect(self, servers: list[ServerConfig]) -> McpHub:
        """Start each server not started yet (in the background)."""
        with self._lock:
            deadline = time.monotonic() + self.start_timeout_s
            fresh = [
                Connection(s, deadline=deadline) for s in servers if s.name not in self.connections
            ]
            for conn in fresh:
                self.connections[conn.name] = conn
            if not fresh:
                return self
            loop = self._running_loop()
        for conn in fresh:
            loop.call_soon_threadsafe(self._launch, conn)
        return self

    def wait_ready(self, timeout_s: float | None = None) -> bool:
        """Until every server is ready or failed (True), or `timeout_s` passed (False). By
        default each server's own start-up deadline bounds the wait."""
        limit = None if timeout_s is None else time.monotonic() + timeout_s
        for conn in list(self.connections.values()):
            until = conn.deadline + SETTLE_GRACE_S if limit is None else limit
            if conn.settled.wait(max(0.0, until - time.monotonic())):
                continue
            if limit is not None:
                return False
            # Past its deadline and the hub has not even reached it (its thread was still
            # importing the SDK on a busy machine): it failed to start all the same.
            self._expire(conn)
        return True

    @property
    def starting(self) -> bool:
        return any(c.state == "starting" for c in self.connections.values())

    def close(self, patience_s: float = STOP_TIMEOUT_S + 0.5) -> None:
        """Stop every server, waiting at most `patience_s` (a stuck one is left to the daemon
        thread; a stdio server also ends when our end of its pipes closes)."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(patience_s)
        for handle in self._logs:
            with contextlib.suppress(OSError):
                handle.close()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            ready = threading.Event()
            self._thread = threading.Thread(
                target=self._run, args=(ready,), name="theus-mcp", daemon=True
            )
            self._thread.start()
            ready.wait()
        assert self._loop is not None
        return self._loop

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._stop = asyncio.Event()
        ready.set()
        try:
            import mcp  # noqa: F401  (a second or two, on this thread, before the loop runs)

            loop.run_until_complete(self._until_stopped(self._stop))
        except Exception as exc:
            log.exception("the MCP connections ended with an error")
            for conn in self.connections.values():
                conn.settle("failed", _reason(exc))
        finally:
            for conn in self.connections.values():
                conn.settle("failed", "stopped before it started")
            loop.close()

    async def _until_stopped(self, stop: asyncio.Event) -> None:
        await stop.wait()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=STOP_TIMEOUT_S)

    def _launch(self, conn: Connection) -> None:
        task = asyncio.get_running_loop().create_task(self._keep(conn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        asyncio.get_running_loop().call_later(
            max(0.0, conn.deadline - time.monotonic()), self._too_slow, conn, task
        )

    def _too_slow(self, conn: Connection, task: asyncio.Task[None]) -> None:
        if conn.state == "starting":
            self._expire(conn)
            task.cancel()

    def _expire(self, conn: Connection) -> None:
        conn.settle("failed", f"did not start within {self.start_timeout_s:g} s")

    async def _keep(self, conn: Connection) -> None:
        """Connect, list the tools, then hold the connection open until stopped."""
        import mcp_types
        from mcp import Client

        assert self._stop is not None
        if conn.state != "starting":  # given up on before this loop could start it
            return
        try:
            async with contextlib.AsyncExitStack() as stack:
                transport = await self._transport(conn.config, stack)
                client = await stack.enter_async_context(
                    Client(
                        transport,
                        client_info=mcp_types.Implementation(name="theus", version="0.1.0"),
                    )
                )
                conn.tools = await _all_tools(client)
                conn.client = client
                conn.settle("ready")
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failing server (at start or later) is a warning, never a crash
            conn.state, conn.error = "failed", _reason(exc)
            conn.settled.set()
        finally:
            conn.client = None
            conn.settle("failed", "stopped before it started")
            if conn.state == "ready":
                conn.state = "stopped"

    async def _transport(self, config: ServerConfig, stack: contextlib.AsyncExitStack) -> Any:
        if config.transport == "http":
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            http = await stack.enter_async_context(
                create_mcp_http_client(headers=dict(config.headers))
            )
            return streamable_http_client(config.url, http_client=http)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=config.command, args=list(config.args), env=dict(config.env) or None
        )
        return stdio_client(params, errlog=self._log_file(config.name))

    def _log_file(self, name: str) -> TextIO:
        try:
            folder = data_home() / "mcp-logs"
            folder.mkdir(parents=True, exist_ok=True)
            handle: TextIO = open(folder / f"{name}.log", "a", encoding="utf-8")  # noqa: SIM115
        except OSError:
            handle = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        self._logs.append(handle)
        return handle

    # -- use --------------------------------------------------------------------------------------
    def warnings(self) -> list[str]:
        """One line per bad configuration or server that failed."""
        return [
            *self.config_warnings,
            *(
                f"MCP server {c.name} failed: {c.error}"
                for c in self.connections.values()
                if c.state == "failed"
            ),
        ]

    def ready(self) -> list[Connection]:
        return [c for c in self.connections.values() if c.state == "ready"]

    async def call(
        self, server: str, tool: str, arguments: dict[str, Any], timeout_s: float = CALL_TIMEOUT_S
    ) -> mcp_types.CallToolResult:
        """Call from any event loop (it runs on the hub's); cancelling the caller cancels it."""
        conn = self.connections.get(server)
        if conn is None or conn.state != "ready" or self._loop is None:
            state = conn.state if conn is not None else "not configured"
            raise McpCallError(f"the MCP server {server!r} is not running ({state})")
        future: concurrent.futures.Future[mcp_types.CallToolResult] = (
            asyncio.run_coroutine_threadsafe(
                self._call(conn, tool, arguments, timeout_s), self._loop
            )
        )
        return await asyncio.wrap_future(future)

    async def _call(
        self, conn: Connection, tool: str, arguments: dict[str, Any], timeout_s: float
    ) -> mcp_types.CallToolResult:
        client = conn.client
        if client is None:
            raise McpCallError(f"the MCP server {conn.name!r} stopped")
        try:
            result: mcp_types.CallToolResult = await asyncio.wait_for(
                client.call_tool(tool, arguments), timeout_s
            )
        except TimeoutError:
            raise McpCallError(f"{conn.name} did not answer within {timeout_s:g} s") from None
        except Exception as exc:
            raise McpCallError(f"{conn.name}: {_reason(exc)}") from None
        return result


async def _all_tools(client: Any) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor = None
    for _ in range(20):  # a paginator that never ends cannot hang the start
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _reason(exc: BaseException) -> str:
    """The innermost message of an exception (anyio wraps failures in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def start_hub(
    root: Path, wanted: Callable[[ServerConfig], bool], given: tuple[Path, ...] = ()
) -> McpHub | None:
    """Connect the configured servers `wanted` picks (in the background), `given` config
    files first; None when nothing is configured. Configuration warnings are kept for status
    either way."""
    from theus.mcp.config import load

    configured = load(root, given)
    if not configured.servers and not configured.warnings:
        return None
    hub = McpHub()
    hub.config_warnings = configured.warnings
    return hub.connect([s for s in configured.servers if wanted(s)])
