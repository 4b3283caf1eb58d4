"""Whether the app may start a project's MCP servers. A server in the user's own `mcp.json`
is the user's; one in a repository's `.mcp.json` runs a command the repository chose, so it
starts only once the user said so (`/mcp trust`, after `/mcp` showed what it runs and which
variables it receives), as Claude Code asks for project servers. Trust is kept in the
project's data folder (never in the repository, which cannot grant itself anything), tied to
the repository there (`theus.grants`: another one cloned at that path is not trusted), as each
server's identity: an entry that changes must be trusted again."""

from __future__ import annotations

import logging
from pathlib import Path

from knowledge.core.paths import ProjectPaths
from theus import grants
from theus.mcp.config import ServerConfig

log = logging.getLogger(__name__)


def _path(root: Path) -> Path:
    return ProjectPaths.for_root(root).home / "mcp-trust.json"


def _trusted(root: Path) -> set[str]:
    raw, warning = grants.read(_path(root), root)
    if warning:
        log.warning("%s", warning)
    listed = raw.get("trusted", [])
    return {str(x) for x in listed} if isinstance(listed, list) else set()


def is_trusted(root: Path, server: ServerConfig) -> bool:
    return server.scope == "user" or server.identity in _trusted(root)


def trust(root: Path, servers: list[ServerConfig]) -> None:
    """Remember `servers` as started with the user's consent (raises OSError)."""
    known = _trusted(root) | {s.identity for s in servers}
    grants.write(_path(root), root, {"trusted": sorted(known)})
