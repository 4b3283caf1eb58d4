"""Microcompact (with a controllable clock), compaction into an episode, and subagents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from knowledge.core.runs import RunSummary
from knowledge.index.project import Project
from knowledge.recall.recaller import Recaller
from tests.conftest import texts_of
from tests.scripted_server import ScriptedServer, text, tool
from tests.theus.conftest import MakeAgent
from theus.agent.compaction import SUMMARY_PROMPT
from theus.config import AgentSettings
from theus.protocol import Compacted, MicrocompactCleared, SubagentStarted
from theus.sessions import SessionStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def script_eight_tool_calls(server: ScriptedServer) -> None:
    server.add(tool("recall", {"query": "cart"}))
    for i in range(1, 8):
        server.add(tool("read", {"path": "cart.py", "offset": i, "limit": 1}))
    server.add(text("read it all"))


async def test_microcompact_after_an_hour_keeps_five_and_recall(
    server: ScriptedServer, repo: Path, make_agent: MakeAgent
) -> None:
    clock = Clock()
    session = SessionStore(repo).create()
    agent, rec = make_agent(clock=clock, session=session)
    script_eight_tool_calls(server)
    await agent.run_turn("read the cart line by line")
    before = tool_messages(server.requests[-1])
    assert len(before) == 8

    clock.now += 59 * 60  # prompt cache may still be warm: nothing cleared
    server.add(text("still here"))
    await agent.run_turn("again?")
    assert tool_messages(server.requests[-1]) == before
    assert rec.of(MicrocompactCleared) == []

    clock.now += 61 * 60
    server.add(text("after lunch"))
    await agent.run_turn("where were we?")
    after = tool_messages(server.requests[-1])
    assert after[0] == before[0]  # the recall result, the oldest, is never cleared
    assert after[3:] == before[3:]  # the 5 most recent are kept
    for cleared, offset in ((after[1], 1), (after[2], 2)):
        assert cleared.startswith("[Old tool result cleared")
        assert f'read({{"path": "cart.py", "offset": {offset}, "limit": 1}})' in cleared
        assert "Call the tool again" in cleared
    event = rec.of(MicrocompactCleared)[0]
    assert event.cleared == 2 and event.kept == 5
    # Recorded in the transcript, so a resumed session sees the same history.
    records = [r for r in session.records() if r["type"] == "microcompact"]
    assert len(records) == 1 and len(records[0]["placeholders"]) == 2
    replayed = [m["content"] for m in session.messages() if m["role"] == "tool"]
    assert replayed == after


async def test_compaction_summarises_older_turns_into_an_episode(
    server: ScriptedServer, repo: Path, make_agent: MakeAgent
) -> None:
    recorded: list[tuple[str, str, str | None, list[str]]] = []

    class Episodes:
        def record(self, kind: str, text: str, session_id: str | None, files: list[str]) -> None:
            recorded.append((kind, text, session_id, files))

        def record_run(self, run: RunSummary, session_id: str) -> None:
            recorded.append(("session", run.render(), session_id, list(run.files_read)))

    session = SessionStore(repo).create()
    agent, rec = make_agent(
        settings=AgentSettings(context_tokens=1000), session=session, episodes=Episodes()
    )
    server.add(tool("read", {"path": "cart.py"}), text("the cart sums prices " * 200))
    await agent.run_turn("explain the cart, and remember how it works")
    server.add(text("SUMMARY: user asked about the cart; it sums prices."), text("yes"))
    result = await agent.run_turn("and pricing?")
    assert result.text == "yes"
    summary_call, next_call = server.requests[-2], server.requests[-1]
    assert summary_call["messages"][0]["content"] == SUMMARY_PROMPT
    assert "explain the cart" in summary_call["messages"][1]["content"]
    assert [m["role"] for m in next_call["messages"]] == ["system", "user"]
    merged = next_call["messages"][1]["content"]
    assert "SUMMARY: user asked about the cart" in merged and merged.endswith("\n\nand pricing?")
    event = rec.of(Compacted)[0]
    assert event.messages_replaced == 4 and event.tokens_after < event.tokens_before
    assert recorded[0][:3] == (
        "compaction",
        "SUMMARY: user asked about the cart; it sums prices.",
        session.id,
    )
    assert [m["role"] for m in session.messages()] == ["system", "user", "user", "assistant"]
    agent.end_session()
    assert recorded[-1][0] == "session"
    # What was asked and done.
    assert "- explain the cart, and remember how it works\n- and pricing?" in recorded[-1][1]
    assert "Last answer: yes" in recorded[-1][1] and recorded[-1][3] == ["cart.py"]
    assert "<system-reminder>" not in recorded[-1][1]


async def test_a_failing_episodes_port_does_not_stop_the_session(
    server: ScriptedServer, make_agent: MakeAgent, caplog: pytest.LogCaptureFixture
) -> None:
    """The port's own write fails (a full disk): the session still ends, one warning says so.
    The fake has the method the session end calls, so the OSError is the path under test."""
    calls: list[str] = []

    class Broken:
        def record(self, kind: str, text: str, session_id: str | None, files: list[str]) -> None:
            calls.append(kind)
            raise OSError("disk full")

        def record_run(self, run: RunSummary, session_id: str) -> None:
            calls.append("session")
            raise OSError("disk full")

    agent, _ = make_agent(episodes=Broken())
    server.add(text("noted"))
    assert (await agent.run_turn("remember: we deploy on fridays")).text == "noted"
    agent.end_session()  # logged, not raised
    assert calls == ["session"]
    assert any(r.levelname == "WARNING" and "disk full" in r.getMessage() for r in caplog.records)


async def test_subagent_is_seeded_with_a_recall_on_its_task(
    server: ScriptedServer, repo: Path, make_agent: MakeAgent
) -> None:
    project = Project(repo)
    project.index()
    recaller = Recaller(project.graph, repo)
    server.add(
        tool(
            "task",
            {"description": "Cart total and price_of", "prompt": "Find how the total is computed."},
        ),
        text("child: Cart.total sums price_of"),
        text("parent: done"),
    )
    agent, rec = make_agent(
        recaller_factory=lambda: recaller, settings=AgentSettings(deadline_ms=2000)
    )
    result = await agent.run_turn("zyxwv qwertz plonk")  # the parent's own recall finds nothing
    assert result.text == "parent: done"
    child = server.requests[1]["messages"]
    assert [m["role"] for m in child] == ["system", "user"]
    reminder, task = texts_of(child[1])
    assert reminder.startswith("<system-reminder>") and "cart.py" in reminder
    assert reminder.endswith("</system-reminder>") and task == "Find how the total is computed."
    assert "task" not in {t["function"]["name"] for t in server.requests[1]["tools"]}
    started = rec.of(SubagentStarted)[0]
    assert not started.fork and 0 < started.seeded_tokens <= 500 + 60  # block + its wrapper
    assert tool_messages(server.requests[2]) == ["child: Cart.total sums price_of"]
    assert result.usage.model_calls == 2 and agent.usage.model_calls == 3


class CountingRecaller(Recaller):
    def __init__(self, root: Path) -> None:
        project = Project(root)
        project.index()
        super().__init__(project.graph, root)
        self.calls: list[str] = []

    def recall(self, query: str, *args: Any, **kw: Any) -> Any:
        self.calls.append(query)
        return super().recall(query, *args, **kw)


async def test_a_fork_inherits_the_parent_and_skips_the_seed(
    server: ScriptedServer, repo: Path, make_agent: MakeAgent
) -> None:
    server.add(
        tool("task", {"description": "Cart total", "prompt": "Go deeper.", "fork": True}),
        text("fork answer"),
        text("parent answer"),
    )
    recaller = CountingRecaller(repo)
    calls = recaller.calls
    agent, rec = make_agent(
        recaller_factory=lambda: recaller, settings=AgentSettings(deadline_ms=5000)
    )
    await agent.run_turn("where is the Cart total computed with price_of?")
    # The fork did not recall again.
    assert calls == ["where is the Cart total computed with price_of?"]
    fork = server.requests[1]["messages"]
    parent = server.requests[0]["messages"]
    assert fork[0] == parent[0] and len(fork) == len(parent) == 2
    # Inherited, including the parent's injection (once: no second seed), then its task.
    assert texts_of(fork[1]) == [*texts_of(parent[1]), "Go deeper."]
    assert "".join(texts_of(fork[1])).count("<system-reminder>") == 1
    assert rec.of(SubagentStarted)[0].fork and rec.of(SubagentStarted)[0].seeded_tokens == 0
