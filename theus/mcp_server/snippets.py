"""`theus mcp --print-config`: what to add to Claude Code, Codex and Cursor to use the server."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from theus.mcp_server.http import LOOPBACK, PATH, TOKEN_ENV


def snippets(root: Path, http_port: int | None = None) -> str:
    """The three configuration snippets, for stdio (or for `--http PORT`)."""
    # `theus` when it is on PATH (an installed tool), else this interpreter (a checkout's venv).
    command = "theus" if shutil.which("theus") else sys.executable
    args = ["mcp", str(root)] if command == "theus" else ["-m", "entrypoint", "mcp", str(root)]
    if http_port is None:
        entry: dict[str, object] = {"command": command, "args": args}
        cursor = entry
        codex = f"[mcp_servers.theus]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n"
    else:
        url = f"http://{LOOPBACK}:{http_port}{PATH}"
        entry = {
            "type": "http",
            "url": url,
            "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"},
        }
        cursor = {"url": url, "headers": {"Authorization": f"Bearer ${{env:{TOKEN_ENV}}}"}}
        codex = (
            f"[mcp_servers.theus]\nurl = {json.dumps(url)}\n"
            f"bearer_token_env_var = {json.dumps(TOKEN_ENV)}\n"
        )
    return "\n".join(
        [
            "# Claude Code: .mcp.json in the project (or `claude mcp add-json theus '<entry>'`)",
            json.dumps({"mcpServers": {"theus": entry}}, indent=2),
            "",
            "# Codex CLI: ~/.codex/config.toml",
            codex,
            "# Cursor: .cursor/mcp.json in the project (or ~/.cursor/mcp.json)",
            json.dumps({"mcpServers": {"theus": cursor}}, indent=2),
            "",
        ]
    )
