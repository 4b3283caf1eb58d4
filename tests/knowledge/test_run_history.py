"""The run history (few-shot examples of past runs) on the embedded store, with the real local
embedder: the three unconditional rules, threshold and limit, strict operations by id, and
best effort when the store is down."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from knowledge.core.runs import RunSummary
from knowledge.core.settings import MemorySettings, current
from knowledge.embed.local import LocalEmbedder
from knowledge.run_history import settings as history_settings
from knowledge.run_history.journal import Journal, NoSuchRun
from knowledge.run_history.layer import RunHistory
from knowledge.run_history.record import RunRecord, lineage
from knowledge.run_history.settings import HistorySettings
from knowledge.run_history.stores import normal_remote, open_store
from knowledge.vectors.port import Point, StoreMismatch, VectorStoreUnavailable
from tests.conftest import closed_port, configure

PROJECT = "git:example.org/team/app"
ASKED = "add a --verbose flag to the export command"
LIKE_IT = "add a --quiet flag to the export command"
UNLIKE = "the login page shows a blank screen on Safari"


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    loaded = LocalEmbedder(threads=1)
    loaded.load()
    return loaded


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    configure(monkeypatch, home=str(tmp_path / "theus-home"))
    return tmp_path / "project-data"


def _history(
    home: Path,
    embedder: LocalEmbedder | None,
    project: str = PROJECT,
    config: MemorySettings | None = None,
) -> RunHistory:
    return RunHistory(
        Journal(home / "runs"), project, home, lambda _deadline: embedder, config or current()
    )


def _run(request: str, files: tuple[str, ...] = ("src/export.py",)) -> RunSummary:
    return RunSummary(
        requests=(request,),
        answer=f"Done: {request}",
        outcome="answered",
        files_changed=files,
        commands=("pytest -q tests/test_export.py",),
    )


def _remember(history: RunHistory, request: str, **overrides: object) -> RunRecord:
    """A finished run stored as the agent stores one: looked up first (which embeds the
    request), then recorded."""
    history.examples(request, time.perf_counter() + 5)
    record = RunRecord.of_run(
        _run(request), request=request, project=history.project, session="s1", model="m"
    ).but(**overrides)
    return history.record(record)


def _requests(history: RunHistory, request: str) -> list[str]:
    return [e.request for e in history.examples(request, time.perf_counter() + 5)]


def test_a_similar_finished_run_becomes_an_example_with_what_it_did(
    home: Path, embedder: LocalEmbedder
) -> None:
    history = _history(home, embedder)
    history_settings.save(home, HistorySettings(threshold=0.5))
    stored = _remember(history, LIKE_IT)
    _remember(history, UNLIKE)
    assert stored.stored and stored.embed_model == embedder.model_id
    (example,) = history.examples(ASKED, time.perf_counter() + 5)
    assert example.request == LIKE_IT and example.run_id == stored.id
    assert "files changed: src/export.py" in example.done
    assert "pytest -q tests/test_export.py" in example.done
    assert example.similarity >= 0.5
    assert history.stats.used == 1


def test_examples_found_past_the_deadline_are_late_not_used(
    home: Path, embedder: LocalEmbedder
) -> None:
    history = _history(home, embedder)
    history_settings.save(home, HistorySettings(threshold=0.5))
    _remember(history, LIKE_IT)
    # The block this lookup serves is already built: what it finds is not shown.
    assert history.examples(ASKED, time.perf_counter()) == []
    assert (history.stats.used, history.stats.late) == (0, 1)
    assert _requests(history, ASKED) == [LIKE_IT] and history.stats.used == 1


def test_never_another_projects_runs(home: Path, embedder: LocalEmbedder) -> None:
    history_settings.save(home, HistorySettings(threshold=0.5))
    other = _history(home, embedder, project="git:example.org/team/other")
    _remember(other, LIKE_IT)
    mine = _history(home, embedder)
    assert _requests(mine, ASKED) == []
    assert _requests(other, ASKED) == [LIKE_IT]  # the point is there, for its own project


def test_never_a_run_marked_invalid_or_not_marked_at_all(
    home: Path, embedder: LocalEmbedder
) -> None:
    history_settings.save(home, HistorySettings(threshold=0.5))
    history = _history(home, embedder)
    flagged = _remember(history, LIKE_IT)
    assert history.set_invalid(flagged.id, True).invalid
    assert _requests(history, ASKED) == []
    # An older point whose validity is unknown (no flag), and one whose flag is 0, not false.
    store = open_store(current(), embedder.model_id, embedder.dim)
    vector = embedder.embed([LIKE_IT])[0]
    for payload_flag in ({}, {"invalid": 0}):
        payload: dict[str, Any] = {
            "project": PROJECT,
            "request": LIKE_IT,
            "done": "x",
            "lineage": "old",
            **payload_flag,
        }
        store.put([Point(str(uuid.uuid4()), vector, payload)])
    assert _requests(history, ASKED) == []
    history.set_invalid(flagged.id, False)
    assert _requests(history, ASKED) == [LIKE_IT]


def test_never_the_same_requests_earlier_runs(home: Path, embedder: LocalEmbedder) -> None:
    history_settings.save(home, HistorySettings(threshold=0.5))
    history = _history(home, embedder)
    _remember(history, ASKED)
    _remember(history, LIKE_IT)
    # Asked again, spaced and cased differently: the same lineage.
    again = "  Add a --verbose flag   to the EXPORT command "
    assert lineage(again) == lineage(ASKED)
    assert _requests(history, again) == [LIKE_IT]


def test_the_threshold_is_applied_and_the_limit_kept(home: Path, embedder: LocalEmbedder) -> None:
    history = _history(home, embedder)
    history_settings.save(home, HistorySettings(limit=2, threshold=0.2))
    for flag in ("--quiet", "--color", "--json", "--dry-run"):
        _remember(history, f"add a {flag} flag to the export command")
    _remember(history, UNLIKE)
    found = history.examples(ASKED, time.perf_counter() + 5)
    assert len(found) == 2 and all("export" in e.request for e in found)
    assert found[0].similarity >= found[1].similarity
    history_settings.save(home, HistorySettings(threshold=0.999))
    assert _requests(history, ASKED) == []
    history_settings.save(home, HistorySettings(enabled=False, threshold=0.2))
    assert _requests(history, ASKED) == []


def test_delete_and_delete_a_session_remove_the_points_by_id(
    home: Path, embedder: LocalEmbedder
) -> None:
    history_settings.save(home, HistorySettings(threshold=0.5))
    history = _history(home, embedder)
    first = _remember(history, LIKE_IT)
    second = _remember(history, "add a --json flag to the export command", session="s2")
    store = open_store(current(), embedder.model_id, embedder.dim)
    assert store.count() == 2
    history.delete(first.id[:8])  # a unique prefix is enough
    assert [p.id for p in store.get([first.id, second.id])] == [second.id]
    with pytest.raises(NoSuchRun):
        history.journal.find(first.id)
    assert [r.id for r in history.delete_session("s2")] == [second.id]
    assert store.count() == 0 and history.journal.records() == []


def _closed_port() -> str:
    return f"http://127.0.0.1:{closed_port()}"


def test_a_store_that_is_down_costs_the_examples_never_the_run(
    home: Path, embedder: LocalEmbedder
) -> None:
    down = MemorySettings(qdrant_url=_closed_port())
    history = _history(home, embedder, config=down)
    assert history.examples(ASKED, time.perf_counter() + 5) == []
    assert history.stats.failed == 1 and "VectorStoreUnavailable" in history.stats.last_error
    kept = _remember(history, LIKE_IT)
    assert not kept.stored and history.journal.find(kept.id) == kept
    assert history.stats.store_failed == 1


def test_strict_operations_refuse_when_the_store_is_down_and_change_nothing(
    home: Path, embedder: LocalEmbedder
) -> None:
    history_settings.save(home, HistorySettings(threshold=0.5))
    up = _history(home, embedder)
    stored = _remember(up, LIKE_IT)
    assert stored.stored
    # The same record, now held by a server that cannot be reached.
    down = _history(home, embedder, config=MemorySettings(qdrant_url=_closed_port()))
    for change in (
        lambda: down.set_invalid(stored.id, True),
        lambda: down.delete(stored.id),
        lambda: down.delete_session("s1"),
    ):
        with pytest.raises(VectorStoreUnavailable):
            change()
    assert down.journal.find(stored.id) == stored


def test_a_run_recorded_without_an_embedding_is_stored_by_a_later_run(
    home: Path, embedder: LocalEmbedder
) -> None:
    history_settings.save(home, HistorySettings(threshold=0.5))
    loading = _history(home, None)  # the embedder was still loading all run long
    record = RunRecord.of_run(
        _run(LIKE_IT), request=LIKE_IT, project=PROJECT, session="s1", model="m"
    )
    assert not loading.record(record).stored
    later = _history(home, embedder)
    assert _requests(later, ASKED) == []
    assert later.backfill(time.perf_counter() + 5) == 1
    assert later.journal.find(record.id).stored
    assert _requests(later, ASKED) == [LIKE_IT]


def test_a_configured_dimension_that_is_not_the_embedders_refuses_to_open(
    home: Path, embedder: LocalEmbedder
) -> None:
    with pytest.raises(StoreMismatch, match="THEUS_QDRANT_DIM=768"):
        open_store(MemorySettings(qdrant_dim=768), embedder.model_id, embedder.dim)
    history = _history(home, embedder, config=MemorySettings(qdrant_dim=768))
    assert history.examples(ASKED, time.perf_counter() + 5) == []
    assert "StoreMismatch" in history.stats.last_error


def test_secrets_are_redacted_before_anything_is_stored(
    home: Path, embedder: LocalEmbedder
) -> None:
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
    record = _remember(_history(home, embedder), f"use the key {secret} to call the API")
    assert secret not in record.request
    assert secret not in (home / "runs" / f"{record.id}.json").read_text()
    assert not np.isnan(embedder.embed([record.request])[0]).any()


def test_the_project_is_named_by_its_remote_however_it_is_written() -> None:
    forms = (
        "git@github.com:Team/App.git",
        "https://github.com/Team/App",
        "ssh://git@github.com/Team/App.git",
        "https://user@GitHub.com/Team/App.git/",
    )
    assert {normal_remote(f) for f in forms} == {"github.com/Team/App"}


def test_status_counts_what_failed_in_another_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: LocalEmbedder
) -> None:
    from knowledge.core import state_writer
    from knowledge.core.paths import ProjectPaths
    from knowledge.run_history.layer import status_section

    configure(monkeypatch, home=str(tmp_path / "home"))
    paths = ProjectPaths.for_root(tmp_path)
    down = MemorySettings(qdrant_url=_closed_port())
    history = RunHistory.for_project(paths, lambda _deadline: embedder, config=down)
    assert history.examples(ASKED, time.perf_counter() + 5) == []
    _remember(history, LIKE_IT)
    state_writer.flush()  # counters are written off the request path; a process flushes at exit
    shown = status_section(paths, config=down)
    assert shown["store"].startswith("qdrant http://127.0.0.1:")
    assert (shown["failed"], shown["store_failed"], shown["runs"], shown["stored"]) == (2, 1, 1, 0)
    assert "VectorStoreUnavailable" in shown["last_error"]
    assert status_section(paths, config=MemorySettings(no_history=True)) == {
        "state": "off: THEUS_NO_HISTORY=1"
    }
