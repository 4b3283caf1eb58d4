from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge.core.graph import Edge, Graph, Node
from tests.conftest import present

KINDS = ("file", "symbol", "memory")


def state(graph: Graph) -> tuple[object, ...]:
    nodes = sorted((n.key, n.kind, n.label) for n in graph.nodes())
    return tuple(nodes), frozenset(graph.edges())


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["upsert", "remove", "replace"]),
            st.integers(0, 12),
            st.sampled_from(KINDS),
            st.integers(0, 3),
        )
    )
)
def test_kind_index_owners_and_edges_stay_consistent(ops) -> None:  # type: ignore[no-untyped-def]
    graph = Graph()
    version, content = graph.version, state(graph)
    for op, n, kind, owner in ops:
        key = f"k{n}"
        if op == "upsert":
            graph.upsert(Node(key, kind, key), owner=f"o{owner}")
        elif op == "remove":
            graph.remove_node(key)
        else:
            nodes = [Node(f"k{n}", kind, "a"), Node(f"k{n + 1}", kind, "b")]
            graph.replace_owner(f"o{owner}", nodes, [Edge(f"k{n}", f"k{n + 1}", "contains")])
        # Derived data memoizes on the version: it must move whenever the content did.
        if state(graph) != content:
            assert graph.version > version
        assert graph.version >= version
        version, content = graph.version, state(graph)
        for k in KINDS:
            assert sorted(x.key for x in graph.nodes(k)) == sorted(
                x.key for x in graph.nodes() if x.kind == k
            )
        assert sum(v for k, v in graph.counts().items() if k != "edges") == len(graph)
        owned = [key for o in graph.owners() for key in graph.owned(o)]
        assert sorted(owned) == sorted(graph.keys())
        for edge in graph.edges():
            assert edge.src in graph and edge.dst in graph


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["edge", "drop-edges", "remove", "replace"]),
            st.integers(0, 9),
            st.integers(0, 9),
            st.integers(0, 2),
        ),
        max_size=40,
    )
)
def test_neighbours_follow_every_edit(ops) -> None:  # type: ignore[no-untyped-def]
    # `neighbours` remembers what it ordered: any edit to a node's edges must show, and the
    # answer is the one a graph built afresh from the same nodes and edges gives.
    graph = Graph()
    for n in range(10):
        graph.upsert(Node(f"k{n}", "file", f"k{n}"), owner=f"o{n % 3}")
    for op, a, b, limit in ops:
        if op == "edge":
            graph.add_edge(f"k{a}", f"k{b}", "imports")
        elif op == "drop-edges":
            graph.remove_out_edges(f"k{a}")
        elif op == "remove":
            graph.remove_node(f"k{a}")
            graph.upsert(Node(f"k{a}", "file", f"k{a}"), owner=f"o{a % 3}")
        else:
            graph.replace_owner(
                f"o{b % 3}", [Node(f"k{b}", "file", "x")], [Edge(f"k{b}", f"k{a}", "references")]
            )
        fresh = Graph()
        fresh.load(
            [(n, graph.owner_of(n.key) or "") for n in graph.nodes()],
            [(e.src, e.dst, e.kind) for e in graph.edges()],
        )
        for n in range(10):
            assert graph.neighbours(f"k{n}", limit + 1) == fresh.neighbours(f"k{n}", limit + 1)


def test_neighbours_come_in_one_order_however_edges_were_added() -> None:
    edges = [Edge("hub", f"u{i}", "imports") for i in range(6)] + [
        Edge(f"u{i}", "hub", "imports") for i in range(6)
    ]
    graphs = []
    for order in (edges, edges[::-1]):
        graph = Graph()
        for key in ["hub", *(f"u{i}" for i in range(6))]:
            graph.upsert(Node(key, "file", key))
        for edge in order:
            graph.add_edge(edge.src, edge.dst, edge.kind)
        graphs.append(graph.neighbours("hub", 4))
    assert graphs[0] == graphs[1]
    assert graphs[0][0] == [(f"u{i}", "imports") for i in range(4)]
    assert graphs[0][2] == 12


def test_keys_survive_index_reuse() -> None:
    graph = Graph()
    graph.upsert(Node("a", "file", "a"))
    graph.upsert(Node("b", "file", "b"))
    graph.remove_node("a")
    graph.upsert(Node("c", "file", "c"))  # rustworkx reuses a's index here
    graph.add_edge("c", "b", "imports")
    assert graph.get("a") is None and present(graph.get("c")).label == "c"
    assert graph.out_edges("c") == [Edge("c", "b", "imports")]
    assert not graph.add_edge("c", "b", "imports"), "edges are added once"
    assert not graph.add_edge("c", "missing", "imports")


def test_edges_added_at_once_are_added_as_one_at_a_time() -> None:
    graph = Graph()
    for key in ("a", "b", "c"):
        graph.upsert(Node(key, "file", key), owner=key)
    graph.take_dirty()
    version = graph.version
    edges = [("a", "b", "imports"), ("a", "b", "imports"), ("a", "b", "references")]
    edges += [("a", "a", "imports"), ("a", "missing", "imports"), ("c", "b", "imports")]
    assert graph.add_edges(edges) == 3, "a repeat, a loop and an unknown end are not added"
    assert set(graph.edges()) == {
        Edge("a", "b", "imports"),
        Edge("a", "b", "references"),
        Edge("c", "b", "imports"),
    }
    assert graph.take_dirty() == {"a", "c"} and graph.version > version
    version = graph.version
    assert graph.add_edges([("a", "b", "imports")]) == 0
    assert graph.version == version and not graph.take_dirty(), "nothing added, nothing changed"


def test_a_new_files_nodes_take_the_slots_one_upsert_each_would() -> None:
    # The store writes rows in the graph's order: a new owner's nodes, added at once, take
    # the slots (vacant ones first) and make the edges that upserting them one by one would.
    nodes = [Node(f"f/{i}", "symbol", f"s{i}") for i in range(4)]
    edges = [Edge("f/0", f"f/{i}", "contains") for i in range(1, 4)] + [
        Edge("f/3", "old", "references")
    ]
    graphs = []
    for at_once in (True, False):
        graph = Graph()
        for i in range(5):
            graph.upsert(Node(f"gone{i}", "file", "x"), owner="before")
        graph.upsert(Node("old", "file", "old"), owner="old")
        graph.remove_owner("before")  # five vacant slots
        if at_once:
            graph.replace_owner("f", nodes, edges)
        else:
            for node in nodes:
                graph.upsert(node, owner="f")
            for edge in edges:
                graph.add_edge(edge.src, edge.dst, edge.kind)
        graphs.append(
            ([n.key for n in graph.nodes()], list(graph.edges()), graph.owned("f"), graph.counts())
        )
    assert graphs[0] == graphs[1]


def test_kill_switches_share_one_rule() -> None:
    from tests.conftest import from_env

    settings = from_env(
        {
            "THEUS_NO_WATCH": "1",
            "THEUS_NO_EMBEDDINGS": "true",
            "THEUS_NO_MEMDIR": "0",
            "THEUS_NO_EPISODES": "",
            "THEUS_NO_KNOWLEDGE_INJECT": "off",
        }
    )
    assert settings.is_off("watch") and settings.is_off("EMBEDDINGS")
    assert not settings.is_off("memdir") and not settings.is_off("episodes")
    assert not settings.is_off("knowledge_inject")
    assert settings.switched_off() == ["THEUS_NO_EMBEDDINGS", "THEUS_NO_WATCH"]
