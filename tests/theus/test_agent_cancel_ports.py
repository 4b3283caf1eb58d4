"""Cancelling a turn keeps the conversation valid; the headless wiring over the memory."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from knowledge.memory import open_memory
from tests.conftest import configure
from tests.scripted_server import ScriptedServer, text, tool
from tests.theus.conftest import MakeAgent
from theus.protocol import Event, ToolCallStarted, TurnFinished


async def test_cancel_during_a_tool_kills_it_and_keeps_the_history_valid(
    server: ScriptedServer, repo: Path, make_agent: MakeAgent
) -> None:
    server.add(tool("shell", {"command": "sleep 30; touch late"}), text("next answer"))
    agent, rec = make_agent()
    started = asyncio.Event()
    inner = agent.sink

    def sink(event: Event) -> None:
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
    assert body[-2] == {
        "role": "tool",
        "tool_call_id": call_id,
        "content": "error: cancelled by the user before it finished",
    }
    assert not (repo / "late").exists()


async def test_semantic_layer_on_extends_the_injection_deadline(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.theus.conftest import model_settings
    from theus.agent.setup import start_headless

    configure(monkeypatch, embeddings_url="http://127.0.0.1:9/v1")  # configured, unused
    runtime = start_headless(repo, model_settings("http://127.0.0.1:9/v1"), None, "q")
    try:
        assert runtime.memory.semantic_on
        assert runtime.agent.settings.injection_deadline_ms == 150 + 800
    finally:
        await runtime.close()
    configure(monkeypatch, no_embeddings=True)
    runtime = start_headless(repo, model_settings("http://127.0.0.1:9/v1"), None, "q")
    try:
        assert runtime.memory.semantic is None
        assert runtime.agent.settings.injection_deadline_ms == 150
    finally:
        await runtime.close()


async def test_a_headless_run_recalls_its_first_request_early_and_watches_from_its_first_tool(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import configure, texts_of
    from tests.scripted_server import ScriptedServer, text, tool
    from tests.theus.conftest import model_settings
    from theus.agent.setup import start_headless

    configure(monkeypatch, no_embeddings=True)
    open_memory(repo, one_shot=True, index_if_missing=True).close()
    request = "where is the cart total computed"
    with ScriptedServer(
        [text("in cart.py"), tool("read_file", {"path": "cart.py"}), text("done")]
    ) as server:
        runtime = start_headless(repo, model_settings(server.url), None, request)
        try:
            injector = runtime.agent.injector
            assert injector._prefetched is not None and injector._prefetched.query == request
            first = await runtime.agent.run_turn(request)
            assert first.text == "in cart.py" and runtime.memory.watcher is None
            assert runtime.agent.episodes is runtime.memory  # the one memory's port
            assert runtime.agent.facts is not None
            await runtime.agent.facts.settle()
            assert server.structured_requests == []  # a question: no extraction asked...
            assert runtime.memory.facts is None  # ...and the graph stayed unloaded
            sent = [t for m in server.requests[0]["messages"] for t in texts_of(m)]
            assert any("cart.py" in t and "system-reminder" in t for t in sent)
            await runtime.agent.run_turn("read it")
            assert runtime.memory.watcher is not None and runtime.memory.watcher.alive
        finally:
            await runtime.close()
