"""`theus mcp [PATH]`: serve the project's memory to other agents over MCP (stdio, or
Streamable HTTP on 127.0.0.1 with `--http PORT`); `--print-config` shows how to add it to
Claude Code, Codex and Cursor. Ends on stdin EOF (stdio), SIGTERM or Ctrl-C, closing the
memory (watcher and store) on the way out."""

from __future__ import annotations

import argparse
import errno
import logging
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from theus.printable import PrintableFormatter
from theus.service.command_line import add_path_argument, err, out
from theus.service.interrupts import hand_over
from theus.service.process import exit_now
from theus.service.project import UsageError, project_root

if TYPE_CHECKING:
    import socket

    from mcp.server.mcpserver import MCPServer


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve the project's memory to other agents (MCP server)",
        description="An MCP server exposing the project's memory: recall, outline, read_node, "
        "neighbours, search_memory, add_memory, episodes and facts, and MEMORY.md as a "
        "resource. Speaks stdio by default (what Claude Code, Codex and Cursor start).",
    )
    add_path_argument(p)
    p.add_argument(
        "--http",
        type=int,
        default=None,
        metavar="PORT",
        help="serve Streamable HTTP on 127.0.0.1:PORT instead (0: any free port); "
        "requests need the printed token (or THEUS_MCP_TOKEN)",
    )
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the snippets that add this server to Claude Code, Codex and Cursor, and exit",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = project_root(args.path)
    if args.http is not None and not 0 <= args.http <= 65535:
        raise UsageError(f"--http must be a port between 0 and 65535, not {args.http}")
    if args.print_config:
        from theus.mcp_server.snippets import snippets

        out(snippets(root, args.http))
        return 0
    sock = _listen(args.http) if args.http is not None else None  # a taken port: say so now
    _log_to_stderr()

    from knowledge.memory import Memory
    from theus.mcp_server.server import build_server, open_in_background

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt  # unwinds the server (uvicorn re-raises it when it is done)

    signal.signal(signal.SIGTERM, stop)
    memory = Memory(root, index_if_missing=True)
    try:
        server = build_server(memory)
        open_in_background(memory)
        hand_over()
        if sock is not None:
            _serve_http(server, sock, root)
        else:
            import anyio

            anyio.run(server.run_stdio_async)  # until stdin ends
    except KeyboardInterrupt:  # SIGTERM or Ctrl-C: asked to stop, not an error
        memory.close()
        # The SDK's stdin reader may still be blocked in a worker thread, which the
        # interpreter would join at exit forever: the memory is closed, so leave at once.
        exit_now(0)
    memory.close()
    return 0


def _listen(port: int) -> socket.socket:
    from theus.mcp_server import http

    try:
        return http.bind(port)
    except OSError as exc:
        hint = " (pick another with --http PORT)" if exc.errno == errno.EADDRINUSE else ""
        raise UsageError(
            f"cannot listen on {http.LOOPBACK}:{port}: {exc.strerror or exc}{hint}"
        ) from None


def _serve_http(server: MCPServer, sock: socket.socket, root: Path) -> None:
    from theus.mcp_server import http

    secret = http.token()
    url = f"http://{http.LOOPBACK}:{sock.getsockname()[1]}{http.PATH}"
    err(
        f"Theus MCP server for {root}: {url}\n"
        f"  send the header `Authorization: Bearer {secret}`; Ctrl-C stops it\n"
    )
    sys.stderr.flush()
    http.serve(server, sock, secret)


def _log_to_stderr() -> None:
    # stdout is the protocol's (stdio); warnings go where MCP clients collect a server's log.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("theus mcp: %(levelname)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
