"""Which MCP servers the agent may use: the project's `.mcp.json` (Claude Code's format) and
the user's `mcp.json` in the Theus config folder, same format. A repository never replaces
the user's own: a project entry named like a user entry is left out, with a warning.

    {"mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                   "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
        "docs":   {"type": "http", "url": "https://example.com/mcp",
                   "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}},
     "projectVariables": ["GITHUB_TOKEN"]}

`${VAR}` and `${VAR:-default}` are expanded from the environment in command, args, env, url
and headers, as Claude Code does; in a repository's `.mcp.json` only the variables the user's
file lists in `projectVariables` (the others are left empty, or to their default, with a
warning), so a cloned repository cannot have the API key or a cloud key sent to a server of
its choosing. Each server says which variables it receives and which it was refused (`/mcp`
shows them before trust). A bad file or entry is one warning, and the rest is used.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from knowledge.core.paths import config_home

PROJECT_FILE = ".mcp.json"
USER_FILE = "mcp.json"
PROJECT_VARIABLES = "projectVariables"  # in the user's file: what repositories may expand
# A server's name becomes the prefix of its tools' names (`name__tool`), which model APIs
# limit to letters, digits, `_` and `-`.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_VARIABLE = r"[A-Za-z_][A-Za-z0-9_]*"
_VAR_NAME = re.compile(f"^{_VARIABLE}$")
_VAR = re.compile(r"\$\{(" + _VARIABLE + r")(?::-([^}]*))?\}")


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
    # What the entry is, before expansion (plus the variables it receives): the key of trust
    # and of "always" rules, so a changed entry, or another of the same name, is asked again.
    identity: str = ""
    receives: tuple[str, ...] = ()  # the variables expanded into it
    withheld: tuple[str, ...] = ()  # the variables it asked for and was refused

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


def load(root: Path, given: tuple[Path, ...] = ()) -> Configured:
    """Every configured server (the files `given` on the command line, then the user's not
    named like one of those, then the project's not named like any of the user's), and
    warnings. A given file is the user's own choice: it has the user file's standing."""
    warnings: list[str] = []
    user = _entries(user_file(), warnings)
    allowed = _allowed_variables(user, warnings)
    servers: list[ServerConfig] = []
    for path in given:
        servers += [
            s
            for s in _servers(_entries(path, warnings), "user", None, warnings)
            if s.name not in {t.name for t in servers}
        ]
    named = {s.name for s in servers}
    servers += [s for s in _servers(user, "user", None, warnings) if s.name not in named]
    mine = {s.name for s in servers}
    project = root / PROJECT_FILE
    for server in _servers(_entries(project, warnings), "project", allowed, warnings):
        if server.name in mine:
            warnings.append(
                f"{project}: MCP server {server.name!r} left out: your own "
                f"{user_file()} has a server of that name, and a repository's "
                "never replaces yours (rename it in .mcp.json to have both)"
            )
            continue
        if server.withheld:
            asked = ", ".join(f"${{{v}}}" for v in server.withheld)
            warnings.append(
                f"{project}: MCP server {server.name!r} asks for {asked}, left "
                "empty: a repository's server gets only the variables listed in "
                f'"{PROJECT_VARIABLES}" in {user_file()}'
            )
        servers.append(server)
    return Configured(servers, warnings)


def _entries(path: Path, warnings: list[str]) -> tuple[Path, dict[str, Any]]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return path, {}
    except (OSError, ValueError) as exc:
        warnings.append(f"{path}: not readable JSON, its MCP servers are skipped ({exc})")
        return path, {}
    if not isinstance(raw, dict) or not isinstance(raw.get("mcpServers", {}), dict):
        warnings.append(f'{path}: expected {{"mcpServers": {{name: {{...}}}}}}; skipped')
        return path, {}
    return path, raw


def _allowed_variables(user: tuple[Path, dict[str, Any]], warnings: list[str]) -> frozenset[str]:
    path, raw = user
    names = raw.get(PROJECT_VARIABLES, [])
    if not isinstance(names, list) or not all(
        isinstance(n, str) and _VAR_NAME.match(n) for n in names
    ):
        warnings.append(
            f'{path}: "{PROJECT_VARIABLES}" must be a list of variable names '
            "(GITHUB_TOKEN); repositories' MCP servers get none"
        )
        return frozenset()
    return frozenset(names)


def _servers(
    source: tuple[Path, dict[str, Any]],
    scope: Literal["project", "user"],
    allowed: frozenset[str] | None,
    warnings: list[str],
) -> list[ServerConfig]:
    path, raw = source
    servers = []
    for name, entry in raw.get("mcpServers", {}).items():
        try:
            server = _server(str(name), entry, scope, allowed)
        except ValueError as exc:
            warnings.append(f"{path}: MCP server {name!r} skipped: {exc}")
            continue
        servers.append(server)
    return servers


def _server(
    name: str, entry: Any, scope: Literal["project", "user"], allowed: frozenset[str] | None
) -> ServerConfig:
    if not _NAME.match(name) or "__" in name:
        raise ValueError(
            "a name is 1-32 letters, digits, '_' or '-' (no '__': it separates "
            "the server from the tool in `server__tool`)"
        )
    if not isinstance(entry, dict):
        raise ValueError("expected an object with `command` or `url`")
    kind = entry.get("type") or ("http" if "url" in entry and "command" not in entry else "stdio")
    expand = _Expander(allowed)
    if kind == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ValueError("a stdio server needs a `command`")
        args, env = _strings(entry, "args"), _mapping(entry, "env")
        template: list[Any] = [command, args, env]
        server = ServerConfig(
            name,
            "stdio",
            scope,
            command=expand(command),
            args=tuple(expand(a) for a in args),
            env={k: expand(v) for k, v in env.items()},
        )
    elif kind in ("http", "streamable-http", "streamableHttp"):
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError("an http server needs a `url` starting with http:// or https://")
        headers = _mapping(entry, "headers")
        template = [url, headers]
        server = ServerConfig(
            name, "http", scope, url=expand(url), headers={k: expand(v) for k, v in headers.items()}
        )
    else:
        raise ValueError(f"transport {kind!r} is not supported (use stdio or http)")
    receives = tuple(sorted(expand.received))
    identity = hashlib.sha256(
        json.dumps([name, scope, server.transport, template, receives], sort_keys=True).encode()
    ).hexdigest()
    return replace(
        server, identity=identity, receives=receives, withheld=tuple(sorted(expand.withheld))
    )


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


class _Expander:
    """`${VAR}` and `${VAR:-default}` from the environment: every variable (`allowed` None,
    the user's own file) or only those `allowed`; the others get their default or ""."""

    def __init__(self, allowed: frozenset[str] | None) -> None:
        self.allowed = allowed
        self.received: set[str] = set()
        self.withheld: set[str] = set()

    def __call__(self, text: str) -> str:
        return _VAR.sub(self._value, text)

    def _value(self, found: re.Match[str]) -> str:
        name, default = found[1], found[2] if found[2] is not None else ""
        if self.allowed is not None and name not in self.allowed:
            self.withheld.add(name)
            return default
        self.received.add(name)
        return os.environ.get(name, default)
