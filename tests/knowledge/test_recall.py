"""Recall ranking on small real repositories indexed from disk."""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import pytest

from knowledge.core.graph import Node
from knowledge.index.project import Project
from knowledge.recall.content import ContentIndex, assemble, frozen_texts
from knowledge.recall.hashvec import cosines, embed
from knowledge.recall.intent import intent_of
from knowledge.recall.recaller import Hit, Recaller
from tests.conftest import indexed_project


def recaller_for(project: Project) -> Recaller:
    recaller = Recaller(project.graph, project.root)
    recaller.warm()
    return recaller


def paths(hits: list[Hit]) -> list[str]:
    return list(dict.fromkeys(h.path for h in hits if h.path))


def test_rare_identifier_beats_common_word(tmp_path: Path) -> None:
    files = {
        f"app/handler_{i}.py": f"def handle_request_{i}(request):\n    return request\n"
        for i in range(12)
    }
    files["app/zebra.py"] = "def zebra_checksum(data):\n    return sum(data)\n"
    recaller = recaller_for(indexed_project(tmp_path / "repo", files))
    result = recaller.recall("request handler zebra")
    assert result.hits[0].path == "app/zebra.py"
    assert all(0.0 <= h.score <= 1.0 for h in result.hits)


def test_plural_singular_and_camel_case_queries_match(tmp_path: Path) -> None:
    project = indexed_project(
        tmp_path / "repo",
        {
            "src/ledger.py": "class LedgerBook:\n    def add_entry(self, entry):\n        pass\n",
            "src/tools.py": "class ToolRegistry:\n    pass\n",
            "src/misc.py": "def unrelated():\n    pass\n",
        },
    )
    recaller = recaller_for(project)
    assert recaller.recall("entries").hits[0].key == "sym:src/ledger.py#LedgerBook.add_entry"
    assert recaller.recall("registry of tools").hits[0].key == "sym:src/tools.py#ToolRegistry"
    assert recaller.recall("ledgerBooks").hits[0].key == "sym:src/ledger.py#LedgerBook"
    assert recaller.recall("ledger_book").hits[0].key == "sym:src/ledger.py#LedgerBook"


def test_traversal_brings_in_an_imported_file(tmp_path: Path) -> None:
    project = indexed_project(
        tmp_path / "repo",
        {
            "shop/checkout.py": "from shop import pricing\n\n"
            "def checkout_basket(basket):\n    return pricing.quote(basket)\n",
            "shop/pricing.py": "def quote(items):\n    return 0\n",
            "shop/__init__.py": "",
        },
    )
    result = recaller_for(project).recall("checkout basket", top=20)
    by_key = {h.key: h for h in result.hits}
    assert result.hits[0].path == "shop/checkout.py"
    assert result.hits[0].layer == "HOT"
    pricing = by_key["file:shop/pricing.py"]
    assert pricing.layer == "WARM"
    assert pricing.why == "imported by file:shop/checkout.py"
    assert pricing.score < result.hits[0].score


def test_hash_embedding_never_creates_a_hit_alone(tmp_path: Path) -> None:
    project = indexed_project(
        tmp_path / "repo",
        {
            "src/parsers.py": "def parsers_registry():\n    return []\n",
        },
    )
    query = "parsnip"
    node = project.graph.get("sym:src/parsers.py#parsers_registry")
    assert node is not None
    # The vectors share trigrams, yet no keyword matches: no hit.
    assert cosines(embed(query), [embed(node.label)])[0] > 0.1
    assert recaller_for(project).recall(query).hits == []


def test_content_fallback_finds_a_word_only_in_file_content(tmp_path: Path) -> None:
    project = indexed_project(
        tmp_path / "repo",
        {
            "src/a.py": "def alpha():\n    value = 1\n    # the flibbertigibbet cache is warm\n"
            "    return value\n",
            "src/b.py": "def beta():\n    return 2\n",
        },
    )
    result = recaller_for(project).recall("flibbertigibbet")
    assert paths(result.hits) == ["src/a.py"]
    assert result.hits[0].key == "file:src/a.py"
    assert "text" in result.hits[0].why


def test_content_is_read_without_warm_within_the_call(tmp_path: Path) -> None:
    project = indexed_project(tmp_path / "repo", {"notes/x.py": "VALUE = 'quizzaciously'\n"})
    result = Recaller(project.graph, project.root).recall("quizzaciously")
    assert paths(result.hits) == ["notes/x.py"]


def test_ignored_files_are_never_searched(tmp_path: Path) -> None:
    project = indexed_project(
        tmp_path / "repo",
        {
            ".gitignore": "secret_dir/\n",
            "secret_dir/hidden.py": "# zanzibarian\n",
            "src/a.py": "x = 1\n",
        },
    )
    assert recaller_for(project).recall("zanzibarian").hits == []


def test_one_file_change_updates_the_index_incrementally(tmp_path: Path) -> None:
    files = {f"pkg/mod_{i}.py": f"def function_{i}():\n    pass\n" for i in range(30)}
    files["pkg/target.py"] = "def old_walrus_name():\n    pass\n"
    project = indexed_project(tmp_path / "repo", files)
    recaller = recaller_for(project)
    assert recaller.recall("walrus").hits
    indexed = len(recaller.index.docs)
    (tmp_path / "repo/pkg/target.py").write_text("def narwhal_tusk():\n    pass\n")
    project.update(["pkg/target.py"])
    result = recaller.recall("narwhal tusk")
    assert result.hits[0].key == "sym:pkg/target.py#narwhal_tusk"
    # Only the changed file's nodes were re-tokenised, not the whole graph.
    assert 0 < recaller.index.last_sync_changed <= 4
    assert len(recaller.index.docs) == indexed
    assert all("walrus" not in h.key for h in recaller.recall("walrus").hits)


def test_memory_nodes_are_recalled_like_anything_else(tmp_path: Path) -> None:
    project = indexed_project(tmp_path / "repo", {"src/cart.py": "def total():\n    pass\n"})
    text = "The invoice rounding uses banker's rounding since the audit."
    project.graph.upsert(
        Node(key="mem:1", kind="memory", label=text[:40], summary=text, data={"text": text})
    )
    result = recaller_for(project).recall("invoice rounding")
    assert result.hits[0].key == "mem:1"
    assert result.hits[0].kind == "memory"
    assert result.hits[0].path == ""


def test_path_prefix_filters_results(tmp_path: Path) -> None:
    project = indexed_project(
        tmp_path / "repo",
        {
            "api/orders.py": "def list_orders():\n    pass\n",
            "web/orders.py": "from api import orders\n\ndef render_orders():\n    pass\n",
            "api/__init__.py": "",
        },
    )
    result = recaller_for(project).recall("orders", path_prefix="web/")
    assert paths(result.hits) == ["web/orders.py"]


def test_empty_and_stopword_queries_return_nothing_quickly(tmp_path: Path) -> None:
    project = indexed_project(tmp_path / "repo", {"a.py": "x = 1\n"})
    recaller = recaller_for(project)
    start = time.perf_counter()
    assert recaller.recall("").hits == []
    assert recaller.recall("the of and").hits == []
    assert time.perf_counter() - start < 1.0


def test_a_failing_reranker_fails_open(tmp_path: Path) -> None:
    class Broken:
        def begin(self, query, deadline):  # type: ignore[no-untyped-def]
            def rerank(candidates, graph):  # type: ignore[no-untyped-def]
                raise RuntimeError("model gone")

            return rerank

    project = indexed_project(tmp_path / "repo", {"src/cart.py": "def cart_total():\n    pass\n"})
    recaller = Recaller(project.graph, project.root, reranker=Broken())
    result = recaller.recall("cart total")
    assert result.hits[0].key == "sym:src/cart.py#cart_total"
    assert any("re-rank skipped" in n for n in result.notes)


@pytest.mark.parametrize("compact_min", [4096, 0], ids=["appending", "compacting"])
def test_incremental_index_equals_a_fresh_build_after_random_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compact_min: int
) -> None:
    import random

    from knowledge.core.graph import Edge, Graph
    from knowledge.recall import postings

    monkeypatch.setattr(postings, "COMPACT_MIN", compact_min)
    rng = random.Random(5)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
    graph = Graph()

    def write(rel: str) -> None:
        names = {rng.choice(words) + "_" + rng.choice(words) for _ in range(rng.randint(0, 4))}
        nodes = [Node(f"file:{rel}", "file", rel, rel)]
        nodes += [
            Node(f"sym:{rel}#{n}", "symbol", n, rel, summary=rng.choice(words)) for n in names
        ]
        graph.replace_owner(rel, nodes, [Edge(f"file:{rel}", n.key, "defines") for n in nodes[1:]])

    rels = [f"m/{i}_items.py" for i in range(12)]  # a plural stem: named as "0_items", "0_item"
    for rel in rels:
        write(rel)
    live = Recaller(graph, tmp_path)
    live.sync()
    for _ in range(60):
        rel = rng.choice(rels)
        if rng.random() < 0.2:
            graph.remove_owner(rel)
        else:
            write(rel)
        live.sync()
        fresh = Recaller(graph, tmp_path)
        fresh.sync()
        assert live.index.postings() == fresh.index.postings()
        assert live.index.stem_postings() == fresh.index.stem_postings()
        assert live.index.docs.keys() == fresh.index.docs.keys()
        assert live.index.idents == fresh.index.idents
        query = rng.sample(words, 3)
        assert live.index.search(query).best == fresh.index.search(query).best
        assert live.content._pending.keys() == fresh.content._pending.keys()


def test_file_contents_finish_reading_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import knowledge.recall.recaller as recall_module

    files = {f"src/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(40)}
    files["src/z.py"] = "x = 'thunderclap'\n"
    project = indexed_project(tmp_path / "repo", files)
    monkeypatch.setattr(recall_module, "CONTENT_CATCH_UP_S", 0.0)
    recaller = Recaller(project.graph, project.root)
    first = recaller.recall("thunderclap")
    assert "file contents not fully read yet" in first.notes
    deadline = time.monotonic() + 10
    while not recaller.content.complete and time.monotonic() < deadline:
        time.sleep(0.01)
    assert recaller.content.complete
    assert paths(recaller.recall("thunderclap").hits) == ["src/z.py"]


def test_node_tracker_reports_exactly_what_changed() -> None:
    import random

    from knowledge.core.graph import Graph
    from knowledge.recall.track import NodeTracker

    rng = random.Random(11)
    graph = Graph()
    tracker = NodeTracker()
    seen: dict[str, Node] = {}
    for step in range(300):
        owner = f"f{rng.randrange(30)}.py"
        if rng.random() < 0.25:
            graph.remove_owner(owner)
        else:
            count = rng.randint(1, 6)
            graph.replace_owner(
                owner,
                [
                    Node(f"sym:{owner}#{rng.randrange(8)}-{step % 3}", "symbol", "x", owner)
                    for _ in range(count)
                ],
                [],
            )
        found = tracker.changes(graph)
        assert found is not None
        changed, gone = found
        for node in gone:
            if seen.get(node.key) is node:
                del seen[node.key]
        for node in changed:
            seen[node.key] = node
        current = {n.key: n for n in graph.rx.nodes()}
        assert seen.keys() == current.keys()
        assert all(seen[k] is current[k] for k in current)
    assert tracker.changes(graph) is None


def test_a_late_reranker_is_ignored_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import knowledge.recall.recaller as recall_module

    class Late:
        def begin(self, query, deadline):  # type: ignore[no-untyped-def]
            def rerank(candidates, graph):  # type: ignore[no-untyped-def]
                while time.perf_counter() <= deadline:
                    time.sleep(0.005)
                return list(reversed(candidates))

            return rerank

    project = indexed_project(
        tmp_path / "repo",
        {
            "src/cart.py": "def cart_total():\n    pass\n",
            "src/other.py": "def cart_size():\n    pass\n",
        },
    )
    monkeypatch.setattr(recall_module, "RERANK_BUDGET_S", 0.05)
    plain = recaller_for(project).recall("cart total")
    late = Recaller(project.graph, project.root, reranker=Late()).recall("cart total")
    assert late.timed_out
    assert [h.key for h in late.hits] == [h.key for h in plain.hits]


def test_code_outranks_its_tests_unless_the_request_is_about_tests(tmp_path: Path) -> None:
    recaller = recaller_for(
        indexed_project(
            tmp_path / "repo",
            {
                "shop/discount.py": (
                    "def apply_discount(order, rate):\n    return order.total * rate\n"
                ),
                "tests/test_discount.py": "from shop.discount import apply_discount\n\n"
                "def test_apply_discount_rate():\n"
                "    assert apply_discount(order, 0.5) == 5\n",
            },
        )
    )
    assert paths(recaller.recall("apply discount rate").hits)[0] == "shop/discount.py"
    about_tests = paths(recaller.recall("fix the failing test for apply discount rate").hits)
    assert about_tests[0] == "tests/test_discount.py"
    # What the request is about is read from its head, not from words in passing.
    assert intent_of("why do the specs fail").tests
    assert intent_of("add a pytest fixture").tests
    assert not intent_of("apply discount rate").tests
    assert not intent_of("Fix the rounding of discounts.\n\nAlso added a test.").tests
    # A test that rides along with a change does not make the change about tests.
    for rider in (
        "Fix the rounding of discounts and add a test",
        "Fix the rounding of discounts (with tests)",
        "Fix rounding + tests",
        "Support negative rates, with unit tests",
    ):
        assert not intent_of(rider).tests, rider
    for about in (
        "add tests and fix the rounding",
        "fix the flaky test of discounts",
        "test the rounding with negative rates",
    ):
        assert intent_of(about).tests, about


@pytest.mark.parametrize("compact_min", [4096, 0], ids=["appending", "compacting"])
def test_file_contents_searched_after_edits_score_as_a_fresh_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compact_min: int
) -> None:
    # The content search relies on slot order (a file's passages are consecutive slots,
    # later files take later ones): edits and compactions must keep it.
    import random

    from knowledge.recall import kinds, postings
    from knowledge.recall.content import ContentIndex

    monkeypatch.setattr(postings, "COMPACT_MIN", compact_min)
    rng = random.Random(7)
    words = ["ledger", "entry", "total", "tax", "refund", "order", "cart", "price", "alpha"]
    rels = [f"m/{i}.py" for i in range(8)] + ["tests/test_m.py", "docs/m.md"]

    def write(rel: str) -> Node:
        lines = [
            " ".join(rng.choices(words, k=rng.randint(1, 6))) for _ in range(rng.randint(0, 70))
        ]  # 0 to 3 passages
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("\n".join(lines) + "\n")
        return Node(f"file:{rel}", "file", rel, rel, data={"size": 10})

    live = ContentIndex(tmp_path)
    nodes = {rel: write(rel) for rel in rels}
    live.apply(list(nodes.values()), [])
    live.read()
    searched = 0
    for _ in range(40):
        rel = rng.choice(rels)
        if rng.random() < 0.2 and rel in nodes:
            live.apply([], [nodes.pop(rel)])
        else:
            nodes[rel] = write(rel)
            live.apply([nodes[rel]], [])
        live.read()
        fresh = ContentIndex(tmp_path)
        fresh.apply(list(nodes.values()), [])
        fresh.read()
        intent = intent_of(rng.choice(["fix the ledger", "test the ledger", "document it"]))
        weights = {w: float(rng.randint(1, 3)) for w in rng.sample(words, 4)}
        args = (weights, kinds.wanted_kinds(intent), kinds.factors(intent), weights)
        got, expected = live.search(*args), fresh.search(*args)
        assert got.scores.keys() == expected.scores.keys()
        for field_name in ("scores", "passages", "found"):
            mine, theirs = getattr(got, field_name), getattr(expected, field_name)
            assert all(mine[p] == pytest.approx(theirs[p]) for p in theirs), field_name
        assert got.best == pytest.approx(expected.best)
        assert got.best_passage == pytest.approx(expected.best_passage)
        searched += bool(expected.scores)
    assert searched > 20, "the searches found nothing: nothing was compared"


def test_files_counted_at_once_freeze_as_an_index_that_read_them(tmp_path: Path) -> None:
    """`frozen_texts` (a parse worker's counts) writes what an index reading the same files
    in the same order freezes, and `assemble` puts chunks of them back in any order."""
    rng = random.Random(11)
    words = ["ledger", "entries", "Total", "tax_rate", "refundOrder", "cart", "price", "a1"]
    texts = {
        rel: "\n".join(" ".join(rng.choices(words, k=rng.randint(0, 6))) for _ in range(n))
        for rel, n in [("m/a.py", 75), ("m/b.py", 0), ("docs/m.md", 31), ("tests/t.py", 3)]
    }
    texts["m/blank.py"] = "\n" * 40 + "price\n"  # a blank first passage is kept
    # Every line break `str.splitlines` knows, words beside non-ASCII letters, stop words.
    breaks = ["\r\n", "\r", "\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
    texts["m/breaks.py"] = "".join(
        f"cart{i} the x café_total\u00e9Price{b}" + b * (i % 3) for i, b in enumerate(breaks * 6)
    )
    for rel, text in texts.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    order = list(texts)
    index = ContentIndex(tmp_path)
    index.apply([Node(f"file:{r}", "file", r, r, data={"size": 1}) for r in order], [])
    expected = index.freeze()
    chunks = [frozen_texts([(r, texts[r]) for r in part]) for part in (order[3:], order[:3])]
    for name, found in (
        ("at once", frozen_texts([(r, texts[r]) for r in order])),
        ("assembled", assemble(chunks, order)),
    ):
        assert found.keys() == expected.keys(), name
        assert len(found["content.passage_line"]) > 5, name  # the breaks made lines
        for key, array in expected.items():
            assert array.dtype == found[key].dtype, (name, key)
            assert np.array_equal(array, found[key]), (name, key)
