"""Theus in the Model Context Protocol, both ways: `theus mcp` serves the project's memory to
other agents (`server`, over stdio or Streamable HTTP on 127.0.0.1), and the agent uses the
tools of the user's MCP servers (`config` reads `.mcp.json`, `client` runs the connections,
`tools` turns their tools into the agent's). Built on the official `mcp` SDK."""
