"""Cancelling a turn keeps the conversation valid; the memory ports fail open."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.scripted_server import ScriptedServer, text, tool
from tests.theus.conftest import MakeAgent
from theus.agent.ports import open_memory
from theus.protocol import ToolCallStarted, TurnFinished


async def test_cancel_during_a_tool_kills_it_and_keeps_the_history_valid(
        server: ScriptedServer, repo: Path, make_agent: MakeAgent) -> None:
    server.add(tool("shell", {"command": "sleep 30; touch late"}), text("next answer"))
    agent, rec = make_agent()
    started = asyncio.Event()
    inner = agent.sink

    def sink(event: object) -> None:
        inner(event)
        if isinstance(event, ToolCallStarted):
            started.set()

    agent.sink = sink
    task = asyncio.create_task(agent.run_turn("run something slow"))
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert rec.of(TurnFinished)[-1].stop == "cancelled"
    result = await agent.run_turn("never mind")
    assert result.text == "next answer"
    body = server.requests[-1]["messages"]
    call_id = body[-3]["tool_calls"][0]["id"]
    assert body[-2] == {"role": "tool", "tool_call_id": call_id,
                        "content": "error: cancelled by the user before it finished"}
    assert not (repo / "late").exists()


def test_open_memory_fails_open(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import knowledge.embed.layer
    import knowledge.episodes
    import knowledge.watch

    def boom(*args: object, **kw: object) -> None:
        raise RuntimeError("layer broken")

    monkeypatch.setattr(knowledge.watch, "maybe_start", boom)
    monkeypatch.setattr(knowledge.episodes, "episode_sink", boom)
    monkeypatch.setattr(knowledge.embed.layer, "SemanticLayer", boom)
    memory = open_memory(repo)
    assert memory.project is not None and memory.watcher is None and memory.episodes is None
    assert memory.semantic is None and not memory.semantic_on
    memory.close()
    monkeypatch.setattr("knowledge.project.Project", boom)
    memory = open_memory(repo)
    assert memory.project is None
    with pytest.raises(RuntimeError):
        memory.recaller()


def test_open_memory_honours_kill_switches(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("WATCH", "EPISODES", "EMBEDDINGS"):
        monkeypatch.setenv(f"THEUS_NO_{name}", "1")
    memory = open_memory(repo)
    assert memory.watcher is None and memory.episodes is None and memory.semantic is None
    memory.close()


async def test_semantic_layer_on_extends_the_injection_deadline(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.theus.conftest import model_settings
    from theus.agent.setup import start_agent

    monkeypatch.setenv("THEUS_NO_WATCH", "1")
    monkeypatch.setenv("THEUS_EMBEDDINGS_URL", "http://127.0.0.1:9/v1")  # configured, unused
    runtime = start_agent(repo, model_settings("http://127.0.0.1:9/v1"), None, headless=True)
    try:
        assert runtime.memory.semantic_on
        assert runtime.agent.settings.injection_deadline_ms == 150 + 800
    finally:
        await runtime.close()
    monkeypatch.setenv("THEUS_NO_EMBEDDINGS", "1")
    runtime = start_agent(repo, model_settings("http://127.0.0.1:9/v1"), None, headless=True)
    try:
        assert runtime.memory.semantic is None
        assert runtime.agent.settings.injection_deadline_ms == 150
    finally:
        await runtime.close()


def test_a_one_shot_memory_recalls_from_the_snapshot_until_the_graph_moves(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from knowledge.recall import make_recaller

    monkeypatch.setenv("THEUS_NO_EMBEDDINGS", "1")
    first = open_memory(repo, one_shot=True, index_if_missing=True)
    first.close()
    first = open_memory(repo, one_shot=True)
    assert not make_recaller(first.project, one_shot=True).frozen  # built now, and saved
    first.close()
    memory = open_memory(repo, one_shot=True)  # the real watcher runs
    stale = threading.Event()
    memory.on_stale = stale.set
    assert memory.recaller().frozen
    (repo / "refunds.py").write_text("def refund_order(order):\n    return order\n")
    assert stale.wait(20), "the watcher's update must make the snapshot recaller stale"
    live = memory.recaller()
    assert not live.frozen and live.graph is memory.project.graph  # the watcher's graph
    assert any(h.path == "refunds.py" for h in live.recall("refund order").hits)
    memory.close()


async def test_a_headless_run_recalls_its_first_request_early_and_watches_from_its_first_tool(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import texts_of
    from tests.scripted_server import ScriptedServer, text, tool
    from tests.theus.conftest import model_settings
    from theus.agent.setup import start_agent

    monkeypatch.setenv("THEUS_NO_EMBEDDINGS", "1")
    open_memory(repo, one_shot=True, index_if_missing=True).close()
    request = "where is the cart total computed"
    with ScriptedServer([text("in cart.py"), tool("read_file", {"path": "cart.py"}),
                         text("done")]) as server:
        runtime = start_agent(repo, model_settings(server.url), None, headless=True,
                              first_request=request)
        try:
            injector = runtime.agent.injector
            assert injector._prefetched is not None and injector._prefetched.query == request
            first = await runtime.agent.run_turn(request)
            assert first.text == "in cart.py" and runtime.memory.watcher is None
            sent = [t for m in server.requests[0]["messages"] for t in texts_of(m)]
            assert any("cart.py" in t and "system-reminder" in t for t in sent)
            await runtime.agent.run_turn("read it")
            assert runtime.memory.watcher is not None and runtime.memory.watcher.alive
        finally:
            await runtime.close()
