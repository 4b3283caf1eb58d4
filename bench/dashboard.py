"""Dashboard timings on generated graphs: `/api/graph` over real HTTP and the page in Chromium.

    python bench/dashboard.py [--sizes 20000 100000] [--runs 5] [--no-browser]
                              [--screenshot /tmp/theus-dashboard.png] [--project PATH]

For each size: the cold first page (snapshot + importance + layout after the graph changed),
then medians of warm requests: first page (2,000 nodes), a file's neighbourhood at depth 1 and
2, a search, a folder filter. In headless Chromium: time from navigation to the first drawn
frame, and until every page (up to the page's 20,000-node cap) is loaded and drawn.
--project PATH indexes a real project instead and screenshots it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.e2e.chromium

from entrypoint.settings import apply as apply_settings
from knowledge.core.graph import Edge, Graph, Node
from theus.dashboard.server import Dashboard

WORDS = (
    "order",
    "cart",
    "user",
    "billing",
    "invoice",
    "auth",
    "session",
    "cache",
    "router",
    "store",
    "event",
    "queue",
    "report",
    "search",
    "index",
    "price",
    "tax",
    "ship",
)


def generated(n: int, seed: int = 7) -> Graph:
    """A project-shaped graph of about n nodes: folders, files, classes, methods, functions,
    imports biased towards popular files, references, and a few tables with foreign keys."""
    rnd = random.Random(seed)
    nodes: list[tuple[Node, str]] = []
    edges: list[Edge] = []
    folders = [""]
    while len(folders) < max(4, n // 250):
        parent = rnd.choice(folders)
        folders.append(f"{parent}/{rnd.choice(WORDS)}{len(folders)}".lstrip("/"))
    files: list[str] = []
    symbols: list[str] = []
    count = 0
    while count < n:
        folder = rnd.choice(folders)
        path = f"{folder}/{rnd.choice(WORDS)}_{len(files)}.py".lstrip("/")
        fkey = f"file:{path}"
        nodes.append(
            (
                Node(
                    fkey,
                    "file",
                    path.rsplit("/", 1)[-1],
                    path=path,
                    subkind="python",
                    summary=f"The {rnd.choice(WORDS)} module.",
                ),
                path,
            )
        )
        files.append(path)
        count += 1
        for c in range(rnd.randint(0, 3)):
            cls = f"{rnd.choice(WORDS).title()}{c}"
            ckey = f"sym:{path}#{cls}"
            nodes.append(
                (
                    Node(
                        ckey,
                        "symbol",
                        cls,
                        path=path,
                        line=10 * c + 1,
                        subkind="class",
                        signature=f"class {cls}",
                    ),
                    path,
                )
            )
            edges += [Edge(fkey, ckey, "defines"), Edge(fkey, ckey, "contains")]
            symbols.append(ckey)
            count += 1
            for m in range(rnd.randint(1, 6)):
                name = f"{cls}.{rnd.choice(WORDS)}_{m}"
                mkey = f"sym:{path}#{name}"
                nodes.append(
                    (
                        Node(
                            mkey,
                            "symbol",
                            name,
                            path=path,
                            line=10 * c + m + 2,
                            subkind="method",
                            signature=f"def {name}(self)",
                        ),
                        path,
                    )
                )
                edges += [Edge(fkey, mkey, "defines"), Edge(ckey, mkey, "contains")]
                count += 1
        for f in range(rnd.randint(0, 4)):
            name = f"{rnd.choice(WORDS)}_{f}"
            skey = f"sym:{path}#{name}"
            nodes.append(
                (
                    Node(
                        skey,
                        "symbol",
                        name,
                        path=path,
                        line=100 + f,
                        subkind="function",
                        signature=f"def {name}()",
                    ),
                    path,
                )
            )
            edges += [Edge(fkey, skey, "defines"), Edge(fkey, skey, "contains")]
            symbols.append(skey)
            count += 1
    for i, path in enumerate(files):
        for _ in range(rnd.randint(0, 5)):  # preferential: low indices are "core" modules
            target = files[int(len(files) * rnd.random() ** 3)]
            if target != path:
                edges.append(Edge(f"file:{path}", f"file:{target}", "imports"))
        for _ in range(rnd.randint(0, 4)):
            if symbols:
                edges.append(
                    Edge(
                        f"file:{path}", symbols[int(len(symbols) * rnd.random() ** 2)], "references"
                    )
                )
        if i < 20:
            table = f"t_{i}"
            nodes.append(
                (Node(f"table:{table}", "table", table, path="db/schema.sql"), "db/schema.sql")
            )
            nodes.append(
                (
                    Node(
                        f"column:{table}.id",
                        "column",
                        f"{table}.id",
                        path="db/schema.sql",
                        signature="id INT",
                    ),
                    "db/schema.sql",
                )
            )
            edges.append(Edge(f"table:{table}", f"column:{table}.id", "contains"))
    graph = Graph()
    graph.load(nodes, [(e.src, e.dst, e.kind) for e in edges])
    return graph


class Client:
    def __init__(self, dash: Dashboard) -> None:
        self.dash = dash

    def get(self, path: str) -> tuple[float, dict[str, object], int]:
        conn = http.client.HTTPConnection("127.0.0.1", self.dash.port, timeout=120)
        started = time.perf_counter()
        conn.request(
            "GET",
            path,
            headers={
                "Host": f"127.0.0.1:{self.dash.port}",
                "X-Theus-Token": self.dash.token,
                "Accept-Encoding": "gzip",
            },
        )
        resp = conn.getresponse()
        raw = resp.read()
        elapsed = (time.perf_counter() - started) * 1000
        conn.close()
        if resp.getheader("Content-Encoding") == "gzip":
            import gzip

            body = json.loads(gzip.decompress(raw))
        else:
            body = json.loads(raw)
        assert resp.status == 200, body
        return elapsed, body, len(raw)


def median_ms(client: Client, paths: list[str]) -> tuple[float, int]:
    times, sizes = [], []
    for path in paths:
        ms, _, size = client.get(path)
        times.append(ms)
        sizes.append(size)
    return statistics.median(times), int(statistics.median(sizes))


def bench_api(graph: Graph, runs: int) -> Dashboard:
    dash = Dashboard(lambda: graph).start()
    client = Client(dash)
    cold, body, size = client.get("/api/graph?limit=2000")
    print(
        f"  cold first page (snapshot+layout {dash.snapshots.current(graph).built_ms:.0f} ms):"
        f" {cold:.0f} ms, {size / 1024:.0f} KiB gzip"
    )
    files = [k for k in graph.keys() if k.startswith("file:")]  # noqa: SIM118 - a list
    rnd = random.Random(1)
    picks = [rnd.choice(files) for _ in range(runs)]
    rows = [
        ("first page, 2,000 nodes", ["/api/graph?limit=2000"] * runs),
        ("page 3 by cursor", [f"/api/graph?limit=2000&cursor={body['version']}.4000"] * runs),
        ("neighbourhood depth 1", [f"/api/graph?node={k}&depth=1" for k in picks]),
        ("neighbourhood depth 2", [f"/api/graph?node={k}&depth=2&limit=2000" for k in picks]),
        ("search q=cart", [f"/api/graph?q=cart{i}&limit=20" for i in range(runs)]),
        ("kind=file page", ["/api/graph?kind=file&limit=2000"] * runs),
        ("status", ["/api/status?sections=0"] * runs),
        ("database", ["/api/database"] * runs),
    ]
    for label, paths in rows:
        ms, size = median_ms(client, paths)
        print(f"  {label:<26} median {ms:7.1f} ms  ({size / 1024:.0f} KiB)")
    return dash


def bench_page(dash: Dashboard, runs: int, screenshot: Path | None) -> None:
    from tests.e2e.chromium import Browser

    firsts, fulls = [], []
    with Browser(1440, 900) as browser:
        for _ in range(runs):
            started = time.perf_counter()
            browser.navigate(dash.url)
            browser.wait_for("window.__theus && window.__theus.ready", timeout=120)
            firsts.append((time.perf_counter() - started) * 1000)
            browser.wait_for(
                "!window.__theus.state.loading && window.__theus.state.nodes.length"
                " >= Math.min(window.__theus.state.total, 20000)",
                timeout=120,
            )
            fulls.append((time.perf_counter() - started) * 1000)
        loaded = browser.evaluate("window.__theus.state.nodes.length")
        frame = browser.evaluate(
            "(() => { const t = performance.now(); for (let i = 0; i < 5; i++) draw();"
            " return (performance.now() - t) / 5; })()"
        )
        print(
            f"  page: first render median {statistics.median(firsts):.0f} ms, all "
            f"{loaded:,} nodes drawn {statistics.median(fulls):.0f} ms, one frame {frame:.0f} ms"
        )
        if screenshot:
            time.sleep(0.3)
            browser.screenshot(screenshot)
            print(f"  screenshot: {screenshot}")


def main() -> None:
    apply_settings({}, os.environ)  # as `theus` does at start
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20000, 100000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument(
        "--screenshot",
        type=Path,
        default=None,
        help="PNG of the page at the first size (or of --project)",
    )
    parser.add_argument("--project", type=Path, default=None, help="index and show a real project")
    args = parser.parse_args()
    if args.project:
        from knowledge.index.project import Project

        project = Project(args.project)
        project.index()
        graph = project.graph
        print(f"{args.project}: {len(graph):,} nodes, {graph.edge_count():,} edges")
        dash = bench_api(graph, args.runs)
        if not args.no_browser:
            bench_page(dash, args.runs, args.screenshot)
        dash.stop()
        return
    for i, size in enumerate(args.sizes):
        started = time.perf_counter()
        graph = generated(size)
        print(
            f"{len(graph):,} nodes, {graph.edge_count():,} edges "
            f"(generated in {time.perf_counter() - started:.1f} s)"
        )
        dash = bench_api(graph, args.runs)
        if not args.no_browser:
            bench_page(dash, args.runs, args.screenshot if i == 0 else None)
        dash.stop()


if __name__ == "__main__":
    main()
