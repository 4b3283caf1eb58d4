"""Whole turns against quirky servers: a cut answer, a dropped connection, the turn deadline,
a small context (compact and retry once), tool schemas counted in the context."""

from __future__ import annotations

import json
from pathlib import Path

from tests.scripted_server import Quirks, ScriptedServer, text, tool
from tests.theus.conftest import MakeAgent, Recorder
from theus.config import AgentSettings
from theus.protocol import Compacted, Error
from theus.sessions import SessionStore


def notices(rec: Recorder) -> list[str]:
    return [e.message for e in rec.of(Error) if not e.fatal]


async def test_a_cut_answer_is_said_and_marked(
    server: ScriptedServer, make_agent: MakeAgent
) -> None:
    server.add(text("the answer is cut mid-", finish="length", completion_tokens=12))
    agent, rec = make_agent()
    result = await agent.run_turn("explain")
    assert result.stop == "end" and result.incomplete == "answer cut at 12 tokens"
    assert any(n.startswith("answer cut at 12 tokens") for n in notices(rec))


async def test_a_dropped_stream_keeps_the_partial_answer_in_the_session(
    repo: Path, make_agent: MakeAgent, server: ScriptedServer
) -> None:
    server.chunk_chars = 4
    server.add(text("half of an answer that never ends", drop_after=4))
    session = SessionStore(repo).create()
    agent, _ = make_agent(session=session)
    result = await agent.run_turn("explain")
    assert result.stop == "error" and result.text == "half of an a"
    assert result.incomplete == "answer incomplete: the server dropped the connection"
    assert "dropped the connection mid-answer" in (result.error or "")
    last = session.messages()[-1]
    assert (last["role"], last["content"]) == ("assistant", "half of an a")
    assert any(r.get("type") == "incomplete" for r in session.records())


async def test_the_turn_deadline_stops_a_stream_that_keeps_going(
    server: ScriptedServer, make_agent: MakeAgent
) -> None:
    server.chunk_chars = 2
    server.add(text("on and on and on", stall_after=3, stall_s=3.0))
    agent, _ = make_agent(settings=AgentSettings(turn_deadline_s=0.5))
    result = await agent.run_turn("talk")
    assert result.stop == "error" and "THEUS_TURN_DEADLINE" in (result.error or "")
    assert result.text == "on a" and result.incomplete is not None


async def test_an_overflow_compacts_and_retries_once(
    server: ScriptedServer, make_agent: MakeAgent
) -> None:
    agent, rec = make_agent()
    schemas = len(json.dumps([t.schema() for t in agent.tools.values()])) // 4
    server.quirks = Quirks(context_tokens=schemas + 400)  # the tools fit, old turns do not
    agent.messages += [
        {"role": "user", "content": "what is in the cart " * 40},
        {"role": "assistant", "content": "items and their prices " * 40},
    ]
    server.add(text("SUMMARY: the cart holds items."), text("done"))
    result = await agent.run_turn("and now?")
    assert result.stop == "end" and result.text == "done" and rec.of(Compacted)
    # Refused, refused again with the context size learned, the summary, the retry.
    assert len(server.requests) == 4 and agent.model.context_tokens == schemas + 400
    assert "SUMMARY: the cart holds items." in json.dumps(server.requests[-1]["messages"])


async def test_tool_schemas_count_towards_the_context(
    server: ScriptedServer, make_agent: MakeAgent
) -> None:
    agent, rec = make_agent()
    # By the agent's own estimate (and its server's learned ratio), not a guess of it: a
    # context the schemas alone fill to the compaction ratio, whatever the prompt's length.
    schemas = agent.model.estimate_tokens([], [t.schema() for t in agent.tools.values()])
    settings = AgentSettings()
    context = int(schemas / settings.compact_ratio) + 1
    agent, rec = make_agent(settings=AgentSettings(context_tokens=context))
    agent.messages += [
        {"role": "user", "content": "an earlier request"},
        {"role": "assistant", "content": "an earlier answer"},
    ]
    assert agent.model.estimate_tokens(agent.messages) < context * settings.compact_ratio / 2
    server.add(text("SUMMARY: an earlier exchange."), text("done"))
    result = await agent.run_turn("next")
    assert result.text == "done" and rec.of(Compacted)


async def test_a_server_without_streamed_tools_is_said_once_per_run(
    server: ScriptedServer, make_agent: MakeAgent
) -> None:
    server.quirks = Quirks(
        no_streamed_tools=True, ignores_stream_options=True, strict_messages=True
    )
    server.add(
        tool("read", {"path": "cart.py"}), tool("read", {"path": "pricing.py"}), text("read both")
    )
    agent, rec = make_agent()
    result = await agent.run_turn("read them")
    assert result.stop == "end" and result.text == "read both"
    said = [n for n in notices(rec) if "cannot stream tool calls" in n]
    assert len(said) == 1 and agent.usage_estimated and agent.usage.prompt_tokens > 0
    # Every later step offers tools: each goes non-streaming, none fails first.
    assert [r.get("stream", False) for r in server.requests] == [True, False, False, False]
