"""What the app shows of the MCP servers: one status-bar word, and `/mcp`'s listing."""

from __future__ import annotations

from knowledge.core.redact import redact
from theus.mcp.client import McpHub
from theus.mcp.config import ServerConfig, user_file
from theus.mcp.tools import tool_name


def status_word(hub: McpHub | None) -> str:
    """`mcp 2/3` (ready of started), `mcp 2/3 · 1 failed`; "" with no server configured."""
    if hub is None or not hub.connections:
        return ""
    states = [c.state for c in hub.connections.values()]
    word = f"mcp {states.count('ready')}/{len(states)}"
    failed = states.count("failed")
    return word + (f" · {failed} failed" if failed else "")


def listing(hub: McpHub | None, untrusted: list[ServerConfig]) -> str:
    lines: list[str] = []
    for conn in hub.connections.values() if hub is not None else ():
        config = conn.config
        line = f"{conn.name} ({config.scope}, {config.transport}: {config.target}) — {conn.state}"
        lines.append(line + (f": {conn.error}" if conn.error else ""))
        lines += variables(config)
        if conn.tools:
            lines.append("  tools: " + ", ".join(tool_name(conn.name, t.name) for t in conn.tools))
    for config in untrusted:
        lines.append(
            f"{config.name} (project, {config.transport}: {config.target}) — not "
            "started: this project's .mcp.json runs it; `/mcp trust` starts it"
        )
        lines += variables(config)
    lines += [f"warning: {w}" for w in hub.config_warnings] if hub is not None else []
    if not lines:
        return (
            f"no MCP servers configured: add them to .mcp.json in the project or to "
            f"{user_file()} (Claude Code's format)"
        )
    return redact("MCP servers (every call asks first):\n" + "\n".join(lines))


def variables(config: ServerConfig) -> list[str]:
    """Which of the user's environment variables the server gets (names, never values), and
    which a repository's entry asked for and was refused."""
    lines = []
    if config.receives:
        lines.append("  receives: " + ", ".join(f"${v}" for v in config.receives))
    if config.withheld:
        lines.append(
            '  refused (not in "projectVariables" of your mcp.json): '
            + ", ".join(f"${v}" for v in config.withheld)
        )
    return lines
