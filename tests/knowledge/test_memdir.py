"""The memory directory and its bridge to the graph: real files, a real project and store."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge import memdir
from knowledge.core import frontmatter, keys
from knowledge.index.project import Project
from knowledge.memdir import Caps, MemoryDir, SyncReport
from tests.conftest import configure, indexed_project, present, write_tree


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    proj = indexed_project(
        tmp_path / "repo",
        {
            "src/cart.py": "class Cart:\n    def total(self):\n        return 0\n",
            "src/login.py": "def redirect_after_login(user):\n    return '/home'\n",
        },
    )
    yield proj
    proj.close()


def index_file(project: Project) -> Path:
    return project.paths.memory / "MEMORY.md"


def write_index(project: Project, text: str) -> None:
    project.paths.memory.mkdir(parents=True, exist_ok=True)
    index_file(project).write_text(text, encoding="utf-8")


def memory_keys(project: Project) -> set[str]:
    return {n.key for n in project.graph.nodes("memory")}


def test_entries_become_memory_nodes_with_edges_to_what_they_mention(project: Project) -> None:
    write_index(
        project,
        "# Memory\n\n- use pnpm, not npm\n"
        "- the total lives in `src/cart.py#Cart.total`; see `redirect_after_login`\n"
        "- bug at `src/login.py:2`, called as `redirect_after_login(user)`\n",
    )
    report = memdir.sync(project)
    assert report.entries == 3 and report.warnings == []
    pnpm = project.graph.get(keys.memory_key("use pnpm, not npm"))
    assert pnpm is not None and pnpm.kind == "memory" and pnpm.source == "memdir"
    assert pnpm.data["text"] == "use pnpm, not npm"
    key = keys.memory_key("the total lives in `src/cart.py#Cart.total`; see `redirect_after_login`")
    targets = {e.dst for e in project.graph.out_edges(key, "derived-from")}
    assert targets == {
        keys.symbol_key("src/cart.py", "Cart.total"),
        keys.symbol_key("src/login.py", "redirect_after_login"),
    }
    key = keys.memory_key("bug at `src/login.py:2`, called as `redirect_after_login(user)`")
    assert {e.dst for e in project.graph.out_edges(key, "derived-from")} == {
        keys.file_key("src/login.py"),
        keys.symbol_key("src/login.py", "redirect_after_login"),
    }


def test_ten_syncs_leave_the_same_nodes_and_nothing_to_save(project: Project) -> None:
    write_index(project, "".join(f"- memory number {i} about `src/cart.py`\n" for i in range(30)))
    memdir.add_memory(project, "The login redirect goes to /home, see `src/login.py`")
    first = memdir.sync(project)
    counts = project.counts()
    version = project.graph.version
    for _ in range(10):
        report = memdir.sync(project)
        assert not report.changed
        assert project.counts() == counts
    assert project.graph.version == version and not project.unsaved
    assert first.entries == 31 and counts["memory"] == 31


def test_hand_edits_add_edit_and_remove_are_followed(project: Project) -> None:
    write_index(project, "- keep answers short\n")
    memdir.sync(project)
    write_index(project, "- keep answers short\n- staging deploys need VPN\n")
    assert memdir.sync(project).added == [keys.memory_key("staging deploys need VPN")]
    write_index(project, "- keep answers short\n- staging deploys need the office VPN\n")
    report = memdir.sync(project)
    assert report.added == [keys.memory_key("staging deploys need the office VPN")]
    assert report.removed == [keys.memory_key("staging deploys need VPN")]
    write_index(project, "- staging deploys need the office VPN\n")
    assert memdir.sync(project).removed == [keys.memory_key("keep answers short")]
    assert memory_keys(project) == {keys.memory_key("staging deploys need the office VPN")}
    # What the bridge did survives a restart: the store holds it.
    project.close()
    again = Project(project.root)
    assert {n.key for n in again.graph.nodes("memory")} == memory_keys(project)
    again.close()


def test_normalised_text_is_one_memory(project: Project) -> None:
    write_index(project, "- Use   PNPM\n- use pnpm\n")
    report = memdir.sync(project)
    assert report.entries == 1
    assert report.warnings == ["MEMORY.md:2: same memory as line 1; ignored"]


def test_memory_from_the_graph_is_a_topic_file_and_pointer_and_never_echoes(
    project: Project,
) -> None:
    write_index(project, "- use pnpm\n")
    change = memdir.add_memory(project, "Login redirects go through `src/login.py`.\nAsk Ana.")
    assert change.created and change.key == keys.memory_key(
        "Login redirects go through `src/login.py`.\nAsk Ana."
    )
    topic = project.paths.memory / change.topic
    text = topic.read_text(encoding="utf-8")
    assert "origin: graph" in text and f"key: {change.key}" in text
    assert text.rstrip().endswith("Ask Ana.")
    lines = index_file(project).read_text(encoding="utf-8").splitlines()
    assert lines[0] == "- use pnpm"
    assert lines[1].startswith("- [Login redirects go through `src/login.py`.](")
    assert f"]({change.topic})" in lines[1]
    for _ in range(3):
        assert not memdir.sync(project).changed
    nodes = list(project.graph.nodes("memory"))
    assert len(nodes) == 2
    node = present(project.graph.get(change.key))
    assert node.source == "graph" and node.data["topic"] == change.topic
    assert keys.file_key("src/login.py") in {e.dst for e in project.graph.out_edges(change.key)}
    # Saving the same memory again changes nothing.
    again = memdir.add_memory(project, "Login redirects go through `src/login.py`.\nAsk Ana.")
    assert not again.created and len(index_file(project).read_text().splitlines()) == 2


def test_person_deleting_the_pointer_removes_the_graph_memory(project: Project) -> None:
    change = memdir.add_memory(project, "a memory saved by the agent")
    write_index(project, "")
    assert memdir.sync(project).removed == [change.key]
    assert project.graph.get(change.key) is None


def test_edit_and_delete_apis(project: Project) -> None:
    write_index(project, "- first version\n")
    old = keys.memory_key("first version")
    edited = memdir.edit_memory(project, old, "second version")
    assert edited.key == old  # the key stays: it is how people and scripts name the memory
    assert index_file(project).read_text() == f"- [second version]({edited.topic})\n"
    assert "key: " + old in (project.paths.memory / edited.topic).read_text()
    assert memory_keys(project) == {old}
    assert memdir.edit_memory(project, old, "third version").key == old
    assert present(project.graph.get(old)).data["text"] == "third version"

    saved = memdir.add_memory(project, "agent memory")
    changed = memdir.edit_memory(project, saved.key, "agent memory, corrected")
    assert changed.topic == saved.topic
    assert "key: " + changed.key in (project.paths.memory / saved.topic).read_text()
    assert memory_keys(project) == {edited.key, changed.key}

    memdir.delete_memory(project, changed.key)
    assert not (project.paths.memory / saved.topic).exists()
    memdir.delete_memory(project, edited.key)
    assert index_file(project).read_text().strip() == ""
    assert memory_keys(project) == set()
    with pytest.raises(memdir.MemoryNotFound):
        memdir.delete_memory(project, edited.key)


def test_a_persons_topic_file_is_read_and_kept_on_delete(project: Project) -> None:
    write_tree(
        project.paths.memory,
        {
            "deploys.md": "---\nname: Deploys\ndescription: how we ship\n---\n\nStaging first.\n",
        },
    )
    write_index(project, "- [Deploys](deploys.md) — how we ship\n")
    memdir.sync(project)
    key = keys.memory_key("[Deploys](deploys.md) — how we ship")
    node = present(project.graph.get(key))
    assert node.source == "memdir" and node.label == "Deploys"
    assert node.data["text"] == "Staging first." and node.data["topic"] == "deploys.md"
    change = memdir.delete_memory(project, key)
    assert change.warnings[0] == "topic file deploys.md kept"
    assert (project.paths.memory / "deploys.md").exists()
    assert project.graph.get(key) is None


def test_over_the_cap_warns_and_reports_what_is_not_loaded(project: Project) -> None:
    write_index(project, "".join(f"- memory {i}\n" for i in range(1, 251)))
    report = memdir.sync(project)
    assert report.entries == 200 and report.not_loaded == 50
    assert "not loaded" in report.warnings[0] and "line 201" in report.warnings[0]
    assert project.graph.get(keys.memory_key("memory 200")) is not None
    assert project.graph.get(keys.memory_key("memory 201")) is None
    index = MemoryDir(project.paths.memory).read()
    assert [e.line for e in index.not_loaded][:2] == [201, 202]
    status = memdir.status_section(project)
    assert status["not_loaded"] == 50 and "not loaded" in status["warnings"][0]
    assert index_file(project).read_text().count("\n") == 250  # nothing truncated


def test_byte_cap(project: Project) -> None:
    long = "x" * 290
    write_index(project, "".join(f"- {i:03d} {long}\n" for i in range(100)))
    report = memdir.sync(project)
    assert report.entries == 25 * 1024 // 297 and report.entries + report.not_loaded == 100
    assert "25 KB" in report.warnings[0]


def test_full_index_keeps_new_memories_in_the_graph_until_there_is_room(
    project: Project,
) -> None:
    caps = Caps(lines=3)
    write_index(project, "- one\n- two\n- three\n")
    change = memdir.add_memory(project, "four", caps)
    assert any("kept in the graph only" in w for w in change.warnings)
    assert present(project.graph.get(change.key)).source == "graph"
    assert index_file(project).read_text() == "- one\n- two\n- three\n"
    assert memdir.sync(project, caps).removed == []  # not exported yet is not deleted
    write_index(project, "- one\n")
    report = memdir.sync(project, caps)
    assert report.exported == [change.key]
    assert present(project.graph.get(change.key)).data["topic"]
    assert len(index_file(project).read_text().splitlines()) == 2


def test_malformed_lines_and_frontmatter_are_reported_with_line_numbers_and_skipped(
    project: Project,
) -> None:
    write_tree(
        project.paths.memory,
        {
            "bad.md": "---\nname: Bad\norigin graph\ndescription: x\n",
            "good.md": "---\nname: Good\n---\nGood body.\n",
        },
    )
    write_index(
        project,
        "\n".join(
            [
                "- fine entry",
                "just prose, no bullet",
                "-",
                "- [Broken link](bad",
                "- [Missing](missing.md) — gone",
                "- [Bad](bad.md) — malformed frontmatter",
                "- [Escape](../../graph.db) — outside",
                "- [Good](good.md)",
                "- [docs](https://example.com) — a web link is a plain memory",
            ]
        )
        + "\n",
    )
    report = memdir.sync(project)
    assert report.entries == 3
    assert report.warnings == [
        "MEMORY.md:2: not an entry (expected `- memory` or `- [Title](topic.md) — hook`); skipped",
        "MEMORY.md:3: not an entry (expected `- memory` or `- [Title](topic.md) — hook`); skipped",
        "MEMORY.md:4: broken link in entry '[Broken link](bad'; skipped",
        "MEMORY.md:5: topic file missing.md not found; skipped",
        "bad.md:3: frontmatter line is not `key: value`: 'origin graph'",
        "bad.md:1: frontmatter opened here is never closed",
        "MEMORY.md:6: topic file bad.md is malformed; skipped",
        "MEMORY.md:7: topic '../../graph.db' must be a .md file in the memory folder",
    ]
    labels = {n.label for n in project.graph.nodes("memory")}
    assert labels == {
        "fine entry",
        "Good",
        "[docs](https://example.com) — a web link is a plain memory",
    }


def test_invalid_utf8_in_memory_md_is_not_fatal(project: Project) -> None:
    project.paths.memory.mkdir(parents=True)
    index_file(project).write_bytes(b"- caf\xe9 ok\n- fine\n")
    assert memdir.sync(project).entries == 2


def test_kill_switch_turns_the_bridge_off(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_index(project, "- from the file\n")
    configure(monkeypatch, no_memdir=True)
    report = memdir.sync(project)
    assert not report.enabled and "THEUS_NO_MEMDIR" in report.warnings[0]
    assert memory_keys(project) == set()
    change = memdir.add_memory(project, "remember me")
    assert "kept in the graph only" in change.warnings[0]
    assert index_file(project).read_text() == "- from the file\n"
    assert sorted(p.name for p in project.paths.memory.iterdir()) == ["MEMORY.md"]
    assert memdir.status_section(project)["enabled"] is False
    assert not memdir.MemdirWatcher(project).start()
    configure(monkeypatch, no_memdir=False)
    report = memdir.sync(project)
    assert report.exported == [change.key]
    assert memory_keys(project) == {change.key, keys.memory_key("from the file")}


def test_watcher_follows_a_hand_edit(project: Project) -> None:
    write_index(project, "- before\n")
    memdir.sync(project)
    seen: list[SyncReport] = []
    changed = threading.Event()

    def on_sync(report: SyncReport) -> None:
        seen.append(report)
        if report.added:
            changed.set()

    watcher = memdir.MemdirWatcher(project, on_sync)
    assert watcher.start()
    try:
        assert watcher.ready.wait(10)
        write_index(project, "- before\n- written by hand while the app runs\n")
        assert changed.wait(10)
    finally:
        watcher.stop()
    assert project.graph.get(keys.memory_key("written by hand while the app runs")) is not None


def test_orphaned_temp_files_are_cleaned(project: Project) -> None:
    project.paths.memory.mkdir(parents=True)
    orphan = project.paths.memory / ".MEMORY.md.999999999.abc123.tmp"
    orphan.write_text("half a write")
    memdir.sync(project)
    assert not orphan.exists()


def test_watcher_sees_our_own_writes_as_nothing_new(project: Project) -> None:
    reports: list[SyncReport] = []
    synced = threading.Event()

    def on_sync(report: SyncReport) -> None:
        reports.append(report)
        synced.set()

    watcher = memdir.MemdirWatcher(project, on_sync)
    assert watcher.start() and watcher.ready.wait(10)
    try:
        change = memdir.add_memory(project, "[WIP] the login flow is being rewritten")
        assert synced.wait(10)
    finally:
        watcher.stop()
    assert all(not r.added and not r.removed for r in reports)
    assert memory_keys(project) == {change.key}
    assert "- [(WIP) the login flow is being rewritten](" in index_file(project).read_text()


def test_a_bom_from_a_windows_editor_is_not_a_malformed_line(project: Project) -> None:
    project.paths.memory.mkdir(parents=True)
    index_file(project).write_bytes("\ufeff- first\r\n- second\r\n".encode())
    report = memdir.sync(project)
    assert report.entries == 2 and report.warnings == []
    assert project.graph.get(keys.memory_key("first")) is not None


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
        st.text() | st.lists(st.text(), max_size=4),
        max_size=6,
    ),
    st.text(),
)
def test_frontmatter_round_trips_any_values(meta: dict[str, object], body: str) -> None:
    text = frontmatter.render_frontmatter(meta) + body
    parsed, rest, problems = frontmatter.parse_frontmatter(text, "x.md")
    assert problems == [] and parsed == meta and rest == body


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600), st.binary(max_size=300))
def test_any_bytes_in_memory_md_or_a_topic_file_never_raise(index: bytes, topic: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "MEMORY.md").write_bytes(index + b"\n- [T](t.md) - hook\n")
        (folder / "t.md").write_bytes(topic)
        parsed = MemoryDir(folder, Caps(lines=20, bytes=400)).read()
        assert all(p.line >= 1 for p in parsed.problems)
        assert len({e.key for e in parsed.entries}) == len(parsed.entries)
