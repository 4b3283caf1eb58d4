"""Which MCP tools a headless run may call: every one (`--allow-mcp`), or those named by
`--allow-mcp-tool SERVER__TOOL` (`SERVER__*` for all of a server's). Only the servers it names
are started at all: a run that allows none starts none, so neither a cloned repository's
`.mcp.json` nor a slow server costs a plain `theus -p` anything."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from theus.mcp.config import ServerConfig
from theus.mcp.tools import SEPARATOR

FLAGS = "--allow-mcp (or --allow-mcp-tool SERVER__TOOL)"


@dataclass(frozen=True)
class Allowance:
    every: bool = False
    names: tuple[str, ...] = ()

    @classmethod
    def parse(cls, every: bool, names: list[str] | None) -> Allowance:
        """Raises ValueError (one line) for a name that is not SERVER__TOOL."""
        for name in names or ():
            server, sep, tool = name.partition(SEPARATOR)
            if not (server and sep and tool):
                raise ValueError(
                    f"--allow-mcp-tool takes SERVER__TOOL (or SERVER__*), not {name!r}"
                )
        return cls(every, tuple(names or ()))

    @property
    def any(self) -> bool:
        return self.every or bool(self.names)

    def starts(self, server: ServerConfig) -> bool:
        return self.every or any(n.partition(SEPARATOR)[0] == server.name for n in self.names)

    def allows(self, tool: str) -> bool:
        return self.every or any(fnmatchcase(tool, name) for name in self.names)
