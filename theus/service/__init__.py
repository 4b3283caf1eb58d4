"""The application layer: what every front end (the chat app in `tui`, the memory commands
and headless `-p` in `theus.cli`, the MCP server in `theus.mcp_server`, the dashboard in
`theus.dashboard`) calls for what it shows or does, so that they open, report and end alike:
a project checked and opened (`project`), its status (`status`), how a process ends
(`process`), what every command line shares (`command_line`) and the rules a localhost HTTP
front end keeps (`http_guard`). Front ends import this layer and what lies below it, never
each other (import-linter contracts in pyproject.toml)."""

__all__ = ["command_line", "http_guard", "process", "project", "status"]
