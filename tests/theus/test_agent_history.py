"""The agent's run-history port: each finished request, and each subagent task, is handed to
the memory as a run with only its own part of the bookkeeping (a real `Memory`, the real
openai client against the scripted server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge.core.paths import ProjectPaths
from knowledge.memory import Memory
from knowledge.run_history.layer import RunHistory
from tests.conftest import configure
from tests.scripted_server import ScriptedServer, error, text, tool
from tests.theus.conftest import MakeAgent
from theus.sessions import SessionStore


async def test_every_finished_request_and_subagent_task_is_a_run_of_its_own(
    server: ScriptedServer, repo: Path, make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, no_embeddings=True)  # no embedder: records kept locally
    memory = Memory(repo, watch=False).open()
    session = SessionStore(repo).create()
    server.add(
        tool(
            "edit",
            {"path": "cart.py", "old_string": "return sum(", "new_string": "return round(sum("},
        ),
        text("Rounded."),
        tool(
            "task",
            {
                "description": "check the pricing",
                "prompt": "read pricing.py and say what price_of returns",
            },
        ),
        tool("read", {"path": "pricing.py"}),  # the subagent
        text("It returns the item's price."),  # the subagent's answer
        text("Checked: the unit price."),
        error(400, "bad request"),
    )
    agent, _ = make_agent(history=memory, session=session)
    assert (await agent.run_turn("round the cart total")).stop == "end"
    assert (await agent.run_turn("what does pricing return?")).stop == "end"
    assert (await agent.run_turn("this one fails")).stop == "error"
    memory.close()
    records = {
        r.request: r for r in RunHistory.for_project(ProjectPaths.for_root(repo)).journal.records()
    }
    assert set(records) == {
        "round the cart total",
        "what does pricing return?",
        "read pricing.py and say what price_of returns",
    }  # not the failed
    first = records["round the cart total"]
    assert first.files_changed == ("cart.py",) and "Rounded." in first.done
    assert first.session == session.id and first.model == "test-model" and not first.stored
    second = records["what does pricing return?"]
    assert second.files_changed == () and "cart.py" not in second.done
    child = records["read pricing.py and say what price_of returns"]
    assert child.session == session.id and "the item's price" in child.done
