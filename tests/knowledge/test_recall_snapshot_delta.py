"""The saved scoring index updates in place: after every kind of change (a file edited, added,
removed or renamed, a schema, a memory, a fact, an episode, a commit, a branch switch, a
rewind) a one-shot command applies only what changed, and ranks exactly as indexes rebuilt
from scratch over the same store (same files, same order, same scores)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from knowledge.core import keys, workers
from knowledge.core.graph import Node
from knowledge.episodes import EpisodeStore
from knowledge.facts.extraction import parse_extraction
from knowledge.facts.layer import FactsLayer
from knowledge.index import git_history
from knowledge.index.project import Project
from knowledge.memdir.crud import add_memory
from knowledge.recall import saved, snapshot
from knowledge.recall.content import frozen_texts
from knowledge.recall.recaller import Recaller, make_recaller
from tests.conftest import run_git, write_tree

DOMAINS = (
    "cart",
    "pricing",
    "orders",
    "invoice",
    "refund",
    "customer",
    "shipping",
    "tax",
    "discount",
    "inventory",
    "payment",
    "ledger",
)


def source(domain: str, other: str) -> str:
    name = domain.title()
    return (
        f'"""The {domain} of the shop: totals, rounding and the {other} it needs."""\n'
        f"from shop import {other}\n\n\n"
        f"class {name}:\n"
        f'    """One {domain}, with its lines and the {other} rules."""\n\n'
        f"    def total(self, items):\n"
        f'        """Sum of the {domain} lines after {other}."""\n'
        f"        return sum({other}.amount(i) for i in items)\n\n"
        f"    def round_{domain}(self, value):\n"
        f"        # the {domain} rounds half up, like the {other} does\n"
        f"        return round(value, 2)\n\n\n"
        f"def amount(item):\n"
        f'    """The amount of one {domain} item."""\n'
        f"    return item.price * item.quantity\n"
    )


def tree() -> dict[str, str]:
    files = {}
    for i, domain in enumerate(DOMAINS):
        other = DOMAINS[(i + 1) % len(DOMAINS)]
        files[f"shop/{domain}.py"] = source(domain, other)
        files[f"tests/test_{domain}.py"] = (
            f"from shop.{domain} import {domain.title()}\n\n\n"
            f"def test_{domain}_total():\n"
            f"    assert {domain.title()}().total([]) == 0\n"
        )
        files[f"docs/{domain}.md"] = (
            f"# {domain.title()}\n\nHow the {domain} works with the "
            f"{other}: totals, rounding, retries.\n"
        )
    files["db/schema.prisma"] = (
        "model Invoice {\n  id Int @id\n  total Decimal\n"
        "  customer Customer @relation(fields: [customerId], "
        "references: [id])\n  customerId Int\n}\n\n"
        "model Customer {\n  id Int @id\n  email String\n}\n"
    )
    files["db/ledger.sql"] = (
        "CREATE TABLE ledger_entry (\n  id INTEGER PRIMARY KEY,\n  amount NUMERIC NOT NULL\n);\n"
    )
    files["README.md"] = "# Shop\n\nCarts, prices, orders, invoices and refunds.\n"
    return files


QUERIES = [
    "cart total",
    "how is the price of an item computed",
    "refund an order twice",
    "tax rate for shipping",
    "Invoice",
    "the ledger posts entries",
    "customer discount",
    "add a test for refunds",
    "payment retries",
    "round half up",
    "inventory amount",
    "Fix the invoice total\n\nThe total ignores discounts when `Invoice.total` runs.",
    "where is the customer email stored",
    "ledger_entry amount",
    "sum of the lines",
    "orders and pricing",
    "docs for shipping",
    "a warehouse robot",
    "total",
    "amount item",
    "we fixed the rounding",
    "the team prefers decimal money",
    "Stripe webhook",
    "refunds go through the ledger",
    "who likes Batman",
    *DOMAINS,
]


@pytest.fixture()
def repo(tmp_path: Path, theus_home: Path) -> Path:
    root = write_tree(tmp_path / "shop", tree())
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start the shop")
    for domain in ("refund", "tax", "ledger"):
        with open(root / f"shop/{domain}.py", "a") as fh:
            fh.write(f"\n\ndef {domain}_reasons():\n    return []\n")
        git(root, "commit", "-q", "-am", f"add {domain} reasons to the {domain} totals")
    index(root)
    saved_now(root)  # the first one: built from every row
    return root


def git(root: Path, *args: str) -> None:
    run_git(root, root.parent, *args)


def index(root: Path) -> None:
    """What `theus index` does: index, then bring the saved index up to date."""
    project = Project(root)
    project.index()
    make_recaller(project, one_shot=True)
    project.close()


def saved_now(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A one-shot command's catch-up; the metas of the base and the delta after it."""
    project = Project(root)
    assert make_recaller(project, one_shot=True).frozen
    path = project.paths.recall_index
    project.close()
    return snapshot.read(path)[1], snapshot.read(saved.delta_path(path))[1]


def assert_ranks_as_rebuilt(root: Path, queries: list[str] = QUERIES) -> None:
    """A one-shot recall (the saved index) against indexes built from a fresh process's
    graph: the same files in the same order, the same hits, the same scores, the same
    definitions."""
    reference = Project(root)
    rebuilt = Recaller(reference.graph, reference.root)
    rebuilt.warm()
    project = Project(root)
    one_shot = make_recaller(project, one_shot=True)
    assert one_shot.frozen and project._graph is None
    # Ties (at a search's candidate cut) fall by the order the indexes hold files in.
    assert one_shot.index._file_path == rebuilt.index._file_path
    assert sorted(one_shot.content._slot, key=one_shot.content._slot.__getitem__) == sorted(
        rebuilt.content._slot, key=rebuilt.content._slot.__getitem__
    )
    for query in queries:
        want, got = rebuilt.recall(query, top=40), one_shot.recall(query, top=40)
        assert got.files == want.files, query
        assert [(h.key, h.kind, h.why, h.layer) for h in got.hits] == [
            (h.key, h.kind, h.why, h.layer) for h in want.hits
        ], query
        assert [h.score for h in got.hits] == pytest.approx(
            [h.score for h in want.hits], rel=1e-9, abs=1e-12
        ), query
        assert got.best_score == pytest.approx(want.best_score, rel=1e-9, abs=1e-12), query
        # The definitions too: their body scores come from the content index's postings.
        assert got.definitions == want.definitions, query
    reference.close()
    project.close()


def overlay_keys(root: Path) -> set[str]:
    path = Project(root).paths.recall_index
    arrays, _ = snapshot.read(saved.delta_path(path))
    return set(snapshot.Strings(arrays["lex.keys"], arrays["lex.key_offsets"]).all())


# -- the changes -------------------------------------------------------------------------------
def edit(root: Path) -> None:
    with open(root / "shop/refund.py", "a") as fh:
        fh.write(
            '\n\ndef refund_twice(order):\n    """Refund an order twice: once per '
            'ledger entry."""\n    return order\n'
        )
    index(root)


def add(root: Path) -> None:
    write_tree(
        root,
        {
            "shop/warehouse.py": '"""A warehouse robot picks the inventory."""\n\n\n'
            "def pick(item):\n    return item\n"
        },
    )
    index(root)


def remove(root: Path) -> None:
    (root / "shop/discount.py").unlink()
    index(root)


def rename(root: Path) -> None:
    (root / "shop/payment.py").rename(root / "shop/payments.py")
    index(root)


def schema(root: Path) -> None:
    with open(root / "db/schema.prisma", "a") as fh:
        fh.write("\nmodel Refund {\n  id Int @id\n  amount Decimal\n}\n")
    index(root)


def memory(root: Path) -> None:
    project = Project(root)
    add_memory(project, "The team prefers decimal money for every invoice total.")
    project.close()


def fact(root: Path) -> None:
    project = Project(root)
    raw = {
        "entities": [{"label": "Batman", "type": "Person", "layer": "PERSONAL"}],
        "facts": [
            {"subject": "Batman", "text": "the user likes Batman", "source": "user"},
            {"subject": "shop/ledger.py", "text": "the ledger is audited weekly", "source": "user"},
        ],
    }
    FactsLayer(project).apply(parse_extraction(json.dumps(raw)), "I like Batman", "user")
    project.close()


def episode(root: Path) -> None:
    project = Project(root)  # as `theus -p` records it: the graph never loaded
    EpisodeStore(project).record(
        "session",
        "We fixed the rounding of the invoice total: it rounds half up now.",
        "s1",
        ["shop/invoice.py"],
    )
    assert not project.graph_loaded
    project.close()


CHANGES: list[Callable[[Path], None]] = [edit, add, remove, rename, schema, memory, fact, episode]


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.__name__)
def test_a_change_is_applied_in_place_and_ranks_as_rebuilt(
    repo: Path, change: Callable[[Path], None]
) -> None:
    base_before, delta_before = saved_now(repo)
    assert not overlay_keys(repo)
    change(repo)
    base_after, delta_after = saved_now(repo)
    assert base_after["id"] == base_before["id"], "the base was rebuilt"
    assert delta_after["seq"] > delta_before["seq"]
    assert overlay_keys(repo), "nothing applied"
    assert_ranks_as_rebuilt(repo)


def test_what_each_kind_of_change_brings_is_found(repo: Path) -> None:
    for change in CHANGES:
        change(repo)
    project = Project(repo)
    one_shot = make_recaller(project, one_shot=True)
    files = {
        q: one_shot.recall(q).files[:2]
        for q in ("refund an order twice", "a warehouse robot", "the Refund model")
    }
    hits = {
        q: [h.key for h in one_shot.recall(q).hits[:3]]
        for q in ("the team prefers decimal money", "who likes Batman", "we fixed the rounding")
    }
    project.close()
    assert files["refund an order twice"][0] == "shop/refund.py"
    assert files["a warehouse robot"][0] == "shop/warehouse.py"
    assert "db/schema.prisma" in files["the Refund model"]
    assert any(k.startswith("mem:") for k in hits["the team prefers decimal money"]), hits
    assert any("batman" in k.lower() for k in hits["who likes Batman"]), hits
    assert any(k.startswith("ep:") for k in hits["we fixed the rounding"]), hits
    assert_ranks_as_rebuilt(repo)


def test_changes_accumulate_over_the_same_base(repo: Path) -> None:
    base = saved_now(repo)[0]
    for change in (edit, memory, edit, add, rename, episode, fact, schema, remove):
        change(repo)
        assert saved_now(repo)[0]["id"] == base["id"]
        assert_ranks_as_rebuilt(repo)


def test_a_large_overlay_merges_into_a_base_equal_to_one_built_from_scratch(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(saved, "MERGE_MIN", 0)  # a small project's overlay merges too
    before = saved_now(repo)[0]
    for domain in DOMAINS:  # every code file: past the share an overlay may hold
        with open(repo / f"shop/{domain}.py", "a") as fh:
            fh.write(f"\n\ndef {domain}_audit():\n    return 'audit'\n")
    memory(repo)
    index(repo)
    base = saved_now(repo)[0]
    assert base["id"] != before["id"], "not merged"
    assert not overlay_keys(repo)
    assert_ranks_as_rebuilt(repo)
    path = Project(repo).paths.recall_index
    merged, _ = snapshot.read(path)
    merged = {k: np.array(v) for k, v in merged.items()}
    path.unlink()
    saved.delta_path(path).unlink()
    saved_now(repo)  # built from every row
    built, _ = snapshot.read(path)
    assert merged.keys() == built.keys()
    for name, array in built.items():
        assert array.dtype == merged[name].dtype and np.array_equal(array, merged[name]), name


def first_base(root: Path, between: Callable[[Project], None] | None = None) -> bool:
    """What `theus index` does on a new store: the snapshot's first base made in other
    processes while the graph saves (`FirstBase`); whether it was used."""
    project = Project(root)
    project.count_texts = frozen_texts
    first = saved.FirstBase(project)
    project.nodes_made = first.start
    try:
        project.index()
        if between is not None:
            between(project)
        used = first.holds(project.store)
        assert saved.current(project, first) is not None
    finally:
        first.close()
        project.close()
    return used


def rebuilt_arrays(root: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The base as made, then as built again from the store's rows."""
    path = Project(root).paths.recall_index
    made = {k: np.array(v) for k, v in snapshot.read(path)[0].items()}
    path.unlink()
    saved.delta_path(path).unlink()
    saved_now(root)
    return made, dict(snapshot.read(path)[0])


@pytest.mark.parametrize("also_saved", [False, True])
def test_a_first_base_made_while_the_graph_saves_equals_one_built_from_its_rows(
    tmp_path: Path, theus_home: Path, monkeypatch: pytest.MonkeyPatch, also_saved: bool
) -> None:
    monkeypatch.setattr(workers, "POOL_THRESHOLD", 1)  # a small project in worker processes
    root = write_tree(tmp_path / "shop", tree())

    def memory_saved(project: Project) -> None:  # a row the labels never saw: not used
        text = "the team prefers decimal money"
        project.graph.upsert(Node(keys.memory_key(text), "memory", text))
        project.save()

    used = first_base(root, memory_saved if also_saved else None)
    assert used is not also_saved
    made, built = rebuilt_arrays(root)
    assert made.keys() == built.keys()
    for name, array in built.items():
        assert array.dtype == made[name].dtype and np.array_equal(array, made[name]), name
    assert_ranks_as_rebuilt(root)


# -- the history part --------------------------------------------------------------------------
def commits(root: Path) -> int:
    """The commits the saved history indexes."""
    return len(make_recaller(Project(root), one_shot=True).history)


def test_a_commit_appends_to_the_history_in_place(repo: Path) -> None:
    base, delta = saved_now(repo)
    indexed = commits(repo)
    git(repo, "commit", "-q", "--allow-empty", "-m", "refund orders through the ledger")
    assert_ranks_as_rebuilt(repo)  # a commit changing no file is in the window, not indexed
    with open(repo / "shop/ledger.py", "a") as fh:
        fh.write("\n# refunds post a negative entry\n")
    git(repo, "commit", "-q", "-am", "refunds go through the ledger")
    index(repo)
    after_base, after = saved_now(repo)
    assert after_base["id"] == base["id"] and after["head"] != delta["head"]
    assert commits(repo) == indexed + 1
    assert_ranks_as_rebuilt(repo)


def test_a_rewind_drops_commits_from_the_history(repo: Path) -> None:
    git(repo, "reset", "-q", "--soft", "HEAD~2")  # the files stay: only the history moves
    assert_ranks_as_rebuilt(repo)
    git(repo, "commit", "-q", "-m", "tax and ledger reasons, together")
    assert_ranks_as_rebuilt(repo)


def test_a_branch_switch_follows_the_other_history(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "side", "HEAD~2")
    with open(repo / "shop/inventory.py", "a") as fh:
        fh.write("\n\ndef restock(item):\n    return item\n")
    git(repo, "commit", "-q", "-am", "restock the inventory")
    index(repo)  # the other branch's files differ: indexed (a rebuild reads them from disk)
    assert_ranks_as_rebuilt(repo)
    git(repo, "checkout", "-q", "main")
    index(repo)
    assert_ranks_as_rebuilt(repo)


def test_commits_leaving_the_window_leave_the_history(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_history, "MAX_COMMITS", 3)
    saved_now(repo)
    for n in range(3):
        git(repo, "commit", "-q", "--allow-empty", "-m", f"tune the cart rounding, step {n}")
        assert_ranks_as_rebuilt(repo)


def test_ties_at_the_candidate_cut_fall_as_rebuilt(tmp_path: Path, theus_home: Path) -> None:
    # More files than a search keeps (`CANDIDATES`), all scoring alike: which ones it keeps
    # follows the order the index holds them in, which must be the rebuilt index's order.
    from knowledge.recall.postings import CANDIDATES

    files = {
        f"widgets/w{i:03d}.py": "def widget():\n    return 1\n" for i in range(CANDIDATES + 60)
    }
    root = write_tree(tmp_path / "widgets", files)
    index(root)
    for i in (0, 7, 250):  # these now come last in the store, and in a rebuilt index
        with open(root / f"widgets/w{i:03d}.py", "a") as fh:
            fh.write("# the same widget\n")
    index(root)
    assert {"file:widgets/w000.py", "sym:widgets/w007.py#widget"} <= overlay_keys(root)
    assert_ranks_as_rebuilt(root, ["widget", "the widget returns one", "the same widget"])


def test_a_memory_added_by_one_command_is_in_the_next_recall_and_p_run(
    repo: Path, theus_home: Path
) -> None:
    # Real processes: `theus memory add`, then `theus recall` and `theus -p` (the scripted
    # model server); no file touched, no index run, the snapshot not rebuilt.
    import os
    import subprocess
    import sys

    from tests.conftest import texts_of
    from tests.scripted_server import ScriptedServer, text

    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update({"THEUS_HOME": str(theus_home), "THEUS_NO_WATCH": "1", "THEUS_NO_EMBEDDINGS": "1"})
    cli = [sys.executable, "-m", "entrypoint", "--path", str(repo)]
    base = saved_now(repo)[0]
    memory = "Refunds are approved by the finance desk before the ledger posts them"
    added = subprocess.run(
        [*cli, "memory", "add", memory], env=env, capture_output=True, text=True, timeout=300
    )
    assert added.returncode == 0, added.stderr
    done = subprocess.run(
        [*cli, "recall", "--json", "who approves refunds"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert results[0]["kind"] == "memory" and "finance desk" in results[0]["name"], results[:3]
    with ScriptedServer([text("The finance desk does.")]) as server:
        asked = subprocess.run(
            [*cli, "-p", "who approves the refunds?"],
            env={**env, "THEUS_BASE_URL": server.url, "THEUS_MODEL": "test-model"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert asked.returncode == 0, asked.stderr
        first = "\n".join(t for m in server.requests[0]["messages"] for t in texts_of(m))
    assert "finance desk" in first
    assert saved_now(repo)[0]["id"] == base["id"]  # added in place, not rebuilt
