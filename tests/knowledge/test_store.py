from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge.core import keys
from knowledge.core.graph import Edge, Graph, Node
from knowledge.core.store import Store, StoreError
from knowledge.index.project import Project
from tests.conftest import present, write_tree
from tests.knowledge.store_child import FILES, SYMBOLS

REPO = Path(__file__).resolve().parents[2]


def read_acks(proc: subprocess.Popen[str], deadline: float) -> int:
    """Read acknowledgements until the deadline; return the last one seen."""
    last = 0
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("ack "):
            last = int(line.split()[1])
        elif not line:
            time.sleep(0.002)
    return last


def test_kill_9_at_random_moments_never_loses_an_acknowledged_save(tmp_path: Path) -> None:
    rng = random.Random(1234)
    db = tmp_path / "graph.db"
    for trial in range(24):
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.knowledge.store_child", str(db)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        last = read_acks(proc, time.monotonic() + 0.4 + rng.random() * 0.6)
        proc.send_signal(signal.SIGKILL)
        last = max(last, read_acks(proc, time.monotonic() + 0.05))
        proc.wait()
        store = Store.open(db)
        assert store.recovered_from is None, f"trial {trial}: store was unreadable"
        gen = int(store.meta().get("gen", "0"))
        assert gen >= last, f"trial {trial}: acknowledged {last}, store holds {gen}"
        graph = store.load_graph()
        if gen:
            assert len(graph) == FILES * (SYMBOLS + 1)
            assert graph.edge_count() == FILES * SYMBOLS
            # Every owner's rows come from one whole save: no file is half old, half new.
            for owner in graph.owners():
                gens = {present(graph.get(k)).data["gen"] for k in graph.owned(owner)}
                assert len(gens) == 1 and gens.pop() <= gen
        store.close()


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "wrong-schema", "foreign"])
def test_unreadable_store_is_moved_aside_and_rebuilt(tmp_path: Path, damage: str) -> None:
    root = write_tree(tmp_path / "repo", {"a.py": "def alpha():\n    pass\n"})
    project = Project(root)
    project.index()
    store_path = project.paths.store
    project.close()
    original = store_path.read_bytes()
    if damage == "truncated":
        store_path.write_bytes(original[: len(original) // 3])
    elif damage == "garbage":
        store_path.write_bytes(os.urandom(len(original)))
    elif damage == "empty":
        store_path.write_bytes(b"")
    else:
        conn = sqlite3.connect(store_path)
        if damage == "wrong-schema":
            conn.execute("UPDATE meta SET v = '999' WHERE k = 'schema'")
        else:
            conn.executescript("DROP TABLE meta; CREATE TABLE other (x);")
        conn.commit()
        conn.close()
    damaged = store_path.read_bytes()
    project = Project(root)
    aside = project.store.recovered_from
    # Even an empty file (a valid empty SQLite database) is set aside: reused, it would read
    # as a project never indexed, and say nothing.
    assert aside is not None and aside.read_bytes() == damaged
    report = project.index()
    assert report.parsed == 1
    assert keys.symbol_key("a.py", "alpha") in project.graph
    project.close()
    reopened = Project(root)
    assert reopened.store.recovered_from is None
    assert keys.symbol_key("a.py", "alpha") in reopened.graph


def small_graph(label: str) -> Graph:
    graph = Graph()
    graph.replace_owner(
        "a.py",
        [Node("file:a.py", "file", label), Node("sym:a.py#f", "symbol", "f")],
        [Edge("file:a.py", "sym:a.py#f", "defines")],
    )
    return graph


def test_locked_database_keeps_last_good_state_and_retries(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "g.db")
    store.save(small_graph("first"))
    blocker = sqlite3.connect(tmp_path / "g.db", timeout=0.1)
    blocker.execute("BEGIN EXCLUSIVE")
    graph = small_graph("second")
    store._conn.execute("PRAGMA busy_timeout = 100")
    with pytest.raises(StoreError):
        store.save(graph)
    assert graph.dirty_owners == {"a.py"}, "unsaved changes must be kept for the retry"
    blocker.rollback()
    blocker.close()
    assert present(store.load_graph().get("file:a.py")).label == "first"
    store.save(graph)
    assert present(store.load_graph().get("file:a.py")).label == "second"


DISK_FULL_CHILD = """
import resource, sys
from pathlib import Path
from knowledge.core.graph import Node
from knowledge.core.store import Store, StoreError
from tests.knowledge.test_store import small_graph
store = Store.open(Path(sys.argv[1]))
store.save(small_graph("first"))
resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
graph = small_graph("second")
for i in range(400):
    graph.upsert(Node(f"file:big{i}", "file", "x" * 4000), owner="a.py")
try:
    store.save(graph)
    print("saved")
except StoreError as exc:
    print("refused:", exc)
"""


def test_disk_full_reports_and_keeps_the_previous_state(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    out = subprocess.run(
        [sys.executable, "-c", DISK_FULL_CHILD, str(db)],
        cwd=REPO,
        capture_output=True,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGXFSZ, signal.SIG_IGN),
        timeout=60,
    )
    assert out.stdout.startswith("refused:"), out.stdout + out.stderr
    store = Store.open(db)
    assert store.recovered_from is None
    assert present(store.load_graph().get("file:a.py")).label == "first"


def test_a_first_save_of_many_rows_keeps_the_indexes_and_reads_back(tmp_path: Path) -> None:
    """A save into empty tables makes the indexes after the rows (`_BULK`): they are there
    after it, and every later save and read uses them as before."""
    from knowledge.core.store import _BULK, _INDEXES

    graph = Graph()
    for i in range(_BULK // 10 + 1):
        rel = f"m/f{i}.py"
        fkey = keys.file_key(rel)
        nodes = [Node(fkey, "file", rel, rel)]
        nodes += [Node(keys.symbol_key(rel, f"s{j}"), "symbol", f"s{j}", rel) for j in range(10)]
        graph.replace_owner(rel, nodes, [Edge(fkey, n.key, "defines") for n in nodes[1:]])
    store = Store.open(tmp_path / "graph.db")
    store.save(graph)
    conn = sqlite3.connect(tmp_path / "graph.db")
    made = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert set(_INDEXES) <= made
    graph.replace_owner("m/f0.py", [Node(keys.file_key("m/f0.py"), "file", "f0.py", "m/f0.py")], [])
    store.save(graph)  # a save over rows: the indexes are kept up as rows go in
    store.close()
    again = Store.open(tmp_path / "graph.db").load_graph()
    assert again.counts() == graph.counts()
    assert sorted(e.dst for e in again.out_edges(keys.file_key("m/f1.py"))) == sorted(
        e.dst for e in graph.out_edges(keys.file_key("m/f1.py"))
    )


@pytest.mark.parametrize("count", [1, 3, 4, 9])
def test_files_naming_finds_exactly_the_files_holding_a_name(tmp_path: Path, count: int) -> None:
    """The text search (a few names) and the split (more) find what a set intersection of
    each file's identifiers finds: whole identifiers only, never a part of one."""
    from knowledge.core.store import Links

    identifiers = {
        "a.py": ["Cart", "total", "total_price"],
        "b.py": ["price", "Cart_total"],
        "c.py": ["totals", "cart"],
        "d.py": [],
    }
    store = Store.open(tmp_path / "s.db")
    links = {path: Links([], names, []) for path, names in identifiers.items()}
    store.save(Graph(), links=links)
    names = ["total", "Cart", "price", "missing", "x", "y", "z", "w", "v"][:count]
    expected = {p for p, found in identifiers.items() if set(names) & set(found)}
    assert store.files_naming(names) == expected
    store.close()
