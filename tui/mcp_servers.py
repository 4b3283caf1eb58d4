"""The app's MCP servers: started at launch on their own thread (`theus.mcp.client.McpHub`),
the user's at once and a project's once trusted (`/mcp trust`); each chat's agent is offered
the tools of the servers that are up before each request; every call asks first (the approval
screen). Nothing here blocks the event loop."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from theus.mcp.client import McpHub
    from theus.mcp.config import ServerConfig

log = logging.getLogger(__name__)

EXIT_PATIENCE_S = 0.05  # quitting does not wait for servers: they end when our pipes close


class McpServers:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.hub: McpHub | None = None
        self.untrusted: list[ServerConfig] = []
        self.warned: set[str] = set()  # failures already shown
        self._starting: threading.Thread | None = None

    def start(self) -> None:
        self._starting = threading.Thread(target=self._start, name="theus-mcp-start", daemon=True)
        self._starting.start()

    def _start(self) -> None:
        from theus.mcp.client import start_hub
        from theus.mcp.trust import is_trusted

        untrusted: list[ServerConfig] = []

        def wanted(server: ServerConfig) -> bool:
            if is_trusted(self.root, server):
                return True
            untrusted.append(server)
            return False

        try:
            self.hub = start_hub(self.root, wanted)
        except Exception as exc:  # fails open: the chat goes on without MCP tools
            log.warning("MCP servers not started: %s", exc)
        self.untrusted = untrusted

    async def ready(self, agent: Any) -> None:
        """Before a request: the servers still starting get their bounded start-up wait (off
        the event loop), then the agent gets the tools of those that are up."""
        if self._starting is not None and self._starting.is_alive():
            await asyncio.to_thread(self._starting.join)
        hub = self.hub
        if hub is None:
            return
        if hub.starting:
            await asyncio.to_thread(hub.wait_ready)
        from theus.agent.setup import offer_mcp_tools

        offer_mcp_tools(agent, hub)

    def trust(self) -> str:
        """`/mcp trust`: start this project's servers from now on (blocking: a thread)."""
        from theus.mcp.trust import trust

        servers, self.untrusted = self.untrusted, []
        if not servers:
            return "no untrusted project MCP server to start"
        trust(self.root, servers)
        if self.hub is None:
            from theus.mcp.client import McpHub

            self.hub = McpHub()
        self.hub.connect(servers)
        from theus.mcp.report import variables

        return "\n".join(
            [
                "starting "
                + ", ".join(s.name for s in servers)
                + ": their tools join the chat from the next request",
                *(line for s in servers if variables(s) for line in [f"{s.name}:", *variables(s)]),
            ]
        )

    def status_word(self) -> str:
        from theus.mcp.report import status_word

        return status_word(self.hub)

    def new_failures(self) -> list[str]:
        """Warnings not shown yet (one each, ever)."""
        fresh = [w for w in (self.hub.warnings() if self.hub else []) if w not in self.warned]
        self.warned.update(fresh)
        return fresh

    def listing(self) -> str:
        from theus.mcp.report import listing

        return listing(self.hub, self.untrusted)

    def close(self) -> None:
        if self.hub is not None:
            self.hub.close(EXIT_PATIENCE_S)
