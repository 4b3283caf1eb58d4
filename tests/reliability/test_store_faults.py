"""The store under faults: full and read-only disks, damage the open checks must see or the
first read meets, symlinks. Each ends with nothing acknowledged lost and one clear warning."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from knowledge import keys
from knowledge.project import Project
from knowledge.store import Store, StoreError, StoreUnavailable
from tests.conftest import write_tree
from tests.reliability.disks import full_disk, read_only


def indexed(tmp_path: Path) -> tuple[Path, Path]:
    root = write_tree(tmp_path / "repo", {"a.py": "def alpha():\n    pass\n"})
    project = Project(root)
    project.index()
    store = project.paths.store
    project.close()
    return root, store


@pytest.mark.parametrize("damage", ["middle-garbage", "dropped-nodes", "dangling-symlink",
                                    "a-directory", "unclean-and-damaged"])
def test_damage_is_found_set_aside_unchanged_and_rebuilt(tmp_path: Path, damage: str) -> None:
    root, store = indexed(tmp_path)
    if damage == "middle-garbage":
        data = bytearray(store.read_bytes())
        page = 4096
        data[page * 2: page * 3] = os.urandom(page)
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
    from knowledge.graph import Graph
    from knowledge.store import FileState

    path = tmp_path / "graph.db"
    store = Store.open(path)
    store.save(Graph(), files=[FileState("gone.py", 10, 1, status="skipped",
                                         reason="unreadable")])
    store.close()
    again = Store.open(path)
    try:
        assert again.recovered_from is None and "gone.py" in again.files()
    finally:
        again.close()


def test_processes_creating_one_store_at_once_neither_fail_nor_set_it_aside(
        tmp_path: Path) -> None:
    import subprocess
    import sys

    child = ("import sys, time; from pathlib import Path; from knowledge.store import Store\n"
             "go = Path(sys.argv[1])\n"
             "while not go.exists(): time.sleep(0.001)\n"
             "for trial in range(15):\n"
             "    s = Store.open(Path(sys.argv[2]) / f'{trial}' / 'graph.db')\n"
             "    assert s.recovered_from is None, s.recovered_from\n"
             "    s.files(); s.close()\n")
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", child, str(go), str(tmp_path / "stores")],
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    go.touch()
    results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    assert all(code == 0 for code, _ in results), results
    assert not list((tmp_path / "stores").rglob("*.corrupt-*"))
