"""The one memory object: every layer opened by one function, each failing open, each with
its kill switch; the recaller it keeps; the MEMORY.md bridge it runs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from knowledge.index.project import Project
from knowledge.memory import Memory, open_memory
from tests.conftest import configure, present, write_tree


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_tree(
        tmp_path / "repo",
        {
            "cart.py": "class Cart:\n    def total(self, items):\n        return sum(items)\n",
            "pricing.py": "def price_of(item):\n    return item['price']\n",
        },
    )


def test_open_memory_fails_open(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import knowledge.embed.layer
    import knowledge.episodes
    import knowledge.memdir
    import knowledge.watch

    def boom(*args: object, **kw: object) -> None:
        raise RuntimeError("layer broken")

    monkeypatch.setattr(knowledge.watch, "maybe_start", boom)
    monkeypatch.setattr(knowledge.episodes, "EpisodeStore", boom)
    monkeypatch.setattr(knowledge.memdir, "sync_if_changed", boom)
    monkeypatch.setattr(knowledge.embed.layer, "SemanticLayer", boom)
    memory = open_memory(repo)
    assert memory.project is not None and memory.watcher is None and memory.episodes is None
    assert memory.semantic is None and not memory.semantic_on and memory.bridge is None
    assert memory.record("manual", "kept?", None) is None  # the port is a no-op without them
    memory.close()
    monkeypatch.setattr("knowledge.index.project.Project", boom)
    memory = open_memory(repo)
    assert memory.project is None
    with pytest.raises(RuntimeError):
        memory.recaller()


def test_open_memory_honours_kill_switches(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(monkeypatch, no_watch=True, no_episodes=True, no_embeddings=True, no_memdir=True)
    memory = open_memory(repo)
    assert memory.watcher is None and memory.episodes is None and memory.semantic is None
    assert memory.bridge is None and memory.project is not None
    memory.close()


def test_a_one_shot_memory_recalls_from_the_snapshot_until_the_graph_moves(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from knowledge.recall.recaller import make_recaller

    configure(monkeypatch, no_embeddings=True)
    first = open_memory(repo, one_shot=True, index_if_missing=True)
    first.close()
    first = open_memory(repo, one_shot=True)
    assert make_recaller(present(first.project), one_shot=True).frozen  # from the store, saved
    first.close()
    memory = open_memory(repo, one_shot=True)  # the real watcher runs
    assert memory.recaller().frozen and memory.recaller() is memory.recaller()  # kept
    (repo / "refunds.py").write_text("def refund_order(order):\n    return order\n")
    deadline = time.monotonic() + 20
    while memory.recaller().frozen and time.monotonic() < deadline:
        time.sleep(0.05)
    live = present(memory.recaller())
    assert not live.frozen and live.graph is present(memory.project).graph  # the watcher's graph
    assert any(h.path == "refunds.py" for h in live.recall("refund order").hits)
    memory.close()


def test_a_hand_edit_to_memory_md_reaches_a_one_shot_recall_from_a_saved_snapshot(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, no_embeddings=True)
    configure(monkeypatch, no_watch=True)
    first = open_memory(repo, one_shot=True, index_if_missing=True)
    first.recaller()  # saves the snapshot
    first.close()
    memory_md = present(first.project).paths.memory / "MEMORY.md"
    memory_md.parent.mkdir(parents=True, exist_ok=True)
    memory_md.write_text("- refunds go through the ledger service\n")
    memory = open_memory(repo, one_shot=True)
    try:
        recaller = memory.recaller()
        assert recaller.frozen  # the snapshot predates the memory: it caught up in place
        hits = recaller.recall("how are refunds handled by the ledger").hits
        assert any(h.kind == "memory" and "ledger" in h.name for h in hits)
    finally:
        memory.close()


def test_the_app_memory_opens_later_and_calls_back_on_a_memory_md_edit(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    configure(monkeypatch, no_embeddings=True)
    memory = Memory(repo, index_if_missing=True)
    assert not memory.is_open and memory.project is None  # nothing opened yet
    synced = threading.Event()
    memory.on_memories = synced.set
    try:
        memory.open()
        assert memory.indexed_now and memory.bridge is not None
        assert memory.bridge.ready.wait(20)  # watching (a write before that is not seen)
        memory_md = project_of(memory).paths.memory / "MEMORY.md"
        memory_md.write_text("- deploys happen on fridays\n")
        assert synced.wait(20), "the bridge must sync a hand edit while the app runs"
        graph = project_of(memory).graph
        assert any("fridays" in n.label for n in graph.nodes("memory"))
        # Status reads the live layers this memory holds, not what another process sees.
        from knowledge.memory.status import gather

        assert memory.watcher is not None and memory.watcher.wait_ready(20)
        live = gather(memory.project, memory)  # type: ignore[arg-type]
        assert live["watcher"]["running"] and live["watcher"]["watched_dirs"] >= 1
        assert "watched_dirs" not in gather(memory.project)["watcher"]  # type: ignore[arg-type]
    finally:
        memory.close()


def test_a_one_shot_memory_syncs_memory_md_only_when_something_moved(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync loads the whole graph (a second on a large project): a one-shot run pays it
    only when MEMORY.md or the stored memories changed since the last sync."""
    configure(monkeypatch, no_embeddings=True)
    configure(monkeypatch, no_watch=True)
    first = open_memory(repo, one_shot=True, index_if_missing=True)
    assert first.project is not None
    memory_md = present(first.project).paths.memory / "MEMORY.md"
    first.close()
    quiet = open_memory(repo, one_shot=True)
    assert quiet.project is not None and not quiet.project.graph_loaded
    quiet.close()
    memory_md.parent.mkdir(parents=True, exist_ok=True)
    memory_md.write_text("- invoices are numbered per year\n")
    edited = open_memory(repo, one_shot=True)
    assert edited.project is not None and edited.project.graph_loaded  # synced
    assert any("per year" in n.label for n in edited.project.graph.nodes("memory"))
    edited.close()
    again = open_memory(repo, one_shot=True)
    assert again.project is not None and not again.project.graph_loaded
    again.close()


def project_of(memory: Memory) -> Project:
    """The memory's project, once it is open (past any narrowing of `memory.project`)."""
    return present(memory.project)


def test_settle_gives_the_first_recall_what_a_cold_start_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, no_embeddings=True, no_watch=True)
    body = "".join(f"    step_{n} = compute(step_{n - 1}, weight={n})\n" for n in range(1, 40))
    files = {
        f"pkg/mod{i}.py": f"def handler_{i}(step_0):\n{body}    return 'payload {i}'\n"
        for i in range(3000)
    }  # about 6 MB of contents: far more than a recall reads on its way (40 ms)
    root = write_tree(tmp_path / "repo", files)
    indexed = Project(root)
    indexed.index()
    indexed.close()
    cold = Memory(root, watch=False).open()
    try:  # without it the first answer ranks without the files' contents
        assert "file contents not fully read yet" in cold.recaller().recall("payload 1234").notes
    finally:
        cold.close()
    settled = Memory(root, watch=False).open()
    try:
        settled.settle(60.0)
        recall = settled.recaller().recall("payload 1234")
        assert recall.notes == [] and recall.files[0] == "pkg/mod1234.py"
        warmed: list[float | None] = []
        monkeypatch.setattr(
            type(settled.recaller()), "warm", lambda _self, budget_s: warmed.append(budget_s)
        )
        settled.settle(60.0)  # all in place: no second warm-up (it asks git for HEAD)
        assert warmed == []
    finally:
        settled.close()
