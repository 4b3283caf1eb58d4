"""The real-time watcher, with real files and a real watcher (inotify where the OS has it).

Every wait is on a condition with a deadline; the only sleeps pace the writes of a burst.
"""

from __future__ import annotations

import errno
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from watchfiles import awatch

from knowledge.core import keys
from knowledge.core.graph import Edge, Graph, Node
from knowledge.core.paths import ProjectPaths
from knowledge.index.project import Project
from knowledge.watch import maybe_start, status_section
from knowledge.watch.watcher import Update, Watcher
from tests.conftest import configure, write_tree

DEADLINE = 20.0


def wait_for(condition: Callable[[], bool], timeout: float = DEADLINE, what: str = "") -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.01)


def settled(watcher: Watcher, condition: Callable[[], bool], what: str = "") -> None:
    """The condition holds and the watcher has nothing left to do."""
    wait_for(lambda: condition() and watcher.idle, what=what)


@pytest.fixture
def watchers() -> Iterator[list[Watcher]]:
    started: list[Watcher] = []
    yield started
    for watcher in started:
        watcher.stop()


@pytest.fixture
def start(watchers: list[Watcher]) -> Callable[..., Watcher]:
    def _start(project: Project, **options: Any) -> Watcher:
        watcher = Watcher(project, **options).start_in_thread()
        watchers.append(watcher)
        assert watcher.wait_ready(DEADLINE)
        return watcher

    return _start


def indexed(root: Path, files: Mapping[str, str | bytes]) -> Project:
    write_tree(root, files)
    project = Project(root)
    project.index()
    return project


def node_keys(project: Project) -> list[str]:
    return project.graph.keys()  # Graph is not iterable itself


def has(project: Project, key: str) -> Callable[[], bool]:
    return lambda: key in project.graph


def lacks(project: Project, key: str) -> Callable[[], bool]:
    return lambda: key not in project.graph


def snapshot(graph: Graph, skip_kinds: tuple[str, ...] = ()) -> tuple[set[str], set[Edge]]:
    with graph.lock:
        nodes = {n.key for n in graph.nodes() if n.kind not in skip_kinds}
        edges = {e for e in graph.edges() if e.src in nodes and e.dst in nodes}
    return nodes, edges


def inotify_watched_inodes() -> set[int]:
    """Inodes this process holds inotify watches on, from /proc/self/fdinfo."""
    inodes: set[int] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            info = Path(f"/proc/self/fdinfo/{fd}").read_text()
        except OSError:
            continue
        inodes.update(
            int(m, 16) for m in re.findall(r"^inotify wd:\S+ ino:([0-9a-f]+)", info, re.MULTILINE)
        )
    return inodes


# -- watches ---------------------------------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts inotify watches")
def test_excluded_and_ignored_folders_get_no_watch(
    tmp_path: Path, start: Callable[..., Watcher]
) -> None:
    root = tmp_path / "proj"
    project = indexed(
        root,
        {
            ".gitignore": "generated/\n",
            "src/app.py": "def main():\n    pass\n",
            "src/deep/util.py": "X = 1\n",
            "empty/.keep": "",
            "node_modules/dep/lib/index.js": "module.exports = 1\n",
            "build/out/x.py": "X = 2\n",
            ".venv/lib/site.py": "X = 3\n",
            "generated/api/client.py": "X = 4\n",
            ".git/objects/ab/cd": "blob",
        },
    )
    watcher = start(project)
    assert watcher.mode == "native"
    assert watcher.watched == {"", "src", "src/deep", "empty"}
    inodes = inotify_watched_inodes()
    for rel in ("", "src", "src/deep", "empty"):
        assert (root / rel).stat().st_ino in inodes, rel
    for rel in (
        "node_modules",
        "node_modules/dep",
        "node_modules/dep/lib",
        "build",
        "build/out",
        ".venv",
        ".venv/lib",
        "generated",
        "generated/api",
        ".git",
        ".git/objects",
    ):
        assert (root / rel).stat().st_ino not in inodes, rel
    # Changes inside excluded folders never reach the graph; a real change still does.
    (root / "node_modules/dep/lib/new.js").write_text("export const y = 2\n")
    (root / "generated/api/more.py").write_text("def hidden():\n    pass\n")
    (root / "empty/new.py").write_text("def fresh():\n    pass\n")
    settled(watcher, has(project, "sym:empty/new.py#fresh"))
    assert not any(
        k.startswith(("file:node_modules", "file:generated")) for k in node_keys(project)
    )


# -- saves, every way editors do them -----------------------------------------------------------


def test_in_place_save(tmp_path: Path, start: Callable[..., Watcher]) -> None:
    project = indexed(tmp_path / "p", {"app.py": "def one():\n    pass\n"})
    watcher = start(project)
    (project.root / "app.py").write_text("def one():\n    pass\n\ndef two():\n    pass\n")
    settled(watcher, has(project, "sym:app.py#two"))
    assert "sym:app.py#one" in project.graph


def test_temp_file_and_rename_save(tmp_path: Path, start: Callable[..., Watcher]) -> None:
    project = indexed(tmp_path / "p", {"app.py": "def old():\n    pass\n"})
    watcher = start(project)
    tmp = project.root / "app.py.tmp"
    tmp.write_text("def new():\n    pass\n")
    os.replace(tmp, project.root / "app.py")
    settled(
        watcher, lambda: "sym:app.py#new" in project.graph and "sym:app.py#old" not in project.graph
    )
    assert not any("tmp" in k for k in node_keys(project))


def test_vim_style_rename_write_delete(tmp_path: Path, start: Callable[..., Watcher]) -> None:
    project = indexed(tmp_path / "p", {"app.py": "def before():\n    pass\n"})
    watcher = start(project)
    root = project.root
    probe = root / "4913"  # vim checks it may create files in the folder
    probe.write_text("")
    probe.unlink()
    os.rename(root / "app.py", root / "app.py~")  # backup by rename
    (root / "app.py").write_text("def after():\n    pass\n")
    (root / "app.py~").unlink()
    settled(
        watcher,
        lambda: "sym:app.py#after" in project.graph and "sym:app.py#before" not in project.graph,
    )
    assert "file:app.py~" not in project.graph and "file:4913" not in project.graph


def test_delete_removes_exactly_its_nodes_and_edges(
    tmp_path: Path, start: Callable[..., Watcher]
) -> None:
    project = indexed(
        tmp_path / "p",
        {
            "a.py": "from b import helper_b\n\ndef use_a():\n    return helper_b()\n",
            "b.py": "def helper_b():\n    return 1\n",
            "c.py": "import a\n\nclass Keeper:\n    pass\n",
        },
    )
    graph = project.graph
    owned_by_b = graph.owned("b.py")
    assert {"file:b.py", "sym:b.py#helper_b"} <= owned_by_b
    nodes, edges = snapshot(graph)
    watcher = start(project)
    (project.root / "b.py").unlink()
    settled(watcher, lacks(project, "file:b.py"))
    after_nodes, after_edges = snapshot(graph)
    assert after_nodes == nodes - owned_by_b
    assert after_edges == {e for e in edges if e.src not in owned_by_b and e.dst not in owned_by_b}
    assert "b.py" not in project.files


def test_rename_and_delete_of_a_folder(tmp_path: Path, start: Callable[..., Watcher]) -> None:
    project = indexed(
        tmp_path / "p",
        {
            "pkg/a.py": "def alpha():\n    pass\n",
            "pkg/sub/b.py": "def beta():\n    pass\n",
            "main.py": "X = 1\n",
        },
    )
    watcher = start(project)
    os.rename(project.root / "pkg", project.root / "lib")
    settled(
        watcher,
        lambda: (
            "sym:lib/sub/b.py#beta" in project.graph
            and "sym:lib/a.py#alpha" in project.graph
            and not any(k.startswith("file:pkg/") for k in node_keys(project))
        ),
    )
    assert set(project.files) == {"lib/a.py", "lib/sub/b.py", "main.py"}
    # The moved folders are watched under their new names.
    assert {"lib", "lib/sub"} <= watcher.watched and "pkg" not in watcher.watched
    (project.root / "lib/sub/c.py").write_text("def gamma():\n    pass\n")
    settled(watcher, has(project, "sym:lib/sub/c.py#gamma"))
    for path in sorted((project.root / "lib/sub").iterdir()):
        path.unlink()
    (project.root / "lib/sub").rmdir()
    settled(watcher, lambda: not any(k.startswith("file:lib/sub/") for k in node_keys(project)))
    assert set(project.files) == {"lib/a.py", "main.py"}


def test_new_nested_folders_are_indexed_and_watched(
    tmp_path: Path, start: Callable[..., Watcher]
) -> None:
    project = indexed(tmp_path / "p", {"main.py": "X = 1\n"})
    watcher = start(project)
    write_tree(project.root, {"one/two/three/deep.py": "def deep():\n    pass\n"})
    settled(watcher, has(project, "sym:one/two/three/deep.py#deep"))
    assert {"one", "one/two", "one/two/three"} <= watcher.watched
    (project.root / "one/two/later.py").write_text("def later():\n    pass\n")
    settled(watcher, has(project, "sym:one/two/later.py#later"))


def test_a_burst_of_saves_is_reindexed_at_most_twice(
    tmp_path: Path, start: Callable[..., Watcher]
) -> None:
    project = indexed(tmp_path / "p", {"burst.py": "def f0():\n    pass\n"})
    watcher = start(project)
    path = project.root / "burst.py"
    for i in range(50):  # 50 saves in about a second
        path.write_text(f"def f{i}():\n    pass\n")
        time.sleep(0.02)
    settled(watcher, has(project, "sym:burst.py#f49"))
    assert 1 <= watcher.reindexed["burst.py"] <= 2
    assert watcher.rescans == 0
    assert [k for k in project.graph.owned("burst.py") if k.startswith("sym:")] == [
        "sym:burst.py#f49"
    ]


def test_temp_and_swap_files_never_enter_the_graph(
    tmp_path: Path, start: Callable[..., Watcher]
) -> None:
    project = indexed(tmp_path / "p", {"app.py": "X = 1\n"})
    updates: list[Update] = []
    watcher = start(project, on_update=updates.append)
    names = [
        ".app.py.swp",
        ".app.py.swo",
        "app.py~",
        "#app.py#",
        ".#app.py",
        "4913",
        "x.tmp",
        "app.py.bak",
        "app.py.orig",
        "app.py___jb_tmp___",
        ".env",
        "id_rsa",
    ]
    for name in names:
        (project.root / name).write_text("def leaked():\n    pass\n")
    (project.root / "real.py").write_text("def real():\n    pass\n")
    settled(watcher, has(project, "sym:real.py#real"))
    assert not any(name in project.files for name in names)
    assert not any(k.endswith("#leaked") for k in node_keys(project))
    touched = {rel for u in updates for rel in (*u.changed, *u.removed)}
    assert touched == {"real.py"}


# -- storms, schema, loops ----------------------------------------------------------------------


def test_a_3000_file_change_is_one_rescan_equal_to_a_fresh_index(
    tmp_path: Path, start: Callable[..., Watcher]
) -> None:
    root = tmp_path / "p"
    files = {
        f"pkg{d}/m{i}.py": f"from pkg{d} import m{(i + 1) % 100}\n\ndef func_{d}_{i}():\n"
        f"    return {i}\n"
        for d in range(10)
        for i in range(100)
    }
    project = indexed(root, files)
    memory = Node(keys.memory_key("m1 is the entry point"), "memory", "m1 is the entry point")
    project.graph.upsert(memory)
    project.graph.add_edge(memory.key, "file:pkg0/m1.py", "derived-from")
    project.graph.add_edge(memory.key, "file:pkg0/m2.py", "derived-from")
    project.save()
    watcher = start(project)
    # A branch switch: every file changes, 2,000 appear, 10 go (pkg0/m2.py among them).
    for d in range(10):
        for i in range(100):
            (root / f"pkg{d}/m{i}.py").write_text(
                f"from pkg{d} import n{i}\n\ndef func_{d}_{i}():\n    return {-i}\n"
            )
        for i in range(200):
            (root / f"pkg{d}/n{i}.py").write_text(f"def new_{d}_{i}():\n    return {i}\n")
    for i in range(2, 12):
        (root / f"pkg0/m{i}.py").unlink()
    settled(
        watcher,
        lambda: (
            watcher.rescans >= 1
            and "sym:pkg9/n199.py#new_9_199" in project.graph
            and "file:pkg0/m11.py" not in project.graph
        ),
    )
    assert watcher.rescans == 1

    fresh = Project(root, ProjectPaths(project.root, tmp_path / "fresh-home"))
    fresh.index()
    assert snapshot(project.graph, ("memory",)) == snapshot(fresh.graph)
    assert project.graph.get(memory.key) is not None
    assert project.graph.out_edges(memory.key) == [
        Edge(memory.key, "file:pkg0/m1.py", "derived-from")
    ]

    watcher.stop()  # the final save holds the same graph
    reloaded = Project(root)
    assert snapshot(reloaded.graph) == snapshot(project.graph)


def test_schema_changes_rerun_schema_discovery(
    tmp_path: Path, start: Callable[..., Watcher]
) -> None:
    project = indexed(
        tmp_path / "p",
        {
            "prisma/schema.prisma": "model User {\n  id Int @id\n  email String\n}\n",
            "db/init.sql": "CREATE TABLE users (id INT PRIMARY KEY, name TEXT);\n",
        },
    )
    assert "table:user" in project.graph and "table:users" in project.graph
    watcher = start(project)
    (project.root / "prisma/schema.prisma").write_text(
        "model User {\n  id Int @id\n  email String\n  posts Post[]\n}\n\n"
        "model Post {\n  id Int @id\n  authorId Int\n"
        "  author User @relation(fields: [authorId], references: [id])\n}\n"
    )
    with (project.root / "db/init.sql").open("a") as sql:
        sql.write(
            "CREATE TABLE orders (\n  id INT PRIMARY KEY,\n  user_id INT REFERENCES users(id)\n);\n"
        )
    fk_prisma = Edge("column:post.authorid", "column:user.id", "references")
    fk_sql = Edge("column:orders.user_id", "column:users.id", "references")
    settled(
        watcher,
        lambda: (
            fk_prisma in project.graph.out_edges("column:post.authorid")
            and fk_sql in project.graph.out_edges("column:orders.user_id")
        ),
    )
    assert Edge("table:post", "table:user", "references") in project.graph.out_edges("table:post")
    assert Edge("table:orders", "table:users", "references") in project.graph.out_edges(
        "table:orders"
    )


def test_symlink_loops_terminate(tmp_path: Path, start: Callable[..., Watcher]) -> None:
    project = indexed(tmp_path / "p", {"src/a.py": "def alpha():\n    pass\n"})
    root = project.root
    os.symlink(root, root / "src" / "loop")  # back to the root
    os.symlink(root / "self2", root / "self1")  # a two-link cycle
    os.symlink(root / "self1", root / "self2")
    project.index()
    watcher = start(project)
    assert watcher.watched == {"", "src"}
    os.symlink("..", root / "src" / "up")  # a new loop while watching
    (root / "src/b.py").write_text("def beta():\n    pass\n")
    settled(watcher, has(project, "sym:src/b.py#beta"))
    assert watcher.watched == {"", "src"}
    assert not any("loop" in rel or "up/" in rel for rel in project.files)


# -- failures -----------------------------------------------------------------------------------


async def native_fails(*paths: str, **options: Any) -> AsyncIterator[set[Any]]:
    """awatch whose native backend hits inotify's watch limit; polling still works."""
    if not options.get("force_polling"):
        raise OSError(errno.ENOSPC, "OS file watch limit reached")
    async for changes in awatch(*paths, **options):
        yield changes


async def nothing_works(*paths: str, **options: Any) -> AsyncIterator[set[Any]]:
    raise OSError(errno.ENOSPC, "OS file watch limit reached")
    yield set()  # pragma: no cover - makes this an async generator


def test_a_watcher_that_cannot_start_falls_back_to_polling(
    tmp_path: Path, start: Callable[..., Watcher]
) -> None:
    project = indexed(tmp_path / "p", {"app.py": "X = 1\n"})
    watcher = start(project, open_watch=native_fails, poll_ms=100, rescan_every=1.0)
    assert watcher.mode == "polling"
    section = status_section(project)
    assert section["running"] and section["mode"] == "polling"
    assert "polling" in section["warning"]
    (project.root / "app.py").write_text("def polled():\n    pass\n")
    settled(watcher, has(project, "sym:app.py#polled"))
    (project.root / "sub").mkdir()
    (project.root / "sub/b.py").write_text("def nested():\n    pass\n")
    settled(watcher, has(project, "sym:sub/b.py#nested"))
    assert list(watcher.warnings) == ["watch"]


def test_when_polling_fails_too_it_rescans_periodically(
    tmp_path: Path, start: Callable[..., Watcher]
) -> None:
    project = indexed(tmp_path / "p", {"app.py": "X = 1\n"})
    watcher = start(project, open_watch=nothing_works, rescan_every=0.3)
    assert watcher.mode == "rescan"
    assert "rescanning" in status_section(project)["warning"]
    (project.root / "app.py").write_text("def rescanned():\n    pass\n")
    settled(watcher, has(project, "sym:app.py#rescanned"))


def test_a_locked_store_is_one_warning_and_the_watcher_goes_on(
    tmp_path: Path, start: Callable[..., Watcher]
) -> None:
    import sqlite3

    project = indexed(tmp_path / "p", {"app.py": "X = 1\n"})
    watcher = start(project, save_every=0.1)
    lock = sqlite3.connect(project.paths.store, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        # A save waits out SQLite's busy timeout, so "idle" is not waited on here.
        (project.root / "app.py").write_text("def during_lock():\n    pass\n")
        wait_for(has(project, "sym:app.py#during_lock"))
        wait_for(lambda: "could not save" in (status_section(project)["warning"] or ""))
        assert list(watcher.warnings) == ["store"] and watcher.alive
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    (project.root / "b.py").write_text("def still_watching():\n    pass\n")
    settled(watcher, has(project, "sym:b.py#still_watching"))
    wait_for(lambda: status_section(project)["warning"] is None and not project.unsaved)
    watcher.stop()
    reloaded = Project(project.root).graph
    assert "sym:app.py#during_lock" in reloaded and "sym:b.py#still_watching" in reloaded


def test_saves_are_grouped_apart_from_reindexing(
    tmp_path: Path, start: Callable[..., Watcher]
) -> None:
    import sqlite3

    project = indexed(tmp_path / "p", {"a.py": "X = 1\n", "b.py": "X = 1\n", "c.py": "X = 1\n"})
    watcher = start(project, save_every=3.0)
    reader = sqlite3.connect(project.paths.store)

    def commits() -> int:
        version: int = reader.execute("PRAGMA data_version").fetchone()[0]
        return version

    before = commits()
    for name in ("a", "b", "c"):  # typing in three files, each re-indexed on its own
        (project.root / f"{name}.py").write_text(f"def typed_{name}():\n    pass\n")
        settled(watcher, has(project, f"sym:{name}.py#typed_{name}"))
    assert watcher.updates == 3 and project.unsaved
    assert commits() == before  # nothing written yet
    wait_for(lambda: not project.unsaved)
    assert commits() != before  # then saved, all three in the same grouped save
    reader.close()


def test_an_ignore_file_change_rescans(tmp_path: Path, start: Callable[..., Watcher]) -> None:
    project = indexed(
        tmp_path / "p",
        {
            "app.py": "X = 1\n",
            "gen/out.py": "def generated():\n    pass\n",
        },
    )
    watcher = start(project)
    assert "gen" in watcher.watched
    (project.root / ".gitignore").write_text("gen/\n")
    settled(watcher, lacks(project, "file:gen/out.py"))
    assert "gen" not in watcher.watched and watcher.rescans == 1
    (project.root / ".gitignore").write_text("")
    settled(watcher, has(project, "sym:gen/out.py#generated"))
    assert "gen" in watcher.watched


async def test_run_inside_an_existing_event_loop(tmp_path: Path) -> None:
    import asyncio
    import threading

    project = indexed(tmp_path / "p", {"app.py": "X = 1\n"})
    stop = threading.Event()
    watcher = Watcher(project)
    task = asyncio.create_task(watcher.run(stop))

    async def until(condition: Callable[[], bool]) -> None:
        end = time.monotonic() + DEADLINE
        while not condition():
            assert time.monotonic() < end, "timed out"
            await asyncio.sleep(0.01)

    await until(lambda: watcher.wait_ready(0))
    (project.root / "app.py").write_text("def in_loop():\n    pass\n")
    await until(lambda: "sym:app.py#in_loop" in project.graph and watcher.idle)
    stop.set()
    await asyncio.wait_for(task, DEADLINE)
    assert not project.unsaved and status_section(project)["running"] is False


# -- status and switches -----------------------------------------------------------------------


def test_status_tells_running_from_stopped_and_dead(
    tmp_path: Path, start: Callable[..., Watcher]
) -> None:
    project = indexed(tmp_path / "p", {"app.py": "X = 1\n"})
    assert status_section(project)["running"] is False
    watcher = start(project)
    (project.root / "app.py").write_text("def seen():\n    pass\n")
    settled(watcher, has(project, "sym:app.py#seen"))
    other_process_view = Project(project.root)  # what `theus status` in a shell sees
    from knowledge.watch.state import describe, read_state

    on_disk = describe(read_state(other_process_view.paths))
    assert on_disk["running"] is True and on_disk["mode"] == "native"
    assert on_disk["last_update"] and "app.py" in on_disk["last_change"]
    watcher.stop()
    assert status_section(other_process_view)["running"] is False
    assert status_section(other_process_view)["last_update"] == on_disk["last_update"]


def test_a_dead_watcher_is_not_running(tmp_path: Path) -> None:
    import subprocess

    from knowledge.watch.state import write_state

    project = indexed(tmp_path / "p", {"app.py": "X = 1\n"})
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    write_state(
        project.paths,
        {"running": True, "pid": int(child.stdout), "mode": "native", "last_update": time.time()},
    )
    section = status_section(project)
    assert section["running"] is False and section["last_update"]


def test_kill_switch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watchers: list[Watcher]
) -> None:
    project = indexed(tmp_path / "p", {"app.py": "X = 1\n"})
    configure(monkeypatch, no_watch=True)
    assert maybe_start(project) is None
    assert status_section(project)["switched_off"] is True
    configure(monkeypatch, no_watch=False)
    watcher = maybe_start(project)
    assert watcher is not None
    watchers.append(watcher)
    assert watcher.wait_ready(DEADLINE) and watcher.alive
