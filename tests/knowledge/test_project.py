from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from knowledge.core import keys
from knowledge.core.graph import Graph, Node
from knowledge.index import analyse as analyse_module
from knowledge.index.project import Project
from tests.conftest import configure, present, write_tree

FILES = {
    "pkg/__init__.py": "",
    "pkg/cart.py": '"""Cart."""\nfrom pkg.pricing import price_of\n\nclass Cart:\n'
    "    def total(self, items):\n        return sum(price_of(i) for i in items)\n",
    "pkg/pricing.py": "def price_of(item) -> int:\n    return item.price\n",
    "pkg/report.py": "from . import cart\n\ndef summary(c: cart.Cart):\n    return c.total([])\n",
    "README.md": "# Shop\n\nA shop.\n\n## Pricing\n\nHow `price_of` works.\n",
}


def snapshot(graph: Graph) -> tuple[set[str], set[tuple[str, str, str]]]:
    return set(graph.keys()), {(e.src, e.dst, e.kind) for e in graph.edges()}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", FILES)


def test_index_builds_symbols_imports_and_references(repo: Path) -> None:
    project = Project(repo)
    report = project.index()
    assert (report.files, report.parsed) == (5, 5)
    _, edges = snapshot(project.graph)
    assert ("file:pkg/cart.py", "file:pkg/pricing.py", "imports") in edges
    assert ("file:pkg/report.py", "file:pkg/cart.py", "imports") in edges
    assert ("file:pkg/cart.py", "sym:pkg/pricing.py#price_of", "references") in edges
    assert ("file:README.md", "sym:pkg/pricing.py#price_of", "references") in edges
    assert ("sym:pkg/cart.py#Cart", "sym:pkg/cart.py#Cart.total", "contains") in edges


def test_unchanged_reindex_parses_nothing(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Project(repo).index()
    calls: list[str] = []
    real = analyse_module.analyse

    def counted(*a: Any, **k: Any) -> Any:
        calls.append(a[1])
        return real(*a, **k)

    monkeypatch.setattr("knowledge.index.analyse.analyse", counted)
    project = Project(repo)
    report = project.index()
    assert report.parsed == 0 and calls == []
    # Touched but identical content: read and hashed, still not parsed.
    os.utime(repo / "pkg/cart.py", ns=(1, 1))
    report = Project(repo).index()
    assert report.parsed == 0 and calls == []


def test_changed_file_replaces_only_its_own_nodes(repo: Path) -> None:
    project = Project(repo)
    project.index()
    before = snapshot(project.graph)
    (repo / "pkg/pricing.py").write_text(
        "def price_of(item) -> int:\n    return 0\n\ndef discount(item):\n    return 1\n"
    )
    report = project.update(["pkg/pricing.py"])
    assert report.changed == ["pkg/pricing.py"] and report.nodes_added == 1
    after = snapshot(project.graph)
    assert after[0] - before[0] == {"sym:pkg/pricing.py#discount"}
    # Edges from other files into surviving nodes are untouched.
    assert ("file:pkg/cart.py", "sym:pkg/pricing.py#price_of", "references") in after[1]


def test_incremental_result_equals_a_fresh_index(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = Project(repo)
    project.index()
    (repo / "pkg/pricing.py").unlink()
    write_tree(
        repo,
        {
            "pkg/tax.py": "from pkg.cart import Cart\n\ndef vat(c: Cart):\n    pass\n",
            "pkg/cart.py": "from pkg.tax import vat\n\nclass Cart:\n    pass\n",
        },
    )
    project.index()
    project.close()
    incremental = snapshot(Project(repo).graph)
    configure(monkeypatch, home=str(tmp_path / "fresh-home"))
    fresh = Project(repo)
    fresh.index()
    assert snapshot(fresh.graph) == incremental
    assert "file:pkg/pricing.py" not in incremental[0]


def test_memory_nodes_survive_a_reindex(repo: Path) -> None:
    project = Project(repo)
    project.index()
    mem = Node(
        keys.memory_key("use Decimal for prices"),
        "memory",
        "use Decimal for prices",
        source="memdir",
    )
    project.graph.upsert(mem)
    project.graph.add_edge(mem.key, "file:pkg/pricing.py", "derived-from")
    project.save()
    (repo / "pkg/cart.py").write_text("class Cart:\n    pass\n")
    project.index()
    project.close()
    graph = Project(repo).graph
    assert mem.key in graph
    assert [e.dst for e in graph.out_edges(mem.key)] == ["file:pkg/pricing.py"]


def test_gitignore_change_is_followed(repo: Path) -> None:
    project = Project(repo)
    project.index()
    (repo / ".gitignore").write_text("pkg/report.py\n")
    project.index()
    assert "file:pkg/report.py" not in project.graph
    assert "sym:pkg/report.py#summary" not in project.graph


PRISMA = """model User {
  id    Int    @id
  posts Post[]
}

model Post {
  id       Int  @id
  authorId Int
  author   User @relation(fields: [authorId], references: [id])
}
"""
MIGRATION = """CREATE TABLE "Post" ("id" INTEGER PRIMARY KEY, "authorId" INTEGER, "title" TEXT);
ALTER TABLE "Post" ADD CONSTRAINT fk FOREIGN KEY ("authorId") REFERENCES "User"("id");
"""


def test_schema_discovery_is_order_independent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tree(
        tmp_path / "repo",
        {"prisma/schema.prisma": PRISMA, "prisma/migrations/001/migration.sql": MIGRATION},
    )
    project = Project(root)
    project.index()
    graph = project.graph
    post = present(graph.get("table:post"))
    assert post.path == "prisma/schema.prisma" and post.subkind == "prisma"
    # Prisma's definition wins; the migration adds the column Prisma does not declare.
    assert present(graph.get("column:post.authorid")).signature == "authorId Int"
    assert "column:post.title" in graph
    edges = {(e.src, e.dst, e.kind) for e in graph.edges()}
    assert ("column:post.authorid", "column:user.id", "references") in edges
    assert ("table:post", "table:user", "references") in edges
    assert ("file:prisma/migrations/001/migration.sql", "table:post", "defines") in edges
    # Touching the migration alone must not hand the table over to it.
    (root / "prisma/migrations/001/migration.sql").write_text(MIGRATION + "-- touched\n")
    project.update(["prisma/migrations/001/migration.sql"])
    assert present(graph.get("table:post")).path == "prisma/schema.prisma"
    # A new model appears after a schema change.
    (root / "prisma/schema.prisma").write_text(PRISMA + "model Tag {\n  id Int @id\n}\n")
    project.update(["prisma/schema.prisma"])
    assert "table:tag" in graph and "column:tag.id" in graph
    before = snapshot(graph)
    project.close()
    configure(monkeypatch, home=str(tmp_path / "fresh"))
    fresh = Project(root)
    fresh.index()
    assert snapshot(fresh.graph) == before


def test_same_named_models_of_two_sub_projects_stay_apart(tmp_path: Path) -> None:
    """A monorepo with a Prisma schema per app: each app's User is its own table, and each
    app's migrations join its own schema's tables."""
    shop = PRISMA.replace("posts Post[]", "posts Post[]\n  basket String")
    root = write_tree(
        tmp_path / "repo",
        {
            "apps/blog/prisma/schema.prisma": PRISMA,
            "apps/blog/prisma/migrations/001/migration.sql": MIGRATION,
            "apps/shop/prisma/schema.prisma": shop,
        },
    )
    project = Project(root)
    project.index()
    graph = project.graph
    blog, store = "apps/blog/prisma", "apps/shop/prisma"
    tables = {n.key: n.path for n in graph.nodes() if n.kind == "table"}
    assert tables == {
        f"table:{blog}#user": f"{blog}/schema.prisma",
        f"table:{blog}#post": f"{blog}/schema.prisma",
        f"table:{store}#user": f"{store}/schema.prisma",
        f"table:{store}#post": f"{store}/schema.prisma",
    }
    assert f"column:{store}#user.basket" in graph
    assert f"column:{blog}#user.basket" not in graph
    assert f"column:{blog}#post.title" in graph  # the blog's migration, on the blog's Post
    assert f"column:{store}#post.title" not in graph
    edges = {(e.src, e.dst, e.kind) for e in graph.edges()}
    assert (f"table:{store}#post", f"table:{store}#user", "references") in edges
    assert (f"table:{store}#post", f"table:{blog}#user", "references") not in edges


def test_references_follow_ambiguity_as_definitions_come_and_go(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "repo",
        {
            "a.py": "def use():\n    return compute_total([])\n",
            "b.py": "def compute_total(items):\n    return 0\n",
        },
    )
    project = Project(root)
    project.index()
    ref = ("file:a.py", "sym:b.py#compute_total", "references")
    assert ref in snapshot(project.graph)[1]
    (root / "c.py").write_text("def compute_total(items):\n    return 1\n")
    project.update(["c.py"])
    edges = snapshot(project.graph)[1]
    assert ref not in edges and ("file:a.py", "sym:c.py#compute_total", "references") not in edges
    (root / "c.py").unlink()
    project.update(["c.py"])
    assert ref in snapshot(project.graph)[1]
    # A body-only edit of the definition keeps the reference without relinking anything.
    (root / "b.py").write_text("def compute_total(items):\n    return sum(items)\n")
    project.update(["b.py"])
    assert ref in snapshot(project.graph)[1]


def test_a_pool_that_cannot_start_falls_back_to_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {f"m{i}.py": f"def f{i}():\n    pass\n" for i in range(250)}
    root = write_tree(tmp_path / "repo", files)

    class Broken:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise ValueError("bad value(s) in fds_to_keep")

    monkeypatch.setattr("concurrent.futures.ProcessPoolExecutor", Broken)
    report = Project(root).index(workers=2)
    assert report.parsed == 250 and report.symbols == 250


def test_a_data_dir_inside_the_project_is_never_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tree(tmp_path / "repo", {"app.py": "X = 1\n"})
    configure(monkeypatch, home=str(root / "theus-data"))
    project = Project(root)
    write_tree(project.paths.memory, {"MEMORY.md": "- a memory\n"})
    project.index()
    assert sorted(project.files) == ["app.py"]


_EDGE_ORDER = """
import sys
import os
from entrypoint.settings import apply
apply({}, os.environ)  # as `theus` does at start
from pathlib import Path
from knowledge.index.project import Project
project = Project(Path(sys.argv[1]))
project.index()
print([(e.src, e.dst, e.kind) for e in project.graph.edges()])
project.close()
"""


def test_a_full_index_adds_its_edges_in_one_order_whatever_the_hash_seed(tmp_path: Path) -> None:
    import subprocess
    import sys

    files = {
        f"pkg/m{i}.py": "from pkg import core\n\n\ndef use():\n    return core.run()\n"
        for i in range(12)
    }
    files["pkg/core.py"] = "def run():\n    return 1\n"
    root = write_tree(tmp_path / "repo", files)
    orders = []
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "THEUS_HOME": str(tmp_path / seed)}
        run = subprocess.run(
            [sys.executable, "-c", _EDGE_ORDER, str(root)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        orders.append(run.stdout)
    assert "pkg/core.py" in orders[0]
    assert orders[0] == orders[1] == orders[2]


_WRITER = """
import os, signal, sys, time
from pathlib import Path
home, how = Path(sys.argv[1]), sys.argv[2]
# The temp file an atomic write of the vector snapshot makes, with this writer's pid.
(home / f".vectors.idx.{os.getpid()}.k2x9.tmp").write_bytes(b"half a snapshot")
print("written", flush=True)
if how == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(60)
"""


def test_opening_a_project_removes_the_temp_files_of_writers_that_died(repo: Path) -> None:
    import subprocess
    import sys

    first = Project(repo)
    home = first.paths.home
    first.close()
    killed = subprocess.run(
        [sys.executable, "-c", _WRITER, str(home), "killed"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert killed.returncode == -9 and "written" in killed.stdout
    live = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(home), "live"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert live.stdout is not None and live.stdout.readline() == "written\n"
        Project(repo).close()
        left = sorted(p.name.split(".")[3] for p in home.glob(".vectors.idx.*.tmp"))
        assert left == [str(live.pid)], "only the running writer's temp file stays"
    finally:
        live.kill()
        live.wait()
