"""An edit indexed by a process that has not read the graph reads only the part it changes
(`Project._graph_for`), and leaves the store exactly as the whole graph would have: the same
rows in the same order, so recall ranks the same (its tie-break is the rows' order)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from knowledge.core import keys
from knowledge.core.graph import RELATION_EDGE, Node
from knowledge.core.store import Store, StoreError
from knowledge.index.project import Project
from tests.conftest import configure, write_tree

FILES = {
    "pkg/__init__.py": "",
    "pkg/pricing.py": "def compute_total(items):\n    return 0\n\n\ndef price_of(item):\n"
    "    return item.price\n",
    "pkg/cart.py": "from pkg.pricing import compute_total, price_of\n\n\nclass Cart:\n"
    "    def total(self, items):\n        return compute_total(items) + price_of(items)\n",
    "pkg/report.py": "from pkg import cart\n\n\ndef summary(c: cart.Cart):\n"
    "    return compute_total([])\n",
    "pkg/tax.py": "def vat_rate():\n    return 20\n",
    "README.md": "# Shop\n\nHow `compute_total` and `price_of` work.\n",
}

# Each step edits files that exist (no file comes or goes): what the part path takes.
STEPS: list[dict[str, str | bytes]] = [
    # A body edit: no definition changes, the file's own links are made again.
    {"pkg/pricing.py": FILES["pkg/pricing.py"] + "# touched\n"},
    # A definition renamed: its node goes (the files and the memory into it change), the
    # files naming either name are linked again.
    {
        "pkg/pricing.py": "def compute_sum(items):\n    return 0\n\n\ndef price_of(item):\n"
        "    return item.price\n"
    },
    # A second definition of a name: references to it become ambiguous and go.
    {"pkg/tax.py": "def vat_rate():\n    return 20\n\n\ndef price_of(item):\n    return 1\n"},
    # A name defined twice moves within a file: still twice, so it links nothing either way.
    {
        "pkg/tax.py": "def vat_rate():\n    return 20\n\n\nclass Levy:\n"
        "    def price_of(self, item):\n        return 1\n"
    },
    # Imports change, and two files at once.
    {
        "pkg/report.py": "from pkg.tax import vat_rate\n\n\ndef summary():\n"
        "    return vat_rate()\n",
        "pkg/cart.py": FILES["pkg/cart.py"].replace("compute_total", "compute_sum"),
    },
    # A file that no longer reads as text: its nodes go, its state stays.
    {"pkg/tax.py": b"\x00\x01\x02\x03" * 64},
    # And reads again.
    {"pkg/tax.py": "def vat_rate():\n    return 21\n"},
]


# Files that come and go, beside edits (None: the file is deleted). The part path links
# again only the files whose imports now resolve elsewhere, and those naming a definition
# that came or went; the whole graph links every file again.
MOVED: dict[str, str] = {
    "pkg/checkout.py": "from pkg.discount import apply_discount\nfrom pkg import tax\n\n\n"
    "def pay(c):\n    return apply_discount(c) + price_of(c)\n",
    "web/app.js": "import { helper } from './util';\nexport function main() {\n"
    "  return helper();\n}\n",
    "web/lib/use.js": "import thing from '.';\nexport const used = thing;\n",
    "pkg/uses_sub.py": "from pkg.sub import mod\n",
    "pkg/sub/mod.py": "from pkg import tax\n\n\ndef m():\n    return tax.vat_rate()\n",
    "scripts/tool/run.py": "import helper2\n",
    "scripts/tool/helper2.py": "def h():\n    return 1\n",
    "go.mod": "module example.com/shop\n",
    "cmd/main.go": 'package main\n\nimport "example.com/shop/util"\n\n'
    "func main() { util.Help() }\n",
}
MOVES: list[dict[str, str | bytes | None]] = [
    # A module an import named appears: the import resolves, its definition is referenced.
    {"pkg/discount.py": "def apply_discount(c):\n    return c\n"},
    # A second definition of a name in a new file: the references to it go.
    {"pkg/extra.py": "def price_of(item):\n    return 2\n"},
    # And the file goes again: the name is unambiguous again.
    {"pkg/extra.py": None},
    # A rename (one file goes, one comes) beside an edit, in another language too.
    {
        "pkg/tax.py": None,
        "pkg/taxes.py": "def vat_rate():\n    return 20\n",
        "web/util.js": "export function helper() {\n  return 1;\n}\n",
        "pkg/report.py": FILES["pkg/report.py"] + "# touched\n",
    },
    # A package appears: how its folder resolves changes.
    {"pkg/sub/__init__.py": "", "scripts/tool/__init__.py": ""},
    # A Go package gains a file, and a script folder its index (which "." imports).
    {"util/help.go": "package util\n\nfunc Help() {}\n", "web/lib/index.js": "export default 1;\n"},
    # A file other files import, and a memory points into, goes.
    {"pkg/pricing.py": None},
    # Files whose imports no longer resolve, and a module that goes.
    {"pkg/discount.py": None, "web/util.js": None},
]


def dump(project: Project) -> dict[str, list[Any]]:
    """The store's rows in their order; meta (paths, times) and file times left out."""
    conn = sqlite3.connect(project.paths.store)
    try:
        return {
            "nodes": conn.execute("SELECT * FROM nodes ORDER BY rowid").fetchall(),
            "edges": conn.execute("SELECT * FROM edges ORDER BY rowid").fetchall(),
            "files": conn.execute(
                "SELECT path, sha1, language, lines, status, reason FROM files ORDER BY rowid"
            ).fetchall(),
            "links": conn.execute("SELECT * FROM links ORDER BY rowid").fetchall(),
            "changes": conn.execute("SELECT owner FROM changes ORDER BY seq").fetchall(),
        }
    finally:
        conn.close()


def remember(project: Project) -> None:
    """What a conversation attached to the code: a memory derived from a symbol that a step
    renames away, and an entity related to one that stays."""
    graph = project.graph
    memory = Node(keys.memory_key("totals are cents"), "memory", "totals are cents")
    entity = Node(keys.entity_key("Pricing"), "entity", "Pricing")
    graph.upsert(memory)
    graph.upsert(entity)
    graph.add_edge(memory.key, "sym:pkg/pricing.py#compute_total", "derived-from")
    graph.add_edge(entity.key, "sym:pkg/pricing.py#price_of", f"{RELATION_EDGE}DEFINES")
    project.save()


@pytest.fixture
def twins(tmp_path: Path) -> tuple[Path, Path]:
    return write_tree(tmp_path / "part", FILES), write_tree(tmp_path / "whole", FILES)


def index_with(root: Path, whole: bool) -> Project:
    project = Project(root)
    if whole:
        assert len(project.graph) > 0  # read whole before the index
    project.index(workers=1)
    assert project.graph_loaded is whole
    project.close()
    return project


def apply(root: Path, step: Mapping[str, str | bytes | None], stamp: int) -> None:
    write_tree(root, {rel: text for rel, text in step.items() if text is not None})
    for rel, text in step.items():  # both twins' files look alike: the same size, the same time
        if text is None:
            (root / rel).unlink()
        else:
            os.utime(root / rel, ns=(stamp, stamp))


@pytest.mark.parametrize("first", [0, 1, 4])
def test_an_edit_read_in_part_saves_what_the_whole_graph_saves(
    twins: tuple[Path, Path], first: int
) -> None:
    part, whole = twins
    for root in twins:
        Project(root).index(workers=1)
        remember(Project(root))
    stamp = 10**18
    for n, step in enumerate(STEPS[first:]):
        for root in twins:
            apply(root, step, stamp + n)
        index_with(part, whole=False)
        index_with(whole, whole=True)
        assert dump(Project(part)) == dump(Project(whole)), f"after step {first + n}"


@pytest.mark.parametrize("first", [0, 2, 6])
def test_files_that_come_and_go_read_in_part_save_what_the_whole_graph_saves(
    tmp_path: Path, first: int
) -> None:
    twins = [write_tree(tmp_path / name, {**FILES, **MOVED}) for name in ("part", "whole")]
    part, whole = twins
    for root in twins:
        Project(root).index(workers=1)
        remember(Project(root))
    stamp = 10**18
    for n, step in enumerate(MOVES[:first]):  # both at the step the run starts from
        for root in twins:
            apply(root, step, stamp + n)
            index_with(root, whole=True)
    for n, step in enumerate(MOVES[first:], start=first):
        for root in twins:
            apply(root, step, stamp + n)
        index_with(part, whole=False)
        index_with(whole, whole=True)
        assert dump(Project(part)) == dump(Project(whole)), f"after step {n}"
    edges = {(e.src, e.dst, e.kind) for e in Project(part).graph.edges()}
    gone = ("file:pkg/discount.py", "sym:pkg/pricing.py")
    assert not any(dst.startswith(gone) for _, dst, _ in edges)


def test_changes_read_in_part_end_where_a_fresh_index_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the part path leaves (links made again only where a name or an import now lands
    elsewhere) is what indexing the final tree from nothing finds."""
    root = write_tree(tmp_path / "p", {**FILES, **MOVED})
    configure(monkeypatch, home=str(tmp_path / "home"))
    Project(root).index(workers=1)

    def rows(project: Project) -> tuple[list[Any], list[Any]]:
        found = dump(project)
        return sorted(found["nodes"]), sorted(found["edges"])

    steps: list[Mapping[str, str | bytes | None]] = [*STEPS, *MOVES]
    for n, step in enumerate(steps):
        configure(monkeypatch, home=str(tmp_path / "home"))
        apply(root, step, 10**18 + n)
        index_with(root, whole=False)
        incremental = Project(root)
        configure(monkeypatch, home=str(tmp_path / f"fresh-{n}"))
        fresh = Project(root)
        fresh.index(workers=1)
        fresh.close()
        assert fresh.paths.store != incremental.paths.store
        assert rows(fresh) == rows(incremental), f"after step {n}"


def test_an_added_file_resolves_the_imports_that_named_it(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "p", {**FILES, **MOVED})
    Project(root).index(workers=1)
    apply(root, MOVES[0], 10**18)
    index_with(root, whole=False)
    graph = Project(root).graph
    edges = {(e.src, e.dst, e.kind) for e in graph.edges()}
    assert ("file:pkg/checkout.py", "file:pkg/discount.py", "imports") in edges
    assert ("file:pkg/checkout.py", "sym:pkg/discount.py#apply_discount", "references") in edges


def test_the_part_path_keeps_what_other_files_and_memories_point_at(
    twins: tuple[Path, Path],
) -> None:
    part, _ = twins
    Project(part).index(workers=1)
    remember(Project(part))
    apply(part, STEPS[1], 10**18)
    index_with(part, whole=False)
    graph = Project(part).graph
    edges = {(e.src, e.dst, e.kind) for e in graph.edges()}
    memory = keys.memory_key("totals are cents")
    # The renamed definition is gone, with every edge into it (the files that named it and
    # the memory); the edges into the definitions that stay are kept.
    assert "sym:pkg/pricing.py#compute_sum" in graph
    assert "sym:pkg/pricing.py#compute_total" not in graph
    assert not any(dst == "sym:pkg/pricing.py#compute_total" for _, dst, _ in edges)
    assert ("file:pkg/cart.py", "sym:pkg/pricing.py#price_of", "references") in edges
    assert ("file:README.md", "sym:pkg/pricing.py#price_of", "references") in edges
    assert memory in graph and graph.out_edges(memory) == []
    entity = keys.entity_key("Pricing")
    assert [e.dst for e in graph.out_edges(entity)] == ["sym:pkg/pricing.py#price_of"]


def test_a_part_refuses_to_save_an_owner_it_read_in_part(twins: tuple[Path, Path]) -> None:
    part, _ = twins
    project = Project(part)
    project.index(workers=1)
    from knowledge.core.graph import Graph

    graph = Graph()
    project.store.load_owners(graph, ["pkg/cart.py"])
    # pricing.py's nodes are here only as the ends of cart.py's edges.
    assert "sym:pkg/pricing.py#price_of" in graph and graph.whole == {"pkg/cart.py"}
    graph.remove_node("sym:pkg/pricing.py#price_of")
    with pytest.raises(ValueError, match="read in part"):
        project.store.save(graph)
    assert graph.dirty_owners  # kept, nothing written
    assert "sym:pkg/pricing.py#price_of" in Project(part).graph


def fail_the_next_save(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's next save fails as a full disk makes it fail; the later ones work."""
    real = Store.save
    failing = [True]

    def save(self: Store, *args: Any, **kwargs: Any) -> int:
        if failing and failing.pop():
            raise StoreError("disk full")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Store, "save", save)


def test_a_part_that_fails_to_save_is_redone_by_the_next_index(
    twins: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save that fails (a full disk, a lock) drops the part: the same process's next index
    reads the edited files again and leaves the store as the whole graph would."""
    part, whole = twins
    for root in twins:
        Project(root).index(workers=1)
    project = Project(part)
    fail_the_next_save(monkeypatch)
    for n, step in enumerate(STEPS[:2]):  # a rename: definitions change
        for root in twins:
            apply(root, step, 10**18 + n)
        if n == 0:
            with pytest.raises(StoreError):
                project.index(workers=1)
    project.index(workers=1)
    project.close()
    index_with(whole, whole=True)
    assert dump(Project(part)) == dump(Project(whole))


def test_a_part_that_fails_to_save_a_deleted_file_deletes_it_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    twins = [write_tree(tmp_path / name, {**FILES, **MOVED}) for name in ("part", "whole")]
    part, whole = twins
    for root in twins:
        Project(root).index(workers=1)
        apply(root, MOVES[6], 10**18)  # pricing.py, which other files import, goes
    project = Project(part)
    fail_the_next_save(monkeypatch)
    with pytest.raises(StoreError):
        project.index(workers=1)
    assert project.index(workers=1).removed == ["pkg/pricing.py"]
    project.close()
    index_with(whole, whole=True)
    assert dump(Project(part)) == dump(Project(whole))
