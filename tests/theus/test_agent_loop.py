"""The loop against a scripted model over real HTTP: tools, errors, limits, approvals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.scripted_server import ScriptedServer, error, text, tool, tools
from tests.theus.conftest import MakeAgent
from theus.protocol import (
    AssistantMessage,
    Error,
    Event,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
)


def tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


async def test_multi_step_tool_loop_edits_a_file(
    server: ScriptedServer, repo: Path, make_agent: MakeAgent
) -> None:
    server.add(
        tool("grep", {"pattern": "def total"}),
        tool("read", {"path": "cart.py", "offset": 5, "limit": 3}),
        tool(
            "edit",
            {
                "path": "cart.py",
                "old_string": "return sum(price_of(i) for i in items)",
                "new_string": "return round(sum(price_of(i) for i in items), 2)",
            },
        ),
        text("Rounded the total to cents."),
    )
    agent, rec = make_agent()
    result = await agent.run_turn("round the cart total")
    assert result.stop == "end" and result.text == "Rounded the total to cents."
    assert "round(sum(price_of(i) for i in items), 2)" in (repo / "cart.py").read_text()
    assert result.num_turns == 4 and len(server.requests) == 4
    # Each request carries the previous tool results, and the tools are advertised.
    assert "cart.py:6:" in tool_results(server.requests[1])[0]
    assert "total(self, items)" in tool_results(server.requests[2])[1]
    assert tool_results(server.requests[3])[2].startswith("edit cart.py: +1 -1")
    names = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert names >= {"read", "list", "grep", "recall", "edit", "write", "shell", "task"}
    assert server.requests[0]["stream"] is True
    # Events: the answer streamed in pieces, one started/finished pair per tool call.
    assert "".join(e.text for e in rec.of(TextDelta)) == "Rounded the total to cents."
    assert [e.name for e in rec.of(ToolCallStarted)] == ["grep", "read", "edit"]
    assert not any(e.is_error for e in rec.of(ToolCallFinished))
    assert len(rec.of(AssistantMessage)) == 4
    assert rec.events[-1] == TurnFinished(result.text, result.usage, 4, "end")
    assert result.usage.prompt_tokens > 0 and result.usage.model_calls == 4
    assert len(rec.asked) == 1 and rec.asked[0].kind == "edit" and "+" in rec.asked[0].detail


async def test_malformed_tool_calls_return_errors_to_the_model(
    server: ScriptedServer, make_agent: MakeAgent
) -> None:
    server.add(
        tools(
            ("read", '{"path": "cart.py"'),
            ("nosuch", {}),
            ("read", "[1, 2]"),
            ("read", {"path": 42}),
            ("edit", {"path": "cart.py"}),
        ),
        text("ok"),
    )
    agent, rec = make_agent()
    result = await agent.run_turn("go")
    assert result.stop == "end"
    errors = tool_results(server.requests[1])
    assert len(errors) == 5 and all(e.startswith("error:") for e in errors)
    assert "not valid JSON" in errors[0]
    assert "no tool named 'nosuch'" in errors[1]
    assert "JSON object" in errors[2]
    assert "must be a string" in errors[3]
    assert "missing required argument 'old_string'" in errors[4]
    assert all(e.is_error for e in rec.of(ToolCallFinished))


async def test_max_turns_stops_the_loop(server: ScriptedServer, make_agent: MakeAgent) -> None:
    server.add(tool("list", {"pattern": "*.py"}, repeat=True))
    agent, rec = make_agent(max_turns=3)
    result = await agent.run_turn("loop forever")
    assert result.stop == "max_turns" and result.is_error
    assert len(server.requests) == 3
    assert rec.of(Error)[-1].fatal and "the limit is 3" in rec.of(Error)[-1].message


async def test_a_500_then_success(server: ScriptedServer, make_agent: MakeAgent) -> None:
    server.add(error(500), error(503), text("recovered"))
    agent, _ = make_agent()
    result = await agent.run_turn("hi")
    assert result.text == "recovered" and len(server.requests) == 3


async def test_a_500_forever_ends_the_turn_with_an_error(
    server: ScriptedServer, make_agent: MakeAgent
) -> None:
    server.add(error(500, "boom", repeat=True))
    agent, rec = make_agent()
    result = await agent.run_turn("hi")
    assert result.stop == "error" and "failed (500)" in (result.error or "")
    assert len(server.requests) == 4  # the first try and 3 retries
    assert rec.of(TurnFinished)[-1].stop == "error"


async def test_refused_approvals_go_back_to_the_model(
    server: ScriptedServer, repo: Path, make_agent: MakeAgent
) -> None:
    server.add(
        tool("write", {"path": "new.txt", "content": "x"}),
        tool("shell", {"command": "touch made-by-shell"}),
        text("could not"),
    )
    agent, rec = make_agent(approve=False)
    await agent.run_turn("write and run")
    assert not (repo / "new.txt").exists() and not (repo / "made-by-shell").exists()
    results = tool_results(server.requests[2])
    assert results[0].startswith("error: refused: write new.txt was not approved")
    assert results[1].startswith("error: refused: the command was not approved")
    assert [r.kind for r in rec.asked] == ["edit", "shell"]


async def test_default_approver_asks_the_front_end_through_a_future(
    server: ScriptedServer, repo: Path, make_agent: MakeAgent
) -> None:
    from theus.protocol import ApprovalRequest

    server.add(tool("shell", {"command": "echo hi > out.txt"}), text("done"))
    agent, rec = make_agent()
    agent.approver = agent._ask_sink  # what the chat app gets when it passes no approver

    def answer(event: Event) -> None:
        rec(event)
        if isinstance(event, ApprovalRequest):
            assert event.future is not None and event.detail == "echo hi > out.txt"
            event.future.set_result(True)

    agent.sink = answer
    await agent.run_turn("run it")
    assert (repo / "out.txt").read_text().strip() == "hi"
    # after a note when this machine has no sandbox
    assert "exit 0" in tool_results(server.requests[1])[0].splitlines()


async def test_a_broken_sink_does_not_break_the_turn(
    server: ScriptedServer, make_agent: MakeAgent
) -> None:
    server.add(text("fine"))
    agent, _ = make_agent()

    def broken(event: object) -> None:
        raise RuntimeError("ui crashed")

    agent.sink = broken
    assert (await agent.run_turn("hi")).text == "fine"


async def test_wire_messages_carry_no_private_keys(
    server: ScriptedServer, make_agent: MakeAgent
) -> None:
    server.add(tool("list", {}), text("a"), text("b"))
    agent, _ = make_agent()
    await agent.run_turn("one")
    await agent.run_turn("two")
    for body in server.requests:
        for message in body["messages"]:
            assert not any(k.startswith("_") for k in message), json.dumps(message)
    roles = [m["role"] for m in server.requests[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
