"""The declared tools (`theus.tools.base.tool`): the agent's set and what `theus mcp` serves.
A tool declared in one of `MODULES` is offered wherever its declaration says."""

from __future__ import annotations

from theus.tools import files, memory, shell, task
from theus.tools.base import Tool, declared_in

MODULES = (files, memory, shell, task)
DECLARED: tuple[Tool, ...] = tuple(t for module in MODULES for t in declared_in(module))


def default_tools(*, subagents: bool = True) -> dict[str, Tool]:
    """The agent's tools by name; subagents get no task tool (no recursive task trees)."""
    return {
        t.name: t
        for t in DECLARED
        if t.agent and t.offered and (subagents or t.name != task.task.name)
    }


def mcp_tools() -> dict[str, Tool]:
    """What `theus mcp` serves, by name: tools that ask no approval (nobody is there to)."""
    return {t.name: t for t in DECLARED if t.mcp and t.offered and not t.effect.approval}
