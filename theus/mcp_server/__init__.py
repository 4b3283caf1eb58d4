"""The MCP server front end: `theus mcp` serves the project's memory to other agents (`server`,
over stdio or Streamable HTTP on 127.0.0.1 via `http`), with what to paste into their
configuration (`snippets`). Built on the official `mcp` SDK."""

__all__ = ["command", "http", "memory_tools", "server", "snippets"]
