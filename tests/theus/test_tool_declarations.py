"""A tool declared once (`theus.tools.base.tool`): its schema from the signature, its
arguments checked from it, its approvals from its effect, and the same declaration offered to
the agent and to the rules of `theus.tool_rules`."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

import pytest

from tests.scripted_server import ScriptedServer, text, tool
from tests.theus.conftest import MakeAgent
from theus.protocol import ApprovalRequest
from theus.tool_rules import ToolRules
from theus.tools.base import Bounds, Effect, ToolContext, ToolError
from theus.tools.base import tool as declare
from theus.tools.jail import Jail
from theus.tools.registry import default_tools, mcp_tools


@declare(Effect.READ, name="probe")
async def probe_tool(
    ctx: ToolContext,
    word: Annotated[str, "a word"],
    times: Annotated[int, "how often", Bounds(1, 3)] = 1,
    loud: bool = False,
    suffix: str | None = None,
) -> str:
    """Repeat a word.

    This paragraph is for people reading the code, not for the model."""
    said = " ".join([word.upper() if loud else word] * times)
    return said + (suffix or "")


@declare(Effect.READ)
async def asks_anyway(ctx: ToolContext) -> str:
    """A reading tool that (wrongly) asks."""
    await ctx.approve(ApprovalRequest("edit", "edit x", "", path="x"))
    return "asked"


@declare(Effect.EDIT)
async def edits(ctx: ToolContext, kind: str) -> str:
    """An editing tool that asks an approval of `kind`."""
    request = ApprovalRequest(kind, f"{kind} x", "", path="x")  # type: ignore[arg-type]
    return f"approved: {await ctx.approve(request)}"


@declare(Effect.MEMORY)
def where(ctx: ToolContext) -> str:
    """A plain function: it runs on a thread of its own, off the event loop."""
    return threading.current_thread().name


def context(tmp_path: Path, asked: list[ApprovalRequest]) -> ToolContext:
    async def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    return ToolContext(jail=Jail(tmp_path), approve=approve)


def test_the_schema_comes_from_the_signature_and_the_docstring() -> None:
    assert probe_tool.schema() == {
        "type": "function",
        "function": {
            "name": "probe",
            "description": "Repeat a word.",
            "parameters": {
                "type": "object",
                "properties": {
                    "word": {"type": "string", "description": "a word"},
                    "times": {"type": "integer", "description": "how often"},
                    "loud": {"type": "boolean"},
                    "suffix": {"type": "string"},
                },
                "required": ["word"],
            },
        },
    }


async def test_arguments_are_checked_coerced_and_clamped(tmp_path: Path) -> None:
    ctx = context(tmp_path, [])
    run = probe_tool.run
    assert await run({"word": "hi"}, ctx) == "hi"
    assert await run({"word": "hi", "times": "2", "loud": "true"}, ctx) == "HI HI"
    assert await run({"word": "hi", "times": 99, "suffix": "!"}, ctx) == "hi hi hi!"
    assert await run({"word": "hi", "times": -5, "loud": 0, "extra": 1}, ctx) == "hi"
    for args, said in (
        ({}, "missing required argument 'word'"),
        ({"word": 3}, "argument 'word' must be a string"),
        ({"word": "hi", "times": "many"}, "argument 'times' must be an integer"),
        ({"word": "hi", "times": True}, "argument 'times' must be an integer"),
    ):
        with pytest.raises(ToolError) as raised:
            await run(args, ctx)
        assert str(raised.value) == said


async def test_the_effect_decides_which_approval_a_tool_may_ask(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []
    ctx = context(tmp_path, asked)
    with pytest.raises(RuntimeError, match="the read tool asks_anyway asked a edit approval"):
        await asks_anyway.run({}, ctx)
    with pytest.raises(RuntimeError, match="the edit tool edits asked a shell approval"):
        await edits.run({"kind": "shell"}, ctx)
    assert asked == []  # neither reached the user
    assert await edits.run({"kind": "edit"}, ctx) == "approved: True"
    assert [r.summary for r in asked] == ["edit x"]


async def test_a_plain_function_runs_off_the_event_loop(tmp_path: Path) -> None:
    assert await where.run({}, context(tmp_path, [])) == "tool-where"


def test_the_agent_mcp_and_the_rules_read_the_same_declarations() -> None:
    agent = default_tools()
    assert list(agent) == [
        "read",
        "list",
        "grep",
        "edit",
        "write",
        "recall",
        "outline",
        "shell",
        "task",
    ]
    assert "task" not in default_tools(subagents=False)
    assert [t.effect for t in (agent["read"], agent["edit"], agent["shell"])] == [
        Effect.READ,
        Effect.EDIT,
        Effect.SHELL,
    ]
    served = mcp_tools()
    assert served["recall"] is agent["recall"]
    assert not any(t.effect.approval for t in served.values())
    assert ToolRules.parse(None, None, "plan").removed == {"edit", "write", "shell"}
    assert ToolRules.parse(["Write"], None, None).kinds == {"edit"}  # write asks an edit approval


async def test_a_bad_argument_is_one_error_line_back_to_the_model(
    server: ScriptedServer, make_agent: MakeAgent
) -> None:
    server.add(
        tool("read", {"path": ["cart.py"]}),
        tool("read", {"path": "cart.py", "limit": "two"}),
        text("gave up"),
    )
    agent, _ = make_agent()
    await agent.run_turn("read the cart")
    results = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "tool"]
    assert results == [
        "error: argument 'path' must be a string",
        "error: argument 'limit' must be an integer",
    ]
