"""The dashboard's run-history API: list, invalidate / restore / delete by id, the token only in
a header for a change, and 503 VECTOR_STORE_UNAVAILABLE when the store cannot be reached."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from knowledge.core.paths import ProjectPaths
from knowledge.core.settings import MemorySettings, current
from knowledge.run_history.layer import RunHistory
from knowledge.run_history.record import RunRecord
from knowledge.run_history.stores import open_store
from knowledge.vectors.port import Point
from tests.conftest import closed_port, configure
from tests.knowledge.test_dashboard import Client
from theus.dashboard.server import Dashboard

MODEL, DIM = "local:test-model", 4


def _closed_port() -> str:
    return f"http://127.0.0.1:{closed_port()}"


@pytest.fixture
def stored_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ProjectPaths, RunRecord]:
    """A run whose point the embedded store holds, as a finished run leaves it."""
    configure(monkeypatch, home=str(tmp_path / "home"))
    paths = ProjectPaths.for_root(tmp_path)
    record = RunRecord(
        id=str(uuid.uuid4()),
        request="add a flag",
        done="outcome: answered",
        project="path:x",
        session="s1",
        lineage="l1",
        model="m",
        embed_model=MODEL,
        dim=DIM,
        stored=True,
    )
    history = RunHistory.for_project(paths)
    history.journal.write(record)
    open_store(current(), MODEL, DIM).put(
        [Point(record.id, np.ones(DIM, np.float32), record.payload())]
    )
    return paths, record


def _serve(history: RunHistory) -> Iterator[Client]:
    dash = Dashboard(lambda: None, history=history).start()  # type: ignore[arg-type, return-value]
    try:
        yield Client(dash.port, dash.token)
    finally:
        dash.stop()


@pytest.fixture
def up(stored_run: tuple[ProjectPaths, RunRecord]) -> Iterator[Client]:
    yield from _serve(RunHistory.for_project(stored_run[0]))


@pytest.fixture
def down(stored_run: tuple[ProjectPaths, RunRecord]) -> Iterator[Client]:
    yield from _serve(
        RunHistory.for_project(stored_run[0], config=MemorySettings(qdrant_url=_closed_port()))
    )


def test_invalidate_restore_and_delete_by_id(
    up: Client, stored_run: tuple[ProjectPaths, RunRecord]
) -> None:
    _, record = stored_run
    (listed,) = up.json("/api/history")["runs"]
    assert listed["id"] == record.id and listed["invalid"] is False
    status, _, body = up.request(f"/api/history/{record.id[:8]}/invalidate", method="POST")
    assert status == 200 and json.loads(body)["invalid"] is True
    (point,) = open_store(current(), MODEL, DIM).get([record.id])
    assert point.payload["invalid"] is True  # the store changed, by id
    status, _, _ = up.request(f"/api/history/{record.id}/restore", method="POST")
    assert (
        status == 200
        and open_store(current(), MODEL, DIM).get([record.id])[0].payload["invalid"] is False
    )
    status, _, _ = up.request(f"/api/history/{record.id}", method="DELETE")
    assert status == 200
    assert open_store(current(), MODEL, DIM).get([record.id]) == []
    assert up.json("/api/history")["runs"] == []
    status, _, _ = up.request(f"/api/history/{record.id}", method="DELETE")
    assert status == 404


def test_a_change_needs_the_token_in_a_header(
    up: Client, stored_run: tuple[ProjectPaths, RunRecord]
) -> None:
    _, record = stored_run
    status, _, _ = up.request(
        f"/api/history/{record.id}/invalidate?token={up.token}", method="POST", token=None
    )
    assert status == 401
    status, _, _ = up.request(f"/api/history/{record.id}/frobnicate", method="POST")
    assert status == 405
    assert up.json("/api/history")["runs"][0]["invalid"] is False


def test_503_vector_store_unavailable_and_nothing_changes(
    down: Client, stored_run: tuple[ProjectPaths, RunRecord]
) -> None:
    _, record = stored_run
    for path, method in (
        (f"/api/history/{record.id}/invalidate", "POST"),
        (f"/api/history/{record.id}", "DELETE"),
    ):
        status, headers, body = down.request(path, method=method)
        assert status == 503, body
        assert json.loads(body)["code"] == "VECTOR_STORE_UNAVAILABLE"
        assert "retry-after" in headers
    (listed,) = down.json("/api/history")["runs"]
    assert listed == record.to_json()
