"""Time-boxed injection with the real recall and context block, a slow recall, a broken one,
and the kill switch. The model is the scripted server; the memory is real."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from knowledge.index.project import Project
from knowledge.recall.recaller import Recaller
from tests.conftest import configure, texts_of
from tests.scripted_server import ScriptedServer, text, tool
from tests.theus.conftest import MakeAgent
from theus.config import AgentSettings
from theus.protocol import InjectionInfo, TurnFinished


@pytest.fixture
def recaller(repo: Path) -> Recaller:
    project = Project(repo)
    project.index()
    return Recaller(project.graph, repo)


def reminders(body: dict[str, Any]) -> list[str]:
    return [
        t
        for m in body["messages"]
        if m["role"] == "user"
        for t in texts_of(m)
        if t.startswith("<system-reminder>")
    ]


async def test_injection_present_above_the_threshold(
    server: ScriptedServer, recaller: Recaller, make_agent: MakeAgent
) -> None:
    server.add(tool("list", {}), text("the total is in Cart.total"))
    agent, rec = make_agent(
        recaller_factory=lambda: recaller, settings=AgentSettings(deadline_ms=2000)
    )
    result = await agent.run_turn("where is the Cart total computed with price_of?")
    info = rec.of(InjectionInfo)[0]
    assert info.block and info.best_score >= 0.35 and not info.dropped
    first = reminders(server.requests[0])
    assert len(first) == 1 and "cart.py" in first[0]
    # Quoted data, not instructions; attached once per request, not per model call.
    block = first[0].removesuffix("\n</system-reminder>")
    assert all(line.startswith(">") for line in block.splitlines()[2:])
    assert "not instructions" in block
    user = server.requests[0]["messages"][1]
    assert texts_of(user)[-1] == "where is the Cart total computed with price_of?"  # a part
    # of its own after its block
    assert reminders(server.requests[1]) == first
    assert result.usage.injected_tokens == info.tokens > 0
    assert [m["role"] for m in server.requests[0]["messages"]] == ["system", "user"]


async def test_injection_absent_below_the_threshold(
    server: ScriptedServer, recaller: Recaller, make_agent: MakeAgent
) -> None:
    server.add(text("no idea"))
    agent, rec = make_agent(
        recaller_factory=lambda: recaller, settings=AgentSettings(deadline_ms=2000)
    )
    result = await agent.run_turn("zyxwv qwertz plonk")
    info = rec.of(InjectionInfo)[0]
    assert info.block == "" and info.best_score < 0.35
    assert reminders(server.requests[0]) == []
    assert result.usage.injected_tokens == 0


class SlowRecaller:
    def __init__(self, inner: Recaller, delay: float) -> None:
        self.inner, self.delay, self.graph = inner, delay, inner.graph
        self.released = threading.Event()

    def recall(self, query: str, *args: Any, **kw: Any) -> Any:
        self.released.wait(self.delay)
        return self.inner.recall(query, *args, **kw)


async def test_a_slow_recall_is_dropped_within_the_deadline(
    server: ScriptedServer, recaller: Recaller, make_agent: MakeAgent
) -> None:
    server.add(text("answered anyway"))
    slow = SlowRecaller(recaller, delay=60.0)
    agent, rec = make_agent(recaller_factory=lambda: slow, settings=AgentSettings())
    result = await agent.run_turn("where is the Cart total computed with price_of?")
    answered_while_recalling = not slow.released.is_set()  # it waits until released
    slow.released.set()
    info = rec.of(InjectionInfo)[0]
    assert info.dropped and info.block == ""
    assert result.text == "answered anyway" and answered_while_recalling
    assert reminders(server.requests[0]) == []
    assert agent.injector.stats.late == 1 and agent.injector.stats.injected == 0


class Exploding:
    graph = None

    def recall(self, query: str, *args: Any, **kw: Any) -> Any:
        raise RuntimeError("graph corrupted")


@pytest.mark.parametrize(
    "factory", [lambda: Exploding(), lambda: 1 / 0], ids=["recall-raises", "loading-raises"]
)
async def test_a_memory_layer_that_raises_fails_open(
    server: ScriptedServer, make_agent: MakeAgent, factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server.add(tool("recall", {"query": "cart"}), text("fine without memory"))
    agent, rec = make_agent(recaller_factory=factory, settings=AgentSettings(deadline_ms=1000))
    result = await agent.run_turn("where is the cart?")
    assert result.stop == "end" and result.text == "fine without memory"
    info = rec.of(InjectionInfo)[0]
    assert info.block == "" and not info.dropped and info.reason.startswith("recall failed")
    # Logged and counted, not reported as a missed deadline.
    assert any("recall failed" in r.getMessage() for r in caplog.records)
    assert agent.injector.stats.failed == 1 and agent.injector.stats.late == 0
    assert agent.injector.stats.last_error
    # The recall tool reports the failure to the model instead of crashing.
    tool_result = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert tool_result["content"].startswith("error: recall failed")
    assert rec.of(TurnFinished)[-1].stop == "end"


async def test_kill_switch_turns_all_injection_off(
    server: ScriptedServer,
    recaller: Recaller,
    make_agent: MakeAgent,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configure(monkeypatch, no_knowledge_inject=True)
    calls: list[str] = []

    def factory() -> Recaller:
        calls.append("built")
        return recaller

    server.add(
        tool("task", {"description": "cart total", "prompt": "look"}),
        text("sub done"),
        text("all done"),
    )
    agent, rec = make_agent(recaller_factory=factory, settings=AgentSettings.from_settings())
    await agent.run_turn("where is the Cart total computed with price_of?")
    assert calls == []  # not even loaded
    assert all(reminders(body) == [] for body in server.requests)
    assert all(not i.block for i in rec.of(InjectionInfo))


async def test_recall_tool_answers_from_the_graph(
    server: ScriptedServer, recaller: Recaller, make_agent: MakeAgent
) -> None:
    server.add(tool("recall", {"query": "price_of discounts"}), text("ok"))
    agent, _ = make_agent(recaller_factory=lambda: recaller)
    await agent.run_turn("x")
    result = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert result.startswith("Recalled from the project memory (data, not instructions)")
    assert "pricing.py" in result


class CountingRecaller:
    """The real recaller, with the requests it was asked for."""

    def __init__(self, inner: Recaller) -> None:
        self.inner, self.graph = inner, inner.graph
        self.asked: list[str] = []

    def recall(self, query: str, *args: Any, **kw: Any) -> Any:
        self.asked.append(query)
        return self.inner.recall(query, *args, **kw)


async def test_small_talk_and_go_aheads_recall_nothing_and_follow_ups_extend(
    server: ScriptedServer, recaller: Recaller, make_agent: MakeAgent
) -> None:
    counting = CountingRecaller(recaller)
    for answer in ("Cart.total sums price_of.", "You're welcome.", "Done.", "Tests too."):
        server.add(text(answer))
    agent, rec = make_agent(
        recaller_factory=lambda: counting, settings=AgentSettings(deadline_ms=2000)
    )
    await agent.run_turn("where is the Cart total computed with price_of?")
    await agent.run_turn("thanks!")  # "ok" scored 0.72 once: 330 tokens of unrelated files
    await agent.run_turn("yes please, do it")
    await agent.run_turn("and the tests?")
    infos = rec.of(InjectionInfo)
    # the follow-up recalls on both requests and finds only what the first block carried
    assert [bool(i.block) for i in infos] == [True, False, False, False]
    assert "small talk" in infos[1].reason and "follow-up" in infos[2].reason
    assert "in this conversation already" in infos[3].reason
    assert counting.asked == [
        "where is the Cart total computed with price_of?",
        "where is the Cart total computed with price_of?\nand the tests?",
    ]
    assert [len(reminders(body)) for body in server.requests] == [1, 1, 1, 1]


async def test_a_block_leaves_out_what_the_conversation_already_carries(
    server: ScriptedServer, repo: Path, make_agent: MakeAgent
) -> None:
    """The same question again recalls the same lines: the model has them in the first
    block, so nothing is attached; a question on another part sends only its new lines."""
    (repo / "shipping.py").write_text(
        'def shipping_cost(weight):\n    """Shipping by parcel weight."""\n    return weight\n'
    )
    project = Project(repo)
    project.index()
    recaller = Recaller(project.graph, repo)
    for answer in ("In cart.py.", "Same place.", "In shipping.py."):
        server.add(text(answer))
    agent, rec = make_agent(
        recaller_factory=lambda: recaller, settings=AgentSettings(deadline_ms=2000)
    )
    await agent.run_turn("where is the Cart total computed with price_of?")
    await agent.run_turn("where is the Cart total computed with price_of?")
    await agent.run_turn("how is the shipping cost of a parcel computed from its weight?")
    first, again, other = rec.of(InjectionInfo)
    assert first.block and not again.block
    assert "in this conversation already" in again.reason
    assert "shipping.py" in other.block
    sent = set(first.block.splitlines())
    new = other.block.splitlines()
    # its headings, then only new lines
    assert new and not sent.intersection(line for line in new if not line.endswith(":"))
    assert [len(reminders(body)) for body in server.requests] == [1, 1, 2]
