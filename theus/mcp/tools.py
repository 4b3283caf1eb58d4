"""MCP servers' tools as the agent's own (`theus.tools.base.Tool`): named `server__tool`,
every call through the approver (kind "mcp": the app's approval screen; refused headless
unless allowed), results cut to `MAX_RESULT_CHARS` and cleared by microcompact like any
other tool result."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from theus.mcp.client import McpCallError, McpHub
from theus.mcp.config import ServerConfig
from theus.protocol import ApprovalRequest
from theus.tools.base import Effect, Tool, ToolContext, ToolError

if TYPE_CHECKING:
    import mcp_types

SEPARATOR = "__"
MAX_RESULT_CHARS = 30_000
MAX_DESCRIPTION_CHARS = 1_000
_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_NAME_CHARS = 64  # what model APIs accept for a function name


def tool_name(server: str, tool: str) -> str:
    return (server + SEPARATOR + _BAD_NAME_CHARS.sub("_", tool))[:_NAME_CHARS]


def mcp_tools(hub: McpHub) -> dict[str, Tool]:
    """The tools of every server that is ready now, by their namespaced names."""
    tools: dict[str, Tool] = {}
    for conn in hub.ready():
        for spec in conn.tools:
            name = tool_name(conn.name, spec.name)
            tools.setdefault(name, _tool(hub, conn.config, spec, name))
    return tools


def _tool(hub: McpHub, config: ServerConfig, spec: mcp_types.Tool, name: str) -> Tool:
    server = config.name

    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        shown = json.dumps(args, indent=2, ensure_ascii=False)
        request = ApprovalRequest(
            "mcp", f"call MCP tool {name}", shown, tool=name, server=config.identity
        )
        if not await ctx.approve(request):
            raise ToolError(
                f"refused: the call to the MCP tool {name} was not approved "
                f"({ctx.refusal(request)})"
            )
        try:
            result = await hub.call(server, spec.name, args)
        except McpCallError as exc:
            raise ToolError(str(exc)) from None
        text = _cut(result_text(result))
        if result.is_error:
            raise ToolError(f"{name} failed: {text}")
        return text

    description = (spec.description or spec.title or spec.name)[:MAX_DESCRIPTION_CHARS]
    schema = dict(spec.input_schema or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return Tool(name, f"[MCP server {server}] {description}", schema, run, effect=Effect.NETWORK)


def result_text(result: mcp_types.CallToolResult) -> str:
    """A call's content as text: text blocks as they are, other blocks named."""
    import mcp_types

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource {resource.uri}]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource link {block.uri}]")
        else:
            mime = getattr(block, "mime_type", "")
            parts.append(f"[{block.type} content{' ' + mime if mime else ''} not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts) or "(no content)"


def _cut(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    half = MAX_RESULT_CHARS // 2
    return text[:half] + f"\n... ({len(text) - 2 * half:,} characters cut) ...\n" + text[-half:]
