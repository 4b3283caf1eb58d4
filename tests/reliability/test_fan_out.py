"""Subagents share their request's budget of model calls, and only so many run at once: a model
that answered every request with 20 `task` calls made 4,008 requests in 105 s. The scripted
server counts every request, and the most it answered at once."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from tests.conftest import write_tree
from tests.scripted_server import Reply, ScriptedServer, text, tools
from tests.theus.conftest import NO_RECALL, model_settings
from tests.theus.test_headless import theus
from theus.agent.injection import Injector
from theus.agent.loop import SUBAGENTS_AT_ONCE, Agent
from theus.config import AgentSettings
from theus.model import ModelClient

FAN = tools(
    *[("task", {"description": f"job {i}", "prompt": f"do job {i}"}) for i in range(20)],
    repeat=True,
)


def test_a_model_that_always_fans_out_stops_at_the_runs_budget(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n"})
    with ScriptedServer([FAN]) as server:
        done = theus(
            ["-p", "go", "--max-turns", "10", "--output-format", "json"],
            server,
            root,
            THEUS_NO_FACTS="1",
        )
        requests, at_once = len(server.requests), server.most_in_flight
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["subtype"] == "error_max_turns"
    assert requests == 10  # every model call of the run, the subagents' among them
    assert result["usage"]["model_calls"] == 10
    assert at_once <= SUBAGENTS_AT_ONCE
    assert "stopped after 10 model calls (9 by subagents): the limit is 10" in done.stderr


def test_the_default_budget_bounds_a_fan_out_too(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n"})
    with ScriptedServer([FAN]) as server:
        done = theus(["-p", "go"], server, root, THEUS_NO_FACTS="1", THEUS_MAX_TURNS="30")
        requests = len(server.requests)
    assert done.returncode == 1 and requests == 30
    assert "THEUS_MAX_TURNS" in done.stderr


async def test_task_calls_run_side_by_side_at_most_so_many_at_once(tmp_path: Path) -> None:
    # The first subagents' requests are held until SUBAGENTS_AT_ONCE of them are in: one at a
    # time, the barrier would break and fail them.
    together = threading.Barrier(SUBAGENTS_AT_ONCE, timeout=60)

    def echo(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        gate = together if int(prompt.split()[-1]) < SUBAGENTS_AT_ONCE else None
        return text(f"did {prompt.removeprefix('do ')}", gate=gate)

    jobs = 6
    fan = tools(
        *[("task", {"description": f"job {i}", "prompt": f"do job {i}"}) for i in range(jobs)]
    )
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n"})
    settings = AgentSettings(inject=False)
    with ScriptedServer([fan, *[echo] * jobs, text("all done")]) as server:
        agent = Agent(
            ModelClient(model_settings(server.url)),
            root,
            settings=settings,
            injector=Injector(settings, NO_RECALL),
        )
        result = await agent.run_turn("do six jobs")
        await agent.model.close()
    assert result.text == "all done" and result.stop == "end"
    assert server.most_in_flight == SUBAGENTS_AT_ONCE
    answers = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert answers == [f"did job {i}" for i in range(jobs)]  # in the calls' order
