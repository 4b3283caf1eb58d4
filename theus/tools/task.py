"""The task tool: hand a self-contained job to a subagent and get its answer back."""

from __future__ import annotations

from typing import Annotated

from theus.tools.base import Effect, ToolContext, ToolError, tool


@tool(Effect.READ)
async def task(
    ctx: ToolContext,
    description: Annotated[str, "short task description"],
    prompt: Annotated[str, "full instructions for the subagent"],
    fork: bool = False,
) -> str:
    """Start a subagent for a self-contained job (search, investigation, a focused change).
    It starts fresh, primed with what the project memory knows about the description; set
    fork=true to give it this conversation instead.

    Its effect is its own (reading): the subagent's tools ask for their own approvals."""
    if ctx.spawn is None:
        raise ToolError("subagents are not available here")
    return await ctx.spawn(description, prompt, fork)
