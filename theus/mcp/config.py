"""Which MCP servers the agent may use: the project's `.mcp.json` (Claude Code's format) and
the user's `mcp.json` in the Theus config folder, same format; a project entry wins over a
user entry of the same name.

    {"mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                   "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
        "docs":   {"type": "http", "url": "https://example.com/mcp",
                   "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}}}

`${VAR}` and `${VAR:-default}` are expanded from the environment in command, args, env, url
and headers, as Claude Code does. A bad file or entry is one warning, and the rest is used.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from knowledge.paths import config_home

PROJECT_FILE = ".mcp.json"
USER_FILE = "mcp.json"
# A server's name becomes the prefix of its tools' names (`name__tool`), which model APIs
# limit to letters, digits, `_` and `-`.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class ServerConfig:
    name: str
    transport: Literal["stdio", "http"]
    scope: Literal["project", "user"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # may hold tokens

    @property
    def target(self) -> str:
        """What it runs or reaches, for /mcp and warnings (never the headers)."""
        return " ".join((self.command, *self.args)) if self.transport == "stdio" else self.url


@dataclass
class Configured:
    servers: list[ServerConfig]
    warnings: list[str]


def user_file() -> Path:
    return config_home() / USER_FILE


def load(root: Path) -> Configured:
    """Every configured server (the project's override the user's by name), and warnings."""
    warnings: list[str] = []
    by_name: dict[str, ServerConfig] = {}
    sources: list[tuple[Path, Literal["project", "user"]]] = [
        (user_file(), "user"), (root / PROJECT_FILE, "project")]
    for path, scope in sources:
        for server in _read(path, scope, warnings):
            by_name[server.name] = server
    return Configured(list(by_name.values()), warnings)


def _read(path: Path, scope: Literal["project", "user"], warnings: list[str]
          ) -> list[ServerConfig]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        warnings.append(f"{path}: not readable JSON, its MCP servers are skipped ({exc})")
        return []
    entries = raw.get("mcpServers") if isinstance(raw, dict) else None
    if not isinstance(entries, dict):
        warnings.append(f'{path}: expected {{"mcpServers": {{name: {{...}}}}}}; skipped')
        return []
    servers = []
    for name, entry in entries.items():
        try:
            servers.append(_server(str(name), entry, scope))
        except ValueError as exc:
            warnings.append(f"{path}: MCP server {name!r} skipped: {exc}")
    return servers


def _server(name: str, entry: Any, scope: Literal["project", "user"]) -> ServerConfig:
    if not _NAME.match(name) or "__" in name:
        raise ValueError("a name is 1-32 letters, digits, '_' or '-' (no '__': it separates "
                         "the server from the tool in `server__tool`)")
    if not isinstance(entry, dict):
        raise ValueError("expected an object with `command` or `url`")
    kind = entry.get("type") or ("http" if "url" in entry and "command" not in entry
                                 else "stdio")
    if kind == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ValueError("a stdio server needs a `command`")
        return ServerConfig(name, "stdio", scope, command=_expand(command),
                            args=tuple(_expand(a) for a in _strings(entry, "args")),
                            env={k: _expand(v) for k, v in _mapping(entry, "env").items()})
    if kind in ("http", "streamable-http", "streamableHttp"):
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError("an http server needs a `url` starting with http:// or https://")
        return ServerConfig(name, "http", scope, url=_expand(url),
                            headers={k: _expand(v) for k, v in _mapping(entry, "headers").items()})
    raise ValueError(f"transport {kind!r} is not supported (use stdio or http)")


def _strings(entry: dict[str, Any], key: str) -> list[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"`{key}` must be a list of strings")
    return value


def _mapping(entry: dict[str, Any], key: str) -> dict[str, str]:
    value = entry.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"`{key}` must be an object of strings")
    return {str(k): v for k, v in value.items()}


def _expand(text: str) -> str:
    return _VAR.sub(lambda m: os.environ.get(m[1], m[2] if m[2] is not None else ""), text)
