"""The task tool: hand a self-contained job to a subagent and get its answer back."""

from __future__ import annotations

from typing import Any

from theus.tools.base import Tool, ToolContext, ToolError, bool_arg, string_arg


async def task(args: dict[str, Any], ctx: ToolContext) -> str:
    description = string_arg(args, "description")
    prompt = string_arg(args, "prompt")
    if ctx.spawn is None:
        raise ToolError("subagents are not available here")
    return await ctx.spawn(description, prompt, bool_arg(args, "fork"))


TASK = Tool(
    "task",
    "Start a subagent for a self-contained job (search, investigation, a focused change). "
    "It starts fresh, primed with what the project memory knows about the description; set "
    "fork=true to give it this conversation instead.",
    {
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "short task description"},
            "prompt": {"type": "string", "description": "full instructions for the subagent"},
            "fork": {"type": "boolean"},
        },
        "required": ["description", "prompt"],
    },
    task,
)
