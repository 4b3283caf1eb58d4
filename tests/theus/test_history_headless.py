"""Few-shot history end to end: `theus -p` runs (real processes, the real local embedder, the
scripted model server) become examples for similar later runs; `theus history` changes them by
id, strictly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from knowledge.core.settings import current
from tests.conftest import closed_port, texts_of
from tests.scripted_server import ScriptedServer, text
from tests.theus.test_headless import index, system, theus

ASKED = "add a --verbose flag to the cart's export command"
LIKE_IT = "add a --quiet flag to the cart's export command"
# The local embedder on, and a time box no loaded machine misses (the model loads per process).
EMBEDDING = {"THEUS_NO_EMBEDDINGS": "", "THEUS_RECALL_DEADLINE_MS": "30000"}


def _runs(repo: Path) -> list[dict[str, Any]]:
    done = theus(["history", "--json"], None, repo)
    assert done.returncode == 0, done.stderr
    runs: list[dict[str, Any]] = json.loads(done.stdout)
    return runs


def _reminder(server: ScriptedServer, request: int) -> str:
    return texts_of(server.requests[request]["messages"][1])[0]


def _examples(server: ScriptedServer, request: int) -> str:
    """The reminder's few-shot part (the episodes of earlier runs come before it)."""
    return _reminder(server, request).partition("Similar past runs in this project")[2]


def test_a_finished_run_is_an_example_for_a_similar_later_one_and_never_for_itself(
    server: ScriptedServer, repo: Path
) -> None:
    index(repo)
    assert theus(["history", "settings", "--threshold", "0.6"], None, repo).returncode == 0
    server.add(text("Added --quiet to the export command."))
    assert theus(["-p", LIKE_IT], server, repo, **EMBEDDING).returncode == 0
    (first,) = _runs(repo)
    assert first["request"] == LIKE_IT and first["stored"] and not first["invalid"]
    assert "Added --quiet" in first["done"]

    server.add(text("Added --verbose."))
    done = theus(["-p", ASKED, "--output-format", "stream-json"], server, repo, **EMBEDDING)
    assert done.returncode == 0, done.stderr
    (injection,) = system(done.stdout, "injection")
    assert injection["examples"] == 1
    reminder = _reminder(server, 1)
    assert "Similar past runs in this project" in reminder and LIKE_IT in reminder

    # Asked again: its own earlier run is never its example; the similar one still is.
    server.add(text("Already there."))
    assert theus(["-p", ASKED], server, repo, **EMBEDDING).returncode == 0
    examples = _examples(server, 2)
    assert LIKE_IT in examples and "--verbose" not in examples

    # Invalidated by id: no longer an example; restored: again.
    assert theus(["history", "invalidate", first["id"][:8]], None, repo).returncode == 0
    server.add(text("ok"))
    assert theus(["-p", ASKED + " please"], server, repo, **EMBEDDING).returncode == 0
    assert LIKE_IT not in _examples(server, 3)
    assert theus(["history", "restore", first["id"]], None, repo).returncode == 0
    server.add(text("ok"))
    assert (
        theus(["-p", LIKE_IT.replace("quiet", "silent")], server, repo, **EMBEDDING).returncode == 0
    )
    examples = _examples(server, 4)
    assert LIKE_IT in examples
    assert examples.count(ASKED + "\n") == 1  # asked twice, quoted once


def test_consistency_operations_refuse_with_exit_3_when_the_store_is_down_else_act_by_id(
    server: ScriptedServer, repo: Path
) -> None:
    server.add(text("Added --quiet."))
    assert theus(["-p", LIKE_IT], server, repo, **EMBEDDING).returncode == 0
    (run,) = _runs(repo)
    assert run["stored"]
    # The run's point lives in the embedded store; a record naming a server that is down
    # stands for a team's store that cannot be reached.
    down = f"http://127.0.0.1:{closed_port()}"
    for action in ("invalidate", "delete"):
        done = theus(["history", action, run["id"]], None, repo, THEUS_QDRANT_URL=down)
        assert done.returncode == 3, done.stderr
        assert "nothing was changed" in done.stderr and len(done.stderr.splitlines()) == 1
    done = theus(["sessions", "--delete", run["session"]], None, repo, THEUS_QDRANT_URL=down)
    assert done.returncode == 3 and "nothing was deleted" in done.stderr
    assert _runs(repo) == [run]
    assert [s["id"] for s in json.loads(theus(["sessions", "--json"], None, repo).stdout)] == [
        run["session"]
    ]
    # A run still succeeds with that store down: no examples, the record kept locally.
    server.add(text("Added --verbose."))
    done = theus(
        ["-p", ASKED, "--output-format", "json"], server, repo, THEUS_QDRANT_URL=down, **EMBEDDING
    )
    assert done.returncode == 0 and json.loads(done.stdout)["subtype"] == "success"
    assert {r["request"]: r["stored"] for r in _runs(repo)} == {LIKE_IT: True, ASKED: False}
    # With the store back, deleting the session deletes its run's point, by id.
    from knowledge.run_history.stores import open_store

    done = theus(["sessions", "--delete", run["session"][:15]], None, repo)
    assert done.returncode == 0, done.stderr
    assert "and 1 run of it" in done.stdout
    assert [r["request"] for r in _runs(repo)] == [ASKED]
    assert open_store(current(), run["embed_model"], run["dim"]).get([run["id"]]) == []


def test_the_kill_switch_records_nothing(server: ScriptedServer, repo: Path) -> None:
    server.add(text("ok"))
    assert theus(["-p", LIKE_IT], server, repo, THEUS_NO_HISTORY="1").returncode == 0
    assert _runs(repo) == []
