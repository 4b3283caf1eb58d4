from __future__ import annotations

import multiprocessing

import pytest

from knowledge.core import workers


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_workers_read_the_data_their_pool_was_given(
    method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Forked, a worker reads it in the memory it shares with the parent; from a fork
    # server, it comes pickled with the worker's start: the same data either way.
    monkeypatch.setattr(workers, "_context", lambda preload: multiprocessing.get_context(method))
    data = {"nodes": [("k", i) for i in range(1000)], "files": ["a.py"]}
    with workers.pool(2, [], shared=data) as run:
        assert [run.submit(workers.shared).result() for _ in range(4)] == [data] * 4
    with workers.pool(2, []) as run:
        assert run.submit(workers.shared).result() is None
