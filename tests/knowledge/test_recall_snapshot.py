"""The scoring index on disk: a one-shot recall from the snapshot ranks exactly as the warmed
engine, reads hits straight from the store, and catches up with what the store or HEAD saw
since (in place: tests/knowledge/test_recall_snapshot_delta.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from knowledge.core.store import StoreGraph
from knowledge.core.workers import POOL_THRESHOLD
from knowledge.index.project import Project
from knowledge.memory.context import build_context
from knowledge.recall import snapshot
from knowledge.recall.content import frozen_texts
from knowledge.recall.recaller import Recaller, make_recaller
from knowledge.recall.saved import delta_path
from tests.conftest import file_types_history, indexed_project, write_tree

FILES = {
    "shop/cart.py": '"""Shopping cart."""\nfrom shop import pricing\n\n\nclass Cart:\n'
    '    def total(self, items):\n        """Sum of line prices."""\n'
    "        return sum(pricing.price_of(i) for i in items)\n",
    "shop/pricing.py": '"""Prices with discounts."""\n\n\ndef price_of(item):\n'
    '    """Unit price with discounts."""\n    return item.price\n',
    "shop/orders.py": "from shop.cart import Cart\n\n\ndef checkout(cart: Cart):\n"
    "    # the order total after discounts\n    return cart.total([])\n",
    "tests/test_cart.py": "from shop.cart import Cart\n\n\ndef test_total():\n"
    "    assert Cart().total([]) == 0\n",
    "README.md": "# Shop\n\nCarts, prices and orders.\n",
}
REQUESTS = [
    "cart total",
    "how is the price of an item computed with discounts",
    "Fix checkout total\n\nThe order total ignores discounts when `Cart.total` runs.",
    "add a test for the cart",
    "xylophone",
    "an order checks out twice",
]


def shown(recaller: Recaller, request: str) -> tuple[Any, ...]:
    context = build_context(recaller, request)
    hits = [(h.key, h.score, h.why, h.layer) for h in context.recall.hits]
    return context.recall.files, hits, context.block, context.tokens, context.recall.best_score


def test_a_one_shot_recall_ranks_exactly_as_the_warmed_engine(tmp_path: Path) -> None:
    project = indexed_project(tmp_path / "repo", FILES)
    warmed = make_recaller(project)
    warmed.warm()
    expected = {r: shown(warmed, r) for r in REQUESTS}
    assert make_recaller(project, one_shot=True).frozen  # none yet: built from the store
    project.close()
    reopened = Project(tmp_path / "repo")
    one_shot = make_recaller(reopened, one_shot=True)
    assert one_shot.frozen and isinstance(one_shot.graph, StoreGraph)
    assert reopened._graph is None, "the whole graph must not be loaded"
    for request in REQUESTS:
        assert shown(one_shot, request) == expected[request], request
    reopened.close()


def test_a_snapshot_built_in_worker_processes_ranks_as_the_warmed_engine(tmp_path: Path) -> None:
    """Enough files for a pool: worker processes read and count the files and index the
    labels of the snapshot; the warmed engine does all of it in process."""
    parts = {
        f"shop/parts/part{i:03d}.py": f'"""Part {i} of the catalogue."""\n\n\n'
        f"def price_{i}(item):\n    return item.price * {i}  # with discounts\n"
        for i in range(POOL_THRESHOLD)
    }
    project = indexed_project(tmp_path / "repo", {**FILES, **parts})
    warmed = make_recaller(project)
    warmed.warm()
    expected = {r: shown(warmed, r) for r in [*REQUESTS, "price of part 17"]}
    project.close()
    reopened = Project(tmp_path / "repo")
    one_shot = make_recaller(reopened, one_shot=True)
    assert one_shot.frozen
    for request, found in expected.items():
        assert shown(one_shot, request) == found, request
    reopened.close()


@pytest.mark.parametrize("many", [0, POOL_THRESHOLD])
def test_a_snapshot_from_the_texts_the_index_read_is_the_one_that_reads_the_files(
    tmp_path: Path, many: int
) -> None:
    """`theus index` counts the texts it read for its snapshot (`Project.count_texts`),
    redacted and decoded as the content index reads files, not as the parser does."""
    files: dict[str, str | bytes] = {
        **FILES,
        "shop/keys.py": 'API_KEY = "sk-q8Xv2LrT9mWpZk3nB7cY1dHf"  # the checkout secret\n',
        # Its NEL byte is a line break once decoded as latin-1, not in the UTF-8 that recall
        # reads: the file's passages differ.
        "shop/latin.py": b"# -*- coding: latin-1 -*-\n# prix\x85r\xe9duit\n"
        + b"".join(b"# coupon rule %d\n" % i for i in range(40)),
        "shop/wide.py": "# coupon in UTF-16\n".encode("utf-16"),
        "package-lock.json": '{"name": "shop", "lockfileVersion": 3}\n',
        # Enough for the parse workers: each counts its chunks, the snapshot puts them in
        # the store's order.
        **{f"shop/more/m{i:03d}.py": f"def more_{i}():\n    return {i}\n" for i in range(many)},
    }
    project = Project(write_tree(tmp_path / "repo", files))
    project.count_texts = frozen_texts
    project.index()
    assert make_recaller(project, one_shot=True).frozen
    assert not project.take_counts(), "the snapshot took the counts"
    kept, _ = snapshot.read(project.paths.recall_index)
    kept = {name: array.copy() for name, array in kept.items()}
    for path in (project.paths.recall_index, delta_path(project.paths.recall_index)):
        path.unlink()
    assert make_recaller(project, one_shot=True).frozen  # built again, reading the files
    read, _ = snapshot.read(project.paths.recall_index)
    assert kept.keys() == read.keys()
    for name, array in read.items():
        assert np.array_equal(kept[name], array), name
    project.close()


def test_a_one_shot_recall_through_a_hub_ranks_as_the_warmed_engine(tmp_path: Path) -> None:
    # A traversal step follows a node's first `FAN_OUT` edges: the loaded graph lists a hub's
    # edges newest first, the store oldest first, so "first" must mean one order in both.
    from knowledge.recall.traverse import FAN_OUT

    users = FAN_OUT + 8
    files = {
        "core/ledger.py": '"""The ledger."""\n\n\ndef post_entry(entry):\n'
        '    """Post one ledger entry."""\n    return entry\n'
    }
    for i in range(users):
        files[f"app/user_{i:02d}.py"] = (
            f"from core.ledger import post_entry\n\n\n"
            f"def handle_{i:02d}(item):\n"
            f"    return post_entry(item)\n"
        )
    project = indexed_project(tmp_path / "repo", files)
    warmed = make_recaller(project)
    warmed.warm()
    requests = ["post a ledger entry", "the ledger posts entries twice"]
    expected = {r: shown(warmed, r) for r in requests}
    reached = {h[0] for r in requests for h in expected[r][1] if "user_" in h[0]}
    assert reached, "traversal through the hub brought no importer in: nothing tested"
    make_recaller(project, one_shot=True)  # builds and saves the snapshot
    project.close()
    reopened = Project(tmp_path / "repo")
    one_shot = make_recaller(reopened, one_shot=True)
    assert one_shot.frozen
    for request in requests:
        assert shown(one_shot, request) == expected[request], request
    reopened.close()


def test_a_snapshot_catches_up_with_a_saved_change(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    project = indexed_project(root, FILES)
    make_recaller(project, one_shot=True)  # builds and saves
    assert make_recaller(project, one_shot=True).frozen
    (root / "shop/refunds.py").write_text("def refund_order(order):\n    return order\n")
    project.update(["shop/refunds.py"])
    again = make_recaller(project, one_shot=True)
    assert not again.frozen  # a change not saved yet: the graph holds it, the store not
    assert again.recall("refund order").files[0] == "shop/refunds.py"
    project.save()
    fresh = make_recaller(project, one_shot=True)
    assert fresh.frozen and fresh.recall("refund order").files[0] == "shop/refunds.py"
    project.close()


def test_a_broken_snapshot_is_rebuilt(tmp_path: Path) -> None:
    project = indexed_project(tmp_path / "repo", FILES)
    make_recaller(project, one_shot=True)
    project.paths.recall_index.write_bytes(b"THEUSIDX" + b"\xff" * 40)
    recaller = make_recaller(project, one_shot=True)
    assert recaller.frozen and recaller.recall("cart total").files[0] == "shop/cart.py"
    project.close()


def test_an_episode_saved_after_the_snapshot_is_recalled_without_a_rebuild(tmp_path: Path) -> None:
    # Every headless run saves an episode: the next one-shot command finds it, and adds it to
    # the snapshot without rebuilding the rest.
    from knowledge.episodes import EpisodeStore
    from knowledge.recall import snapshot

    project = indexed_project(tmp_path / "repo", FILES)
    make_recaller(project, one_shot=True)
    base = snapshot.read(project.paths.recall_index)[1]["id"]
    assert (
        EpisodeStore(project).record("session", "Fixed the cart total rounding.", "s1") is not None
    )
    project.save()
    recaller = make_recaller(project, one_shot=True)
    assert recaller.frozen
    assert recaller.recall("cart total rounding").hits[0].kind == "episode"
    assert snapshot.read(project.paths.recall_index)[1]["id"] == base
    project.close()


def test_a_one_shot_recall_votes_with_the_history_as_the_warmed_engine(tmp_path: Path) -> None:
    root = file_types_history(tmp_path / "repo", tmp_path)
    project = Project(root)
    project.index()
    requests = ["add support for kotlin files", "walk the files", "support for zig"]
    warmed = make_recaller(project)
    warmed.warm()
    expected = {r: shown(warmed, r) for r in requests}
    assert "changed by similar commits" in warmed.recall(requests[0]).hits[0].why
    make_recaller(project, one_shot=True)  # builds and saves the snapshot
    project.close()
    reopened = Project(root)
    one_shot = make_recaller(reopened, one_shot=True)
    assert one_shot.frozen
    for request in requests:
        assert shown(one_shot, request) == expected[request], request
    reopened.close()
