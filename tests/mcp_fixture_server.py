"""A small MCP server for tests, built with the SDK's `MCPServer` (FastMCP's name in mcp 2).

    python tests/mcp_fixture_server.py MARKER   # writes its environment to MARKER at start

Tools: `echo(text)`, `wipe()` (a tool a run must not be allowed by an allow-list for `echo`),
`big()` (more text than a tool result may carry) and `fail()` (an error result).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("fixture")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@server.tool()
def wipe() -> str:
    """Pretend to delete everything."""
    Path(sys.argv[1]).with_suffix(".wiped").touch()
    return "wiped"


@server.tool()
def big() -> str:
    """A very long answer."""
    return "x" * 100_000


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ToolError("the fixture failed on purpose")


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(dict(os.environ)))  # what the server received
    server.run()
