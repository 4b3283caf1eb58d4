"""The dashboard server over real HTTP on 127.0.0.1: routes, paging, filters, live reads."""

from __future__ import annotations

import gzip
import http.client
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from knowledge.core.graph import Edge, Graph, Node
from knowledge.index.project import Project
from tests.conftest import indexed_project, write_tree
from theus.dashboard.server import Dashboard, start_dashboard

FILES = {
    "src/app/cart.py": (
        '"""Shopping cart."""\n'
        "from src.app.pricing import price_of\n\n\n"
        "class Cart:\n"
        '    """Holds line items."""\n\n'
        "    def total(self, items):\n"
        "        return sum(price_of(i) for i in items)\n"
    ),
    "src/app/pricing.py": ('"""Prices."""\n\n\ndef price_of(item):\n    return item.price\n'),
    "src/util/strings.py": "def slug(text):\n    return text.lower()\n",
    "docs/guide.md": "# Guide\n\nHow to use the cart.\n\n## Install\n\npip install it\n",
    "prisma/schema.prisma": (
        "model User {\n  id Int @id\n  email String\n  posts Post[]\n}\n\n"
        "model Post {\n  id Int @id\n  authorId Int\n"
        "  author User @relation(fields: [authorId], references: [id])\n}\n"
    ),
    ".env": "AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP\nOPENAI_API_KEY=sk-envcanary0123456789abcdef\n",
    "src/leaky.py": '"""Uses sk-proj-docCanary0123456789abcdefgh to call out."""\n',
}


class Client:
    """Real HTTP against the running server; Host and Origin can be forged per request."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token

    def request(
        self,
        path: str,
        *,
        method: str = "GET",
        token: str | None = "header",
        host: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        sent = {"Host": host or f"127.0.0.1:{self.port}", **(headers or {})}
        if token == "header":
            sent["X-Theus-Token"] = self.token
        elif token is not None:
            sent["X-Theus-Token"] = token
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, headers=sent)
            resp = conn.getresponse()
            body = resp.read()
            got = {k.lower(): v for k, v in resp.getheaders()}
            if got.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            return resp.status, got, body
        finally:
            conn.close()

    def json(self, path: str, **kw: Any) -> Any:
        status, _, body = self.request(path, **kw)
        assert status == 200, (status, body[:300])
        return json.loads(body)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    proj = indexed_project(tmp_path / "repo", FILES)
    yield proj
    proj.close()


@pytest.fixture
def served(project: Project) -> Iterator[tuple[Client, Project]]:
    url, stop = start_dashboard(project)
    port = int(url.split(":")[2].split("/")[0])
    token = url.split("token=")[1]
    yield Client(port, token), project
    stop()


def all_pages(client: Client, query: str, limit: int) -> list[dict[str, Any]]:
    pages = [client.json(f"/api/graph?{query}&limit={limit}")]
    while pages[-1]["next_cursor"]:
        pages.append(
            client.json(f"/api/graph?{query}&limit={limit}&cursor={pages[-1]['next_cursor']}")
        )
    return pages


# -- routes -----------------------------------------------------------------------------------
def test_page_and_assets_are_served_with_strict_headers(served: tuple[Client, Project]) -> None:
    client, _ = served
    status, headers, body = client.request("/dashboard", token=None)
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b'<canvas id="graph"' in body
    assert "default-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    for asset, ctype in (("app.js", "text/javascript"), ("app.css", "text/css")):
        status, headers, text = client.request(f"/dashboard/{asset}", token=None)
        assert status == 200 and headers["content-type"].startswith(ctype)
        assert b"https://" not in text and b"http://" not in text  # nothing from the internet
    status, headers, _ = client.request("/?token=x", token=None)
    assert status == 302 and headers["location"] == "/dashboard?token=x"


def test_health_reveals_only_liveness(served: tuple[Client, Project]) -> None:
    client, _ = served
    status, headers, body = client.request("/api/health", token=None)
    assert status == 200 and json.loads(body) == {"ok": True}
    assert "access-control-allow-origin" not in headers


def test_status_route(served: tuple[Client, Project]) -> None:
    client, project = served
    status, headers, body = client.request("/api/status")
    assert status == 200 and headers["cache-control"] == "no-store"
    st = json.loads(body)
    counts = project.graph.counts()
    assert st["nodes"] == len(project.graph) and st["edges"] == counts["edges"]
    assert st["counts"]["file"] == counts["file"] and st["counts"]["table"] == 2
    assert {"src", "src/app", "prisma", "docs"} <= {f for f, _ in st["folders"]}
    assert st["sections"]["index"]["root"] == str(project.root)
    assert st["title"] == "repo"
    assert client.json("/api/status?sections=0")["sections"] == {}


def test_graph_route_first_page_is_most_important_first(served: tuple[Client, Project]) -> None:
    client, project = served
    page = client.json("/api/graph?limit=5")
    assert page["total"] == len(project.graph) and len(page["nodes"]) == 5
    weights = [n["w"] for n in page["nodes"]]
    assert weights == sorted(weights, reverse=True)
    node = page["nodes"][0]
    assert set(node) >= {"id", "key", "kind", "label", "path", "x", "y", "w", "deg"}
    assert page["next_cursor"] == f"{page['version']}.5"


def test_paging_delivers_every_node_and_edge_exactly_once(
    served: tuple[Client, Project],
) -> None:
    client, project = served
    pages = all_pages(client, "", 4)
    ids = [n["id"] for p in pages for n in p["nodes"]]
    assert len(ids) == len(set(ids)) == len(project.graph)
    seen: set[int] = set()
    edges = []
    for p in pages:
        seen |= {n["id"] for n in p["nodes"]}
        for src, dst, _kind in p["edges"]:
            assert src in seen and dst in seen  # both ends known when the edge arrives
        edges += [tuple(e) for e in p["edges"]]
    assert len(edges) == project.graph.edge_count()
    keys = {n["id"]: n["key"] for p in pages for n in p["nodes"]}
    assert {(keys[s], keys[d], k) for s, d, k in edges} == {
        (e.src, e.dst, e.kind) for e in project.graph.edges()
    }


def test_graph_filters(served: tuple[Client, Project]) -> None:
    client, _ = served
    symbols = client.json("/api/graph?kind=symbol")["nodes"]
    assert symbols and {n["kind"] for n in symbols} == {"symbol"}
    tables = client.json("/api/graph?kind=table,column")["nodes"]
    assert {n["kind"] for n in tables} == {"table", "column"}
    in_app = client.json("/api/graph?folder=src/app")["nodes"]
    assert in_app and all(n["path"].startswith("src/app/") for n in in_app)
    assert {n["path"] for n in client.json("/api/graph?folder=src")["nodes"]} >= {
        "src/app/cart.py",
        "src/util/strings.py",
    }
    found = client.json("/api/graph?q=cart&limit=3")["nodes"]
    assert found[0]["label"] == "Cart"
    assert client.json("/api/graph?q=zzzz-nothing")["total"] == 0
    only_files = client.json("/api/graph?q=cart&kind=file")["nodes"]
    assert [n["key"] for n in only_files] == ["file:src/app/cart.py"]


def test_neighbourhood_query(served: tuple[Client, Project]) -> None:
    client, _ = served
    one = client.json("/api/graph?node=file:src/app/cart.py&depth=1")
    keys = [n["key"] for n in one["nodes"]]
    assert keys[0] == "file:src/app/cart.py" and one["nodes"][0]["hop"] == 0
    assert {"sym:src/app/cart.py#Cart", "file:src/app/pricing.py"} <= set(keys)
    assert {n["hop"] for n in one["nodes"]} == {0, 1}
    focus = one["focus"]
    assert focus["key"] == "file:src/app/cart.py" and focus["summary"] == "Shopping cart."
    edges = {(nb["key"], nb["edge"], nb["dir"]) for nb in focus["neighbours"]}
    assert ("file:src/app/pricing.py", "imports", "out") in edges
    near = {n["key"] for n in client.json("/api/graph?node=sym:src/app/cart.py%23Cart")["nodes"]}
    far = client.json("/api/graph?node=sym:src/app/cart.py%23Cart&depth=2")["nodes"]
    assert "file:src/app/pricing.py" not in near
    assert "file:src/app/pricing.py" in {n["key"] for n in far if n["hop"] == 2}
    zero = client.json("/api/graph?node=file:src/app/cart.py&depth=0")
    assert [n["key"] for n in zero["nodes"]] == ["file:src/app/cart.py"]
    files = client.json("/api/graph?node=file:src/app/cart.py&depth=2&kind=file")["nodes"]
    assert {n["kind"] for n in files[1:]} == {"file"}


def test_bad_graph_queries_get_clear_errors(served: tuple[Client, Project]) -> None:
    client, _ = served
    for query, code in (
        ("limit=0", 400),
        ("limit=abc", 400),
        ("limit=999999", 400),
        ("depth=9", 400),
        ("kind=bogus", 400),
        ("cursor=nonsense", 400),
        ("node=file:nope.py", 404),
    ):
        status, _, body = client.request(f"/api/graph?{query}")
        assert status == code, query
        assert "error" in json.loads(body)
    status, _, _ = client.request("/api/nope")
    assert status == 404


def test_cursor_pins_a_snapshot_until_it_is_evicted(served: tuple[Client, Project]) -> None:
    client, project = served
    first = client.json("/api/graph?limit=2")
    project.graph.upsert(Node("mem:a", "memory", "a new memory"))
    # The cursor still pages the old snapshot: same total, no sign of the new node.
    second = client.json(f"/api/graph?limit=200&cursor={first['next_cursor']}")
    assert second["version"] == first["version"]
    assert first["total"] == second["total"]
    for i in range(4):  # newer snapshots push the pinned one out
        project.graph.upsert(Node(f"mem:{i}", "memory", f"memory {i}"))
        client.json("/api/graph?limit=1")
    status, _, body = client.request(f"/api/graph?cursor={first['next_cursor']}")
    assert status == 409 and json.loads(body)["version"] == project.graph.version


def test_database_route_lists_prisma_tables_and_foreign_keys(
    served: tuple[Client, Project],
) -> None:
    client, _ = served
    db = client.json("/api/database")
    tables = {t["name"]: t for t in db["tables"]}
    assert set(tables) == {"Post", "User"}
    assert tables["Post"]["path"] == "prisma/schema.prisma"
    author = next(c for c in tables["Post"]["columns"] if c["name"] == "authorId")
    assert author["type"] == "Int"
    assert author["references"] == {
        "table": "User",
        "column": "id",
        "key": "column:user.id",
        "resolved": True,
    }
    assert tables["User"]["referenced_by"] == ["Post"]
    assert {
        "from_table": "Post",
        "from_column": "authorId",
        "to_table": "User",
        "to_column": "id",
        "resolved": True,
    } in db["foreign_keys"]


def test_schema_route(served: tuple[Client, Project]) -> None:
    client, _ = served
    schema = client.json("/api/schema")
    assert schema["node_kinds"]["table"] == 2
    assert schema["node_kinds"]["memory"] == 0  # every kind is listed
    assert schema["edge_kinds"]["references"] >= 1
    assert schema["schema_files"] == [
        {"path": "prisma/schema.prisma", "language": "prisma", "tables": 2}
    ]
    assert "summary" in schema["node_fields"]


def test_injected_status_provider_and_its_failure(tmp_path: Path) -> None:
    graph = Graph()
    graph.upsert(Node("file:a.py", "file", "a.py", path="a.py"))
    calls = {"n": 0}

    def provider() -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError("watcher gone")
        return {"watcher": {"state": "running"}}

    dash = Dashboard(lambda: graph, status=provider).start()
    try:
        client = Client(dash.port, dash.token)
        assert client.json("/api/status")["sections"] == {"watcher": {"state": "running"}}
        failed = client.json("/api/status")["sections"]
        assert "watcher gone" in failed["status"]["error"]
    finally:
        dash.stop()


def test_secrets_never_appear_in_any_answer(served: tuple[Client, Project]) -> None:
    client, project = served
    bodies = [
        client.request(r)[2]
        for r in (
            "/api/status",
            "/api/database",
            "/api/schema",
            "/api/graph?limit=20000",
            "/api/graph?q=sk",
            "/api/graph?q=env",
        )
    ]
    keys = [quote(k) for k in project.graph.keys()]  # noqa: SIM118 - a list, not a view
    bodies += [client.request(f"/api/graph?node={key}&depth=1")[2] for key in keys]
    text = b"\n".join(bodies)
    for canary in (b"AKIAABCDEFGHIJKLMNOP", b"sk-envcanary", b"docCanary", b".env"):
        assert canary not in text
    # The leaky docstring is indexed, but its key shape is redacted on the way out.
    leaky = client.json("/api/graph?node=file:src/leaky.py&depth=0")["focus"]
    assert leaky["summary"] == "Uses [redacted:openai-key] to call out."


def test_a_fresh_process_serves_the_persisted_store(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", FILES)
    indexer = Project(root)
    indexer.index()
    expected = len(indexer.graph)
    indexer.close()
    project = Project(root)  # as `theus dashboard` run on its own: nothing loaded yet
    url, stop = start_dashboard(project)
    try:
        port, token = int(url.split(":")[2].split("/")[0]), url.split("token=")[1]
        client = Client(port, token)
        results: list[int] = []
        threads = [
            threading.Thread(
                target=lambda: results.append(client.json("/api/status?sections=0")["nodes"])
            )
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [expected] * 4
    finally:
        stop()
        project.close()


# -- live graph -------------------------------------------------------------------------------
def test_server_keeps_answering_while_the_graph_is_reindexed(
    served: tuple[Client, Project],
) -> None:
    client, project = served
    stop = threading.Event()
    rounds = {"n": 0}
    errors: list[BaseException] = []

    def reindex() -> None:
        try:
            i = 0
            while not stop.is_set():
                i += 1
                body = "".join(f"def fn_{i}_{j}():\n    return {j}\n" for j in range(i % 7 + 1))
                write_tree(project.root, {"src/churn.py": body, f"src/gen/m{i % 5}.py": body})
                project.update(["src/churn.py", f"src/gen/m{i % 5}.py"])
                rounds["n"] += 1
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    worker = threading.Thread(target=reindex)
    worker.start()
    versions = []
    try:
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline or rounds["n"] < 5:
            for route in (
                "/api/graph?limit=50",
                "/api/status",
                "/api/database",
                "/api/graph?q=fn&limit=5",
                "/api/graph?node=file:src/churn.py&depth=1",
            ):
                status, _, body = client.request(route)
                assert status in (200, 404), (route, status, body[:200])  # churn.py may be new
                if status == 200:
                    versions.append(json.loads(body)["version"])
    finally:
        stop.set()
        worker.join(timeout=30)
    assert not errors
    assert rounds["n"] >= 5
    assert len(set(versions)) > 1  # the answers followed the graph as it changed
    final = client.json("/api/graph?kind=file&limit=20000")
    assert final["version"] == project.graph.version
    assert final["total"] == sum(1 for _ in project.graph.nodes("file"))


def test_a_writer_holding_the_lock_does_not_stall_requests(
    served: tuple[Client, Project],
) -> None:
    client, project = served
    before = client.json("/api/graph?limit=1")["version"]
    graph = project.graph
    held = threading.Event()
    release = threading.Event()

    def writer() -> None:
        with graph.lock:
            graph.upsert(Node("mem:slow", "memory", "written mid-batch"))
            held.set()
            release.wait(60)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert held.wait(5)
        page = client.json("/api/graph?limit=1")
        assert t.is_alive()  # answered while the writer still held the lock
        assert page["version"] == before  # answered from the previous snapshot
    finally:
        release.set()
        t.join()
    assert client.json("/api/graph?limit=1")["version"] == graph.version


def test_a_swapped_graph_is_served_even_at_the_same_version() -> None:
    first, second = Graph(), Graph()
    first.upsert(Node("file:old.py", "file", "old.py", path="old.py"))
    second.upsert(Node("file:new.py", "file", "new.py", path="new.py"))
    assert first.version == second.version
    current = {"graph": first}
    dash = Dashboard(lambda: current["graph"]).start()
    try:
        client = Client(dash.port, dash.token)
        assert client.json("/api/graph")["nodes"][0]["key"] == "file:old.py"
        current["graph"] = second  # e.g. a full rescan built a fresh graph
        assert client.json("/api/graph")["nodes"][0]["key"] == "file:new.py"
    finally:
        dash.stop()


def test_snapshot_copes_with_a_contains_cycle() -> None:
    graph = Graph()
    for name in ("A", "B"):
        graph.upsert(Node(f"sym:x.py#{name}", "symbol", name, path="x.py"), owner="x.py")
    graph.add_edge("sym:x.py#A", "sym:x.py#B", "contains")
    graph.add_edge("sym:x.py#B", "sym:x.py#A", "contains")
    graph.add_edge("sym:x.py#A", "mem:none", "imports")  # dangling: ignored by the graph
    dash = Dashboard(lambda: graph).start()
    try:
        page = Client(dash.port, dash.token).json("/api/graph")
        assert page["total"] == 2 and len(page["edges"]) == 2
        assert all(isinstance(n["x"], float) for n in page["nodes"])
    finally:
        dash.stop()


def test_edges_of_unknown_kinds_and_entities_are_served() -> None:
    graph = Graph()
    graph.upsert(Node("ent:ada", "entity", "Ada"))
    graph.upsert(Node("ent:acme", "entity", "Acme"))
    graph.add_edge("ent:ada", "ent:acme", "WORKS_AT")
    dash = Dashboard(lambda: graph).start()
    try:
        client = Client(dash.port, dash.token)
        page = client.json("/api/graph?folder=(entities)")
        assert page["total"] == 2 and page["edges"][0][2] == "WORKS_AT"
        assert client.json("/api/schema")["edge_kinds"]["WORKS_AT"] == 1
    finally:
        dash.stop()


def test_empty_graph() -> None:
    graph = Graph()
    dash = Dashboard(lambda: graph).start()
    try:
        client = Client(dash.port, dash.token)
        assert client.json("/api/graph")["nodes"] == []
        assert client.json("/api/status")["nodes"] == 0
        assert client.json("/api/database")["tables"] == []
    finally:
        dash.stop()


def test_large_answers_are_gzipped_for_clients_that_ask() -> None:
    graph = Graph()
    for i in range(300):
        graph.upsert(Node(f"file:f{i}.py", "file", f"f{i}.py", path=f"f{i}.py"), owner=f"f{i}.py")
    dash = Dashboard(lambda: graph).start()
    try:
        client = Client(dash.port, dash.token)
        status, headers, body = client.request(
            "/api/graph?limit=20000", headers={"Accept-Encoding": "gzip"}
        )
        assert status == 200 and headers.get("content-encoding") == "gzip"
        assert len(json.loads(body)["nodes"]) == 300
        _, plain_headers, _ = client.request("/api/graph?limit=20000")
        assert "content-encoding" not in plain_headers
    finally:
        dash.stop()


def test_ids_survive_rustworkx_index_reuse() -> None:
    # rustworkx reuses a removed node's index: API ids are snapshot positions, never those.
    graph = Graph()
    graph.upsert(Node("file:a.py", "file", "a.py", path="a.py"), owner="a.py")
    graph.upsert(Node("file:b.py", "file", "b.py", path="b.py"), owner="b.py")
    graph.add_edge("file:a.py", "file:b.py", "imports")
    graph.remove_node("file:a.py")
    graph.upsert(Node("file:c.py", "file", "c.py", path="c.py"), owner="c.py")
    graph.add_edge("file:c.py", "file:b.py", "imports")
    dash = Dashboard(lambda: graph).start()
    try:
        page = Client(dash.port, dash.token).json("/api/graph")
        keys = {n["id"]: n["key"] for n in page["nodes"]}
        assert [(keys[s], keys[d], k) for s, d, k in page["edges"]] == [
            ("file:c.py", "file:b.py", "imports")
        ]
        assert Edge("file:c.py", "file:b.py", "imports") in list(graph.edges())
    finally:
        dash.stop()


def test_layout_keeps_symbols_by_their_file_and_files_by_their_folder() -> None:
    graph = Graph()
    for folder in ("api", "db", "ui"):
        for f in range(6):
            path = f"{folder}/m{f}.py"
            graph.upsert(Node(f"file:{path}", "file", f"m{f}.py", path=path), owner=path)
            for s in range(5):
                key = f"sym:{path}#fn{s}"
                graph.upsert(Node(key, "symbol", f"fn{s}", path=path), owner=path)
                graph.add_edge(f"file:{path}", key, "contains")
    dash = Dashboard(lambda: graph).start()
    try:
        nodes = Client(dash.port, dash.token).json("/api/graph?limit=20000")["nodes"]
    finally:
        dash.stop()
    files = [n for n in nodes if n["kind"] == "file"]

    def nearest(n: dict[str, Any], among: list[dict[str, Any]]) -> dict[str, Any]:
        return min(among, key=lambda m: (m["x"] - n["x"]) ** 2 + (m["y"] - n["y"]) ** 2)

    for sym in (n for n in nodes if n["kind"] == "symbol"):
        assert nearest(sym, files)["path"] == sym["path"]
    for folder in ("api", "db", "ui"):
        mine = [f for f in files if f["path"].startswith(folder + "/")]
        cx = sum(f["x"] for f in mine) / len(mine)
        cy = sum(f["y"] for f in mine) / len(mine)
        centre = {"x": cx, "y": cy}
        assert nearest(centre, files)["path"].startswith(folder + "/")


def test_the_graph_route_shows_what_was_told_with_its_history(
    served: tuple[Client, Project],
) -> None:
    from knowledge.facts.extraction import parse_extraction
    from knowledge.facts.layer import FactsLayer

    client, project = served
    layer = FactsLayer(project)
    for db, said in (
        ("SQLite", "the shop keeps orders in SQLite"),
        ("PostgreSQL", "we moved the shop from SQLite to PostgreSQL"),
    ):
        layer.apply(
            parse_extraction(
                json.dumps(
                    {
                        "entities": [
                            {"label": "Shop", "type": "Project", "layer": "PERSONAL"},
                            {"label": db, "type": "Technology", "layer": "UNIVERSAL"},
                        ],
                        "relations": [{"source": "Shop", "target": db, "type": "USES_TECHNOLOGY"}],
                        "facts": [],
                        "corrections": (
                            [{"subject": "Shop", "old": "SQLite", "new": "PostgreSQL"}]
                            if db == "PostgreSQL"
                            else []
                        ),
                    }
                )
            ),
            said,
            "user",
        )
    focus = client.json("/api/graph?node=ent:shop&depth=1")["focus"]
    told = {(r["label"], r["valid_to"] is None) for r in focus["data"]["relations"]}
    assert told == {("PostgreSQL", True), ("SQLite", False)}
    edges = {(nb["key"], nb["edge"]) for nb in focus["neighbours"]}
    assert ("ent:postgresql", "rel:USES_TECHNOLOGY") in edges
    assert ("ent:sqlite", "rel:USES_TECHNOLOGY") not in edges  # history, not current
