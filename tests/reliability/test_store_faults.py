"""The store under faults: full and read-only disks, damage the open checks must see or the
first read meets, symlinks. Each ends with nothing acknowledged lost and one clear warning."""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path

import pytest

from knowledge.core import keys
from knowledge.core.paths import ProjectPaths
from knowledge.core.store import Store, StoreCorrupt, StoreError, StoreUnavailable
from knowledge.index.project import Project
from tests.conftest import write_tree
from tests.reliability.disks import full_disk, read_only
from tests.theus.test_headless import theus


def indexed(tmp_path: Path) -> tuple[Path, Path]:
    root = write_tree(tmp_path / "repo", {"a.py": "def alpha():\n    pass\n"})
    project = Project(root)
    project.index()
    store = project.paths.store
    project.close()
    return root, store


@pytest.mark.parametrize(
    "damage",
    ["middle-garbage", "dropped-nodes", "dangling-symlink", "a-directory", "unclean-and-damaged"],
)
def test_damage_is_found_set_aside_unchanged_and_rebuilt(tmp_path: Path, damage: str) -> None:
    root, store = indexed(tmp_path)
    if damage == "middle-garbage":
        data = bytearray(store.read_bytes())
        page = 4096
        data[page * 2 : page * 3] = os.urandom(page)
        store.write_bytes(bytes(data))
    elif damage == "dropped-nodes":
        conn = sqlite3.connect(store)
        conn.execute("DROP TABLE nodes")
        conn.commit()
        conn.close()
    elif damage == "dangling-symlink":
        store.unlink()
        store.symlink_to(tmp_path / "nowhere.db")
    elif damage == "a-directory":
        store.unlink()
        store.mkdir()
    else:  # a writer that never closed, and a damaged page: quick_check finds it
        conn = sqlite3.connect(store)
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('writer', 'open')")
        conn.commit()
        conn.close()
        data = bytearray(store.read_bytes())
        data[-200:] = os.urandom(200)
        store.write_bytes(bytes(data))
    before = _snapshot(store)
    project = Project(root)
    try:
        assert keys.file_key("a.py") not in project.graph  # nothing half-read survives
        aside = project.store.recovered_from
        assert aside is not None, "the damage was not noticed"
        assert _snapshot(aside) == before, "the bytes set aside must be the bytes found"
        report = project.index()
        assert report.parsed == 1 and keys.symbol_key("a.py", "alpha") in project.graph
    finally:
        project.close()
    reopened = Project(root)
    assert reopened.store.recovered_from is None
    assert keys.symbol_key("a.py", "alpha") in reopened.graph
    reopened.close()


def _snapshot(path: Path) -> object:
    if path.is_symlink():
        return ("link", os.readlink(path))
    if path.is_dir():
        return ("dir", sorted(p.name for p in path.iterdir()))
    return path.read_bytes()


def test_a_full_disk_never_moves_a_healthy_store(tmp_path: Path) -> None:
    root, store = indexed(tmp_path)
    with full_disk(tmp_path / "small") as disk:
        moved = disk / "graph.db"
        moved.write_bytes(store.read_bytes())
        good = moved.read_bytes()
        disk.fill()
        opened = Store.open(moved)  # WAL files cannot be created: read-only, not corrupt
        assert opened.recovered_from is None and opened.read_only
        assert opened.load_graph().get(keys.symbol_key("a.py", "alpha")) is not None
        with pytest.raises(StoreError):
            opened.save(Project(root).graph)
        opened.close()
        assert list(disk.glob("graph.db.corrupt*")) == []
        assert moved.read_bytes() == good


def test_no_store_can_be_created_on_a_full_disk_and_none_is_left(tmp_path: Path) -> None:
    with full_disk(tmp_path / "small") as disk:
        disk.fill()
        with pytest.raises(StoreUnavailable):
            Store.open(disk / "graph.db")
        assert not (disk / "graph.db").exists()


def test_a_read_only_folder_opens_the_store_for_reading(tmp_path: Path) -> None:
    _root, store = indexed(tmp_path)
    good = store.read_bytes()
    with read_only(store.parent):
        opened = Store.open(store)
        try:
            assert opened.recovered_from is None
            assert opened.load_graph().get(keys.symbol_key("a.py", "alpha")) is not None
        finally:
            opened.close()
    assert store.read_bytes() == good


def test_a_store_whose_only_files_were_skipped_is_not_taken_for_damage(tmp_path: Path) -> None:
    # A file unreadable at index time (a race, a permission) is recorded without a node.
    from knowledge.core.graph import Graph
    from knowledge.core.store import FileState

    path = tmp_path / "graph.db"
    store = Store.open(path)
    store.save(Graph(), files=[FileState("gone.py", 10, 1, status="skipped", reason="unreadable")])
    store.close()
    again = Store.open(path)
    try:
        assert again.recovered_from is None and "gone.py" in again.files()
    finally:
        again.close()


def test_processes_creating_one_store_at_once_neither_fail_nor_set_it_aside(tmp_path: Path) -> None:
    import subprocess
    import sys

    child = (
        "import sys, time; from pathlib import Path; from knowledge.core.store import Store\n"
        "go = Path(sys.argv[1])\n"
        "while not go.exists(): time.sleep(0.001)\n"
        "for trial in range(15):\n"
        "    s = Store.open(Path(sys.argv[2]) / f'{trial}' / 'graph.db')\n"
        "    assert s.recovered_from is None, s.recovered_from\n"
        "    s.files(); s.close()\n"
    )
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", child, str(go), str(tmp_path / "stores")],
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    go.touch()
    results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    assert all(code == 0 for code, _ in results), results
    assert not list((tmp_path / "stores").rglob("*.corrupt-*"))


# -- damage met after opening: by the index's page check or by a read --------------------------


def _many_files(tmp_path: Path) -> Path:
    """A project whose store spans some 40 pages of every table and index."""
    return write_tree(
        tmp_path / "repo",
        {
            f"mod_{i}.py": f"def func_{i}(x):\n"
            f'    """Doc {i} about cart totals."""\n    return x\n\n'
            f"class Klass{i}:\n    def method_{i}(self):\n        return {i}\n"
            for i in range(60)
        },
    )


def _nodes(store: Path) -> int:
    conn = sqlite3.connect(store)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM nodes").fetchone()[0])
    finally:
        conn.close()


def _garbage(store: Path, page: int) -> bytes:
    """4 KiB of (seeded) garbage over one page of the store; the bytes it then holds."""
    data = bytearray(store.read_bytes())
    data[page * 4096 : (page + 1) * 4096] = random.Random(page).randbytes(4096)
    store.write_bytes(bytes(data))
    return bytes(data)


def _set_aside(store: Path) -> list[Path]:
    """The stores set aside (not their WAL files)."""
    return sorted(
        p
        for p in store.parent.glob(store.name + ".corrupt-*")
        if not p.name.endswith(("-wal", "-shm"))
    )


def test_garbage_mid_file_is_set_aside_by_recall_and_by_index(tmp_path: Path) -> None:
    root = _many_files(tmp_path)
    assert theus(["index", "--no-embed"], None, root).returncode == 0
    store = ProjectPaths.for_root(root).store
    whole, pristine = _nodes(store), store.read_bytes()
    middle = len(pristine) // 4096 // 2
    damaged = _garbage(store, middle)
    recall = theus(["recall", "cart totals"], None, root)  # it raised StoreCorrupt
    assert recall.returncode == 0 and "mod_" in recall.stdout, recall.stderr
    assert [p.read_bytes() for p in _set_aside(store)] == [damaged]
    assert _nodes(store) == whole
    store.write_bytes(pristine)
    damaged = _garbage(store, middle)
    index = theus(["index", "--no-embed"], None, root)  # it crashed, or said so over 0 nodes
    assert index.returncode == 0 and "Indexed 60 files" in index.stdout, index.stderr
    assert damaged in [p.read_bytes() for p in _set_aside(store)]
    assert _nodes(store) == whole


def test_garbage_on_any_page_is_found_by_the_next_index(tmp_path: Path) -> None:
    root = _many_files(tmp_path)
    project = Project(root)
    project.index()
    store = project.paths.store
    project.close()
    whole, pristine = _nodes(store), store.read_bytes()
    for page in range(1, len(pristine) // 4096):  # the header page is the open check's
        store.write_bytes(pristine)
        for old in store.parent.glob(store.name + ".corrupt-*"):
            old.unlink()
        damaged = _garbage(store, page)
        project = Project(root)
        try:
            report = project.index()
        finally:
            project.close()
        assert [p.read_bytes() for p in _set_aside(store)] == [damaged], page
        assert report.files == 60 and _nodes(store) == whole, page


ROW_DAMAGE = {
    "invalid-json": "UPDATE nodes SET extra = '{bad' WHERE key = ?",
    "json-not-an-object": "UPDATE nodes SET extra = '[1]' WHERE key = ?",
    "unknown-field": "UPDATE nodes SET extra = '{\"nope\": 1}' WHERE key = ?",
    "wrong-field-type": 'UPDATE nodes SET extra = \'{"facts": "x"}\' WHERE key = ?',
    "text-line": "UPDATE nodes SET line = 'x' WHERE key = ?",
    "blob-label": "UPDATE nodes SET label = x'00ff' WHERE key = ?",
    "undecodable-text": "UPDATE nodes SET summary = CAST(x'ff' AS TEXT) WHERE key = ?",
    "blob-edge-source": "UPDATE edges SET src = x'00ff' WHERE dst = ?",
    "undecodable-edge": "UPDATE edges SET kind = CAST(x'ff' AS TEXT) WHERE dst = ?",
}


@pytest.mark.parametrize("damage", ROW_DAMAGE)
def test_a_row_that_does_not_read_sets_the_store_aside(tmp_path: Path, damage: str) -> None:
    root, store = indexed(tmp_path)
    conn = sqlite3.connect(store)
    conn.execute(ROW_DAMAGE[damage], (keys.symbol_key("a.py", "alpha"),))
    conn.commit()
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"  # pages are fine
    conn.close()
    before = store.read_bytes()
    opened = Store.open(store)
    try:
        assert opened.recovered_from is None  # the open checks cannot see it
        with pytest.raises(StoreCorrupt):
            opened.load_graph()
        assert opened.recovered_from is not None
        assert opened.recovered_from.read_bytes() == before
        assert opened.load_graph().get(keys.symbol_key("a.py", "alpha")) is None  # a new store
    finally:
        opened.close()
    project = Project(root)
    try:
        assert project.index().parsed == 1
        assert keys.symbol_key("a.py", "alpha") in project.graph
    finally:
        project.close()


@pytest.mark.parametrize("damage", ROW_DAMAGE)
def test_a_row_an_edit_reads_in_part_sets_the_store_aside(tmp_path: Path, damage: str) -> None:
    """A one-shot index after an edit reads only part of the graph (`_graph_for`): damage in
    a row it needs is still found (a node's by the check before any index, an edge's by the
    part's own reads), set aside, and the index starts again from nothing."""
    root, store = indexed(tmp_path)
    write_tree(root, {"b.py": "from a import alpha\n\ndef beta():\n    return alpha()\n"})
    Project(root).index()
    conn = sqlite3.connect(store)
    conn.execute(ROW_DAMAGE[damage], (keys.symbol_key("a.py", "alpha"),))
    conn.commit()
    conn.close()
    damaged = store.read_bytes()
    (root / "a.py").write_text("def alpha():\n    return 1\n")
    project = Project(root)
    try:
        report = project.index()
    finally:
        project.close()
    assert [p.read_bytes() for p in _set_aside(store)] == [damaged]
    assert report.parsed == 2 and report.symbols == 2
    graph = Project(root).graph
    assert ("file:b.py", keys.symbol_key("a.py", "alpha"), "references") in {
        (e.src, e.dst, e.kind) for e in graph.edges()
    }


def test_invalid_json_in_a_row_no_longer_breaks_every_index(tmp_path: Path) -> None:
    root = _many_files(tmp_path)
    assert theus(["index", "--no-embed"], None, root).returncode == 0
    store = ProjectPaths.for_root(root).store
    whole = _nodes(store)
    conn = sqlite3.connect(store)
    conn.execute(ROW_DAMAGE["invalid-json"], (keys.symbol_key("mod_5.py", "func_5"),))
    conn.commit()
    conn.close()
    before = store.read_bytes()
    for _ in range(2):
        done = theus(["index"], None, root)
        assert done.returncode == 0 and "Indexed 60 files" in done.stdout, done.stderr
        assert "Traceback" not in done.stderr
    assert [p.read_bytes() for p in _set_aside(store)] == [before]
    assert _nodes(store) == whole
