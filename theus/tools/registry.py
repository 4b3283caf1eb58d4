"""The tool set an agent gets."""

from __future__ import annotations

from theus.tools.base import Tool
from theus.tools.files import EDIT, GREP, LIST, READ, WRITE
from theus.tools.memory import RECALL
from theus.tools.shell import SHELL
from theus.tools.task import TASK


def default_tools(*, subagents: bool = True) -> dict[str, Tool]:
    """All tools by name; subagents get none of their own (no recursive task trees)."""
    tools = [READ, LIST, GREP, RECALL, EDIT, WRITE, SHELL]
    if subagents:
        tools.append(TASK)
    return {t.name: t for t in tools}
