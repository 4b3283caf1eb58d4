"""The label index's search rules that the benchmark leans on: a common word only adds to what
rarer words found, and a search returns its best files only."""

from __future__ import annotations

from knowledge.core.graph import Node
from knowledge.core.keys import file_key, symbol_key
from knowledge.recall.lexical import COMMON_POSTINGS, LexicalIndex
from knowledge.recall.postings import CANDIDATES


def symbol(path: str, name: str, summary: str = "") -> Node:
    return Node(symbol_key(path, name), "symbol", name, path, summary=summary)


def index_of(nodes: list[Node]) -> LexicalIndex:
    index = LexicalIndex()
    files = sorted({n.path for n in nodes})
    index.apply([Node(file_key(p), "file", p, p) for p in files] + nodes, [])
    return index


def test_a_common_word_only_adds_to_what_a_rarer_word_found() -> None:
    # "widget" names a symbol in more files than a word may start a search from.
    common = [symbol(f"mod{i}.py", "widget") for i in range(COMMON_POSTINGS + 50)]
    index = index_of([*common, symbol("box.py", "widget", summary="Draws the gizmo.")])

    match = index.search(["gizmo", "widget"])
    assert list(match.best) == ["box.py"]
    alone = index.search(["gizmo"]).best["box.py"]
    assert match.best["box.py"] > alone  # the common word still adds where it is found


def test_when_every_word_is_common_the_search_starts_from_what_they_name() -> None:
    named = [symbol(f"mod{i}.py", "widget") for i in range(COMMON_POSTINGS + 50)]
    mentioned = [symbol(f"doc{i}.py", "other", summary="a widget") for i in range(50)]
    match = index_of(named + mentioned).search(["widget"])
    assert match.best and all(path.startswith("mod") for path in match.best)


def test_a_search_returns_its_best_files_only() -> None:
    # More files match than a search returns: those naming the word beat those mentioning it.
    share = CANDIDATES * 3 // 4
    naming = [symbol(f"a{i}.py", "alpha") for i in range(share)]
    mentioning = [symbol(f"b{i}.py", "other", summary="beta") for i in range(share)]
    best = index_of(naming + mentioning).search(["alpha", "beta"]).best
    assert len(best) == CANDIDATES
    assert {n.path for n in naming} <= best.keys()
    assert max(v for p, v in best.items() if p.startswith("b")) < min(
        v for p, v in best.items() if p.startswith("a")
    )


def test_a_new_index_made_at_once_freezes_as_one_made_node_by_node() -> None:
    # A new index takes all its nodes in one pass (`apply` on an empty index); one that
    # takes them one at a time, or again after a change, must freeze to the same arrays.
    import numpy as np

    nodes = [
        symbol(f"pkg/m{i % 7}.py", f"Parser{i}.parse_tokens", "Reads tokens.") for i in range(40)
    ]
    nodes += [
        Node(file_key(f"pkg/m{i}.py"), "file", f"m{i}.py", path=f"pkg/m{i}.py") for i in range(7)
    ]
    nodes += [Node("memory:note", "memory", "note", summary="tokens are parsed lazily")]
    owners = {n.key: n.path or n.key for n in nodes}
    at_once = LexicalIndex()
    at_once.apply(nodes, [])
    one_by_one = LexicalIndex()
    for node in nodes:
        one_by_one.apply([node], [])
    frozen = at_once.freeze(owners)
    assert frozen.keys() == one_by_one.freeze(owners).keys()
    assert all(np.array_equal(frozen[k], one_by_one.freeze(owners)[k]) for k in frozen)
    assert at_once.postings() == one_by_one.postings()
    assert at_once.stem_postings() == one_by_one.stem_postings()
    assert at_once.idf("token") == one_by_one.idf("token") > 0
