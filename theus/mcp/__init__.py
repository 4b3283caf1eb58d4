"""The agent's side of the Model Context Protocol: it uses the tools of the user's MCP servers
(`config` reads `.mcp.json`, `client` runs the connections, `tools` turns their tools into
the agent's, `allow` and `trust` decide which may run). The server side, `theus mcp`, is its
own front end (`theus.mcp_server`). Built on the official `mcp` SDK."""
