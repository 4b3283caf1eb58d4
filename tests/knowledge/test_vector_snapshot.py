"""The semantic layer's vectors on disk: a one-shot layer maps them instead of reading every
file, ranks as the live layer does, and does not use them once the store moved on."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from knowledge.embed import frozen
from knowledge.embed.indexer import Stacked
from knowledge.embed.layer import SemanticLayer
from knowledge.embed.local import MODEL_ID
from knowledge.index.project import Project
from knowledge.recall.recaller import Recaller, make_recaller
from tests.conftest import indexed_project
from tests.knowledge.test_semantic_rerank import FILES

REQUESTS = ["make photos smaller for the gallery page", "log out idle users", "invoice html"]


def ranked(recaller: Recaller, request: str) -> list[tuple[str, float]]:
    return [(h.key, h.score) for h in recaller.recall(request).hits]


def same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    # The one-shot session skips graph optimisations: its request vector agrees to ~1e-5.
    return [k for k, _ in a] == [k for k, _ in b] and all(
        abs(x - y) < 1e-3 for (_, x), (_, y) in zip(a, b, strict=True)
    )


def test_a_one_shot_layer_maps_the_saved_vectors_and_ranks_as_the_live_one(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    project = indexed_project(root, FILES)
    live = SemanticLayer(project, credentials=None)
    assert live.embed_all() is not None
    expected = {
        r: ranked(Recaller(project.graph, root, reranker=live.reranker), r) for r in REQUESTS
    }
    live.stop()
    assert project.paths.vector_index.is_file()
    make_recaller(project, one_shot=True)  # and the scoring index's snapshot
    project.close()

    reopened = Project(root)
    layer = SemanticLayer(reopened, credentials=None, one_shot=True)
    layer.start_loading()
    assert layer.prepare() is not None  # waits for the loading thread: no deadline in play
    recaller = make_recaller(reopened, reranker=layer.reranker, one_shot=True)
    for request in REQUESTS:
        assert same(ranked(recaller, request), expected[request]), request
    layer.stop()
    assert reopened._graph is None, "neither index may load the whole graph"
    assert layer.stats.used == len(REQUESTS)
    reopened.close()


def test_vectors_saved_for_an_older_store_are_not_used_and_are_saved_again(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    project = indexed_project(root, FILES)
    live = SemanticLayer(project, credentials=None)
    live.embed_all()
    live.stop()
    (root / "billing/refund.py").write_text("def refund(order):\n    return order\n")
    project.update(["billing/refund.py"])
    project.save()
    generation = project.store.generation()
    path = project.paths.vector_index
    assert frozen.load(path, generation=generation, model_id=MODEL_ID, dim=384) is None

    layer = SemanticLayer(project, credentials=None, one_shot=True)
    assert layer.prepare() is not None  # loaded before the request: no deadline in play
    hits = Recaller(project.graph, root, reranker=layer.reranker).recall(REQUESTS[0]).hits
    layer.stop()
    assert "media/thumbs.py" in {h.path for h in hits}  # found by meaning only: vectors used
    saved = frozen.load(path, generation=generation, model_id=MODEL_ID, dim=384)
    assert saved is not None and len(saved) == len(FILES)  # the new file has no vector yet
    project.close()


def test_a_snapshot_of_another_model_or_a_damaged_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "vectors.idx"
    rows = np.eye(2, 4, dtype=np.float32)
    stacked = Stacked([(False, "a.py"), (True, "memory:1")], np.array([0, 1]), rows)
    assert frozen.save(path, stacked, generation=3, model_id="m")
    found = frozen.load(path, generation=3, model_id="m", dim=4)
    assert found is not None and found.matrix().groups == stacked.groups
    assert found.matrix().best(rows[0]) == ({"a.py": 1.0}, {"memory:1": 0.0})
    assert frozen.load(path, generation=4, model_id="m", dim=4) is None
    assert frozen.load(path, generation=3, model_id="other", dim=4) is None
    assert frozen.load(path, generation=3, model_id="m", dim=8) is None
    path.write_bytes(b"THEUSIDX" + b"\xff" * 40)
    assert frozen.load(path, generation=3, model_id="m", dim=4) is None


def test_a_refusing_disk_is_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    stacked = Stacked([], np.empty(0, dtype=np.int64), np.empty((0, 4), dtype=np.float32))
    assert not frozen.save(tmp_path / "file" / "x.idx", stacked, generation=1, model_id="m")


def test_stopping_cuts_the_background_pass_short_and_the_next_one_resumes(tmp_path: Path) -> None:
    import time

    from knowledge.embed.cache import cached

    files = {
        f"pkg/mod_{i:03d}.py": f"def handler_{i}(request):\n    return {i}\n" for i in range(100)
    }  # one chunk each: four batches of the background pass
    project = indexed_project(tmp_path / "repo", files)
    layer = SemanticLayer(project, credentials=None)
    layer.start_background()
    deadline = time.monotonic() + 120
    while not cached(project.paths.vectors, MODEL_ID)[1]:  # the first batch landed
        assert time.monotonic() < deadline, "the background pass embedded nothing"
        time.sleep(0.05)
    layer.stop()
    done_before = cached(project.paths.vectors, MODEL_ID)[1]
    assert 0 < done_before < len(files), "stop must cut the pass short"
    time.sleep(3.0)  # longer than a batch: nothing may still be computing
    assert cached(project.paths.vectors, MODEL_ID)[1] == done_before
    assert layer.stats.failed == 0  # a batch cut short is not a failure

    again = SemanticLayer(project, credentials=None)
    report = again.embed_all()
    again.stop()
    assert report is not None and report.embedded == len(files) - done_before
    project.close()
