"""`theus mcp` recall latency against the in-process engine's, on the same queries (a
benchmark, not a test).

    python bench/mcp.py PATH [--calls 100] [--runs 3] [--no-http]

PATH is a project folder (indexed first if it never was). The queries are `--calls` symbol
names of its graph, split into words ("make response"), chosen with a fixed seed. Measured:
- in-process: `knowledge.memory.context.build_context` on the project's `Memory` recaller (what the
  agent and `theus recall` run), warmed as the server warms it;
- server over stdio: the `recall` tool of a `theus mcp PATH` subprocess, called with the
  official SDK's client (JSON-RPC, the JSON answer, redaction, the pipe);
- server over Streamable HTTP on 127.0.0.1 (`--http`), the same tool.
Each is warmed with 5 calls first. Prints p50/p95 per run, then the median and min of the
runs' p50 and p95. Embeddings follow the environment (THEUS_NO_EMBEDDINGS=1 turns them off).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

# The repository instead of bench/, whose mcp.py (this file) would hide the `mcp` package.
sys.path.pop(0)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from entrypoint.settings import apply as apply_settings
from knowledge.index.project import Project
from knowledge.memory import Memory
from knowledge.memory.context import build_context
from knowledge.recall.tokens import split_words

WARM_CALLS = 5
TOKEN = "bench-token-0123456789abcdef"


def queries(root: Path, count: int, seed: int = 11) -> list[str]:
    project = Project(root)
    try:
        if not project.has_index:
            print(f"indexing {root} first…", flush=True)
            project.index()
            project.save()
        labels = sorted({n.label.rsplit(".", 1)[-1] for n in project.graph.nodes("symbol")})
    finally:
        project.close()
    picked = random.Random(seed).sample(labels, min(count, len(labels)))
    return [" ".join(split_words(label)) or label for label in picked]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def in_process(root: Path, asked: list[str]) -> list[float]:
    memory = Memory(root, watch=False).open()
    try:
        recaller = memory.recaller()
        recaller.warm(2.0)
        for query in asked[:WARM_CALLS]:
            build_context(recaller, query)
        times = []
        for query in asked:
            start = time.perf_counter()
            build_context(recaller, query)
            times.append((time.perf_counter() - start) * 1000)
        return times
    finally:
        memory.close()


async def over(client_factory: Callable[[], object], asked: list[str]) -> list[float]:
    async with client_factory() as client:  # type: ignore[attr-defined]
        for query in asked[:WARM_CALLS]:
            await client.call_tool("recall", {"query": query})
        times = []
        for query in asked:
            start = time.perf_counter()
            result = await client.call_tool("recall", {"query": query})
            times.append((time.perf_counter() - start) * 1000)
            if result.is_error:
                raise SystemExit(f"recall failed on {query!r}: {result.content}")
        return times


def stdio_client(root: Path) -> Callable[[], object]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "entrypoint", "mcp", str(root)],
        env=dict(os.environ),
        cwd=str(Path(__file__).parents[1]),
    )
    return lambda: Client(params)


class HttpServer:
    """`theus mcp PATH --http PORT` as a subprocess, for the duration of a `with`."""

    def __init__(self, root: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "entrypoint", "mcp", str(root), "--http", str(self.port)],
            env={**os.environ, "THEUS_MCP_TOKEN": TOKEN},
            stderr=subprocess.PIPE,
            text=True,
            cwd=str(Path(__file__).parents[1]),
        )
        assert self.proc.stderr is not None
        self.proc.stderr.readline()  # it listens

    def client(self) -> Callable[[], object]:
        from contextlib import asynccontextmanager

        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        @asynccontextmanager
        async def connect():  # type: ignore[no-untyped-def]
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with (
                create_mcp_http_client(headers=headers) as http,
                Client(
                    streamable_http_client(f"http://127.0.0.1:{self.port}/mcp", http_client=http)
                ) as client,
            ):
                yield client

        return connect

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=15)


def report(name: str, runs: list[tuple[float, float]]) -> None:
    p50s, p95s = [r[0] for r in runs], [r[1] for r in runs]
    print(
        f"{name:<22} p50 median {statistics.median(p50s):7.2f} ms  min {min(p50s):7.2f} ms"
        f"   p95 median {statistics.median(p95s):7.2f} ms  min {min(p95s):7.2f} ms"
    )


def main() -> None:
    apply_settings({}, os.environ)  # as `theus` does at start
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-http", action="store_true")
    args = parser.parse_args()
    root = args.path.resolve()
    asked = queries(root, args.calls)
    print(
        f"{root}: {len(asked)} recall queries, {args.runs} runs, embeddings "
        f"{'off' if os.environ.get('THEUS_NO_EMBEDDINGS') == '1' else 'as configured'}"
    )
    measured: dict[str, list[tuple[float, float]]] = {"in-process": [], "server (stdio)": []}
    if not args.no_http:
        measured["server (http)"] = []
    for run in range(args.runs):
        rows = {
            "in-process": in_process(root, asked),
            "server (stdio)": asyncio.run(over(stdio_client(root), asked)),
        }
        if not args.no_http:
            server = HttpServer(root)
            try:
                rows["server (http)"] = asyncio.run(over(server.client(), asked))
            finally:
                server.stop()
        for name, times in rows.items():
            p50, p95 = percentiles(times)
            measured[name].append((p50, p95))
            print(f"run {run + 1}: {name:<16} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms", flush=True)
    print()
    for name, runs in measured.items():
        report(name, runs)


if __name__ == "__main__":
    main()
