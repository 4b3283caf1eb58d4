"""Whether the app may start a project's MCP servers. A server in the user's own `mcp.json`
is the user's; one in a repository's `.mcp.json` runs a command the repository chose, so it
starts only once the user said so (`/mcp trust`), as Claude Code asks for project servers.
Trust is kept per project in its data folder (never in the repository, which cannot grant
itself anything), as a hash of each server's entry: an entry that changes must be trusted
again."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from knowledge import atomic
from knowledge.paths import ProjectPaths
from theus.mcp.config import ServerConfig

log = logging.getLogger(__name__)


def _path(root: Path) -> Path:
    return ProjectPaths.for_root(root).home / "mcp-trust.json"


def fingerprint(server: ServerConfig) -> str:
    entry = [server.name, server.transport, server.command, list(server.args),
             sorted(server.env.items()), server.url, sorted(server.headers.items())]
    return hashlib.sha256(json.dumps(entry).encode()).hexdigest()


def _trusted(root: Path) -> set[str]:
    try:
        raw = json.loads(_path(root).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return set()
    except (OSError, ValueError) as exc:
        log.warning("ignoring %s: %s", _path(root), exc)
        return set()
    return {str(x) for x in raw.get("trusted", [])} if isinstance(raw, dict) else set()


def is_trusted(root: Path, server: ServerConfig) -> bool:
    return server.scope == "user" or fingerprint(server) in _trusted(root)


def trust(root: Path, servers: list[ServerConfig]) -> None:
    """Remember `servers` as started with the user's consent (raises OSError)."""
    path = _path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    known = _trusted(root) | {fingerprint(s) for s in servers}
    atomic.write_text(path, json.dumps({"trusted": sorted(known)}, indent=2) + "\n",
                      mode=0o600)
