"""Recall latency on generated graphs (a benchmark, not a test).

    python bench/recall_scale.py [--nodes 20000 100000] [--queries 200] [--runs 3]

Builds a synthetic project graph per size (files of ~10 symbols named from a Zipf-distributed
vocabulary, with signatures, docstrings, imports and references), then reports: the lexical
index's first build, recall p50/p95 over random requests (2-7 words, common and rare), and a
one-file change (replace one owner, then the incremental index update and the next recall).
Wall-clock and CPU (thread) times are both printed: on a shared machine the first includes
waiting for a CPU. Figures are medians over `--runs`. Files do not exist on disk, so the
content index is empty here: this measures the graph side.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from knowledge import keys
from knowledge.context import build_block
from knowledge.graph import Edge, Graph, Node
from knowledge.recall import Recaller

SYMBOLS_PER_FILE = 9


def vocabulary(rng: random.Random, size: int = 4000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


_CUMULATIVE: dict[int, list[float]] = {}


def zipf_word(rng: random.Random, words: list[str]) -> str:
    """A word with Zipf's law (frequency ~ 1/rank), as in identifiers and prose."""
    cum = _CUMULATIVE.get(len(words))
    if cum is None:
        cum = _CUMULATIVE[len(words)] = list(itertools.accumulate(
            1.0 / r for r in range(1, len(words) + 1)))
    return rng.choices(words, cum_weights=cum)[0]


def file_nodes(rng: random.Random, words: list[str], rel: str, salt: str = ""
               ) -> tuple[list[Node], list[Edge]]:
    fkey = keys.file_key(rel)
    nodes = [Node(fkey, "file", rel.rsplit("/", 1)[-1], rel, 1, 200,
                  summary=" ".join(zipf_word(rng, words) for _ in range(6)), subkind="python")]
    edges = []
    cls = "".join(zipf_word(rng, words).title() for _ in range(2)) + salt.title()
    for i in range(SYMBOLS_PER_FILE):
        parts = [zipf_word(rng, words) for _ in range(rng.randint(1, 3))]
        name = "_".join(parts) if i else cls
        qual = name if i == 0 else f"{cls}.{name}"
        args = ", ".join(zipf_word(rng, words) for _ in range(rng.randint(0, 3)))
        key = keys.symbol_key(rel, qual)
        nodes.append(Node(key, "symbol", qual, rel, 10 + i * 20, 25 + i * 20,
                          summary=" ".join(zipf_word(rng, words) for _ in range(8)),
                          subkind="class" if i == 0 else "method",
                          signature=f"def {name}({args})"))
        edges.append(Edge(fkey, key, "defines"))
        parent = fkey if i == 0 else keys.symbol_key(rel, cls)
        edges.append(Edge(parent, key, "contains"))
    return nodes, edges


def build(size: int, seed: int = 7) -> tuple[Graph, list[str], list[str]]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    graph = Graph()
    n_files = max(1, size // SYMBOLS_PER_FILE)
    rels = [f"src/{zipf_word(rng, words)}/{i}_{zipf_word(rng, words)}.py" for i in range(n_files)]
    for rel in rels:
        nodes, edges = file_nodes(rng, words, rel)
        graph.replace_owner(rel, nodes, edges)
    for rel in rels:  # cross-file edges, some hubs
        for _ in range(4):
            other = rels[min(n_files - 1, int(rng.paretovariate(0.8)) - 1)]
            graph.add_edge(keys.file_key(rel), keys.file_key(other), "imports")
    return graph, rels, words


def query(rng: random.Random, words: list[str]) -> str:
    picks = [zipf_word(rng, words) for _ in range(rng.randint(1, 4))]
    picks += [rng.choice(words) for _ in range(rng.randint(1, 3))]
    return " ".join(picks)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(size: int, queries: int, seed: int) -> dict[str, float]:
    graph, rels, words = build(size)
    recaller = Recaller(graph, Path("/nonexistent-theus-bench"))
    start = time.perf_counter()
    recaller.sync()
    first_build = (time.perf_counter() - start) * 1e3
    recaller.warm()
    rng = random.Random(seed)
    lat, cpu = [], []
    for _ in range(queries):
        q = query(rng, words)
        start, start_cpu = time.perf_counter(), time.thread_time()
        result = recaller.recall(q, top=30)
        build_block(result, graph)
        lat.append((time.perf_counter() - start) * 1e3)
        cpu.append((time.thread_time() - start_cpu) * 1e3)
    updates, update_cpu, after = [], [], []
    for i in range(10):
        rel = rng.choice(rels)
        nodes, edges = file_nodes(rng, words, rel, salt=f"v{i}")
        graph.replace_owner(rel, nodes, edges)
        start, start_cpu = time.perf_counter(), time.thread_time()
        recaller.sync()
        updates.append((time.perf_counter() - start) * 1e3)
        update_cpu.append((time.thread_time() - start_cpu) * 1e3)
        start = time.perf_counter()
        recaller.recall(query(rng, words), top=30)
        after.append((time.perf_counter() - start) * 1e3)
    return {
        "nodes": float(len(graph)),
        "build_ms": first_build,
        "p50_ms": statistics.median(lat),
        "p95_ms": percentile(lat, 0.95),
        "cpu_p50_ms": statistics.median(cpu),
        "cpu_p95_ms": percentile(cpu, 0.95),
        "update_ms": statistics.median(updates),
        "update_cpu_ms": statistics.median(update_cpu),
        "recall_after_update_ms": statistics.median(after),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[20_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    for size in args.nodes:
        runs = [run(size, args.queries, seed) for seed in range(args.runs)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"{int(med['nodes']):>7} nodes: index build {med['build_ms']:.0f} ms | recall "
              f"p50 {med['p50_ms']:.1f} ms, p95 {med['p95_ms']:.1f} ms (CPU p50 "
              f"{med['cpu_p50_ms']:.1f}, p95 {med['cpu_p95_ms']:.1f}) | one-file update "
              f"{med['update_ms']:.1f} ms (CPU {med['update_cpu_ms']:.1f}), next recall "
              f"{med['recall_after_update_ms']:.1f} ms (median of {args.runs} runs)", flush=True)
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} CPUs (wall times include waiting for a CPU; CPU times do not)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
