"""Recall latency at scale, on generated projects (a benchmark, not a test).

    python bench/recall_scale.py [--nodes 20000 100000] [--queries 200] [--runs 3]
        [--no-semantic]

Writes a synthetic Python project per size (files of a class and ~10 methods with mostly
unique names, docstrings and bodies of Zipf-distributed words, imports between files), indexes it
with the real indexer, warms the recaller as the app does, then reports recall p50/p95 (the
block included: `build_context`) for short requests (2-7 words) and long ones (a subject and
four sentences, like the benchmark's commit messages), and a one-file change (the file
rewritten, `Project.update`, then the next recall). With the semantic layer (default) the
same requests run again with the re-ranker warm: the real local model embeds each request,
and every file has random unit vectors for its chunks (their values do not change the cost).
Wall-clock and CPU (thread) times of each request's first timing are printed: on a shared
machine the first includes waiting for a CPU. This machine also runs some minutes a quarter
slower than others, so each request is timed `ROUNDS` times and the p95 of each one's fastest
("best-of") is printed beside: the code's cost without the machine's moods. Figures are medians
over `--runs`.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import knowledge  # noqa: F401  first, as in a Theus process: numpy then loads with one BLAS thread
from entrypoint.settings import apply as apply_settings

# isort: split
import numpy as np

from knowledge.index.project import Project
from knowledge.memory.context import build_context
from knowledge.recall.recaller import Recaller, Reranker, make_recaller

ROUNDS = 3  # each request is timed this often; "best-of" figures take its fastest
SYMBOLS_PER_FILE = 10
LINES_PER_METHOD = 8
_CUMULATIVE: dict[int, list[float]] = {}


def vocabulary(rng: random.Random, size: int = 4000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def zipf_word(rng: random.Random, words: list[str]) -> str:
    """A word with Zipf's law (frequency ~ 1/rank), as in identifiers and prose."""
    cum = _CUMULATIVE.get(len(words))
    if cum is None:
        cum = _CUMULATIVE[len(words)] = list(
            itertools.accumulate(1.0 / r for r in range(1, len(words) + 1))
        )
    return rng.choices(words, cum_weights=cum)[0]


def source(rng: random.Random, words: list[str], modules: list[str], salt: str = "") -> str:
    def w() -> str:
        return zipf_word(rng, words)

    lines = [f'"""{" ".join(w() for _ in range(8))}."""', ""]
    for other in rng.sample(modules, min(3, len(modules))):
        lines.append(f"from src import {other}")
    cls = "".join(w().title() for _ in range(2)) + salt.title()
    lines += ["", "", f"class {cls}:", f'    """{" ".join(w() for _ in range(10))}."""']
    for _ in range(SYMBOLS_PER_FILE - 1):
        # Names are mostly unique, as in real code; prose and bodies follow Zipf's law.
        name = "_".join(rng.choice(words) for _ in range(rng.randint(1, 3)))
        args = ", ".join(w() for _ in range(rng.randint(0, 3)))
        lines += [
            "",
            f"    def {name}(self{', ' if args else ''}{args}):",
            f'        """{" ".join(w() for _ in range(8))}."""',
        ]
        for _ in range(LINES_PER_METHOD):
            lines.append(f"        {w()} = {w()}({w()}, {w()})  # {w()} {w()}")
        lines.append(f"        return {w()}")
    return "\n".join(lines) + "\n"


def write_project(root: Path, size: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    words = vocabulary(rng)
    files = max(1, size // (SYMBOLS_PER_FILE + 1))
    modules = [f"m{i}_{zipf_word(rng, words)}" for i in range(files)]
    (root / "src").mkdir(parents=True)
    for module in modules:
        (root / "src" / f"{module}.py").write_text(source(rng, words, modules))
    return modules, words


def short_request(rng: random.Random, words: list[str]) -> str:
    picks = [zipf_word(rng, words) for _ in range(rng.randint(1, 4))]
    picks += [rng.choice(words) for _ in range(rng.randint(1, 3))]
    return " ".join(picks)


def long_request(rng: random.Random, words: list[str]) -> str:
    head = short_request(rng, words)
    body = [
        " ".join(zipf_word(rng, words) for _ in range(rng.randint(8, 16))) + "." for _ in range(4)
    ]
    return head + "\n\n" + " ".join(body)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(
    recaller: Recaller, requests: list[str], rounds: int = 1
) -> tuple[list[float], list[float], list[float]]:
    """Per request: wall and CPU ms of the first round, and its best wall ms of `rounds`."""
    lat, cpu = [], []
    best = [math.inf] * len(requests)
    for round_ in range(rounds):
        # Each round starts as the first did: traversal's remembered edge orders forgotten.
        getattr(recaller.graph, "_first", {}).clear()
        for i, text in enumerate(requests):
            start, start_cpu = time.perf_counter(), time.thread_time()
            build_context(recaller, text)
            wall = (time.perf_counter() - start) * 1e3
            best[i] = min(best[i], wall)
            if round_ == 0:
                lat.append(wall)
                cpu.append((time.thread_time() - start_cpu) * 1e3)
    return lat, cpu, best


def semantic(project: Project) -> Reranker:
    """A warm re-ranker: the real local model for requests, random rows for the chunks."""
    from knowledge.embed.indexer import NodeVectors, embed_texts
    from knowledge.embed.local import LocalEmbedder
    from knowledge.embed.semantic import SemanticReranker

    embedder = LocalEmbedder(threads=1)  # as the semantic layer runs it beside the agent
    embedder.load()
    vectors = NodeVectors(embedder.dim)
    rng = np.random.default_rng(0)
    for node in project.graph.nodes():
        texts = embed_texts(node, project.root)
        if texts:
            rows = rng.standard_normal((len(texts), embedder.dim)).astype(np.float32)
            vectors.put(node, rows / np.linalg.norm(rows, axis=1, keepdims=True))
    return SemanticReranker.fixed(embedder, vectors)


def run(size: int, queries: int, seed: int, with_semantic: bool) -> dict[str, float]:
    home = tempfile.mkdtemp(prefix="theus-scale-home-")
    os.environ["THEUS_HOME"] = home
    apply_settings({}, os.environ)
    root = Path(tempfile.mkdtemp(prefix="theus-scale-"))
    try:
        modules, words = write_project(root, size, seed)
        project = Project(root)
        project.index()
        recaller = make_recaller(project)
        start = time.perf_counter()
        recaller.warm()
        out: dict[str, float] = {
            "nodes": float(len(project.graph)),
            "warm_ms": (time.perf_counter() - start) * 1e3,
        }
        rng = random.Random(seed)
        kinds = {
            "short": [short_request(rng, words) for _ in range(queries)],
            "long": [long_request(rng, words) for _ in range(queries)],
        }
        for kind, requests in kinds.items():
            lat, cpu, best = timed(recaller, requests, ROUNDS)
            out[f"{kind}_p50"], out[f"{kind}_p95"] = statistics.median(lat), percentile(lat, 0.95)
            out[f"{kind}_cpu95"] = percentile(cpu, 0.95)
            out[f"{kind}_best95"] = percentile(best, 0.95)
        updates, after = [], []
        for i in range(10):
            module = rng.choice(modules)
            (root / "src" / f"{module}.py").write_text(source(rng, words, modules, salt=f"v{i}"))
            start = time.perf_counter()
            project.update([f"src/{module}.py"])
            recaller.sync()
            updates.append((time.perf_counter() - start) * 1e3)
            start = time.perf_counter()
            build_context(recaller, short_request(rng, words))
            after.append((time.perf_counter() - start) * 1e3)
        out["update_ms"], out["after_ms"] = statistics.median(updates), statistics.median(after)
        if with_semantic:
            sem = make_recaller(project, reranker=semantic(project))
            sem.warm()
            for kind, requests in kinds.items():
                build_context(sem, requests[0])  # the model's first call pays for its setup
                lat, _, best = timed(sem, requests, ROUNDS)
                out[f"sem_{kind}_p50"] = statistics.median(lat)
                out[f"sem_{kind}_p95"] = percentile(lat, 0.95)
                out[f"sem_{kind}_best95"] = percentile(best, 0.95)
        project.close()
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[20_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-semantic", action="store_true")
    args = ap.parse_args()
    for size in args.nodes:
        runs = [run(size, args.queries, seed, not args.no_semantic) for seed in range(args.runs)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"{int(med['nodes']):>7} nodes (warm-up {med['warm_ms']:.0f} ms), medians of "
            f"{args.runs} runs:"
        )
        for kind in ("short", "long"):
            line = (
                f"  {kind:<5} requests: p50 {med[f'{kind}_p50']:.1f} ms, p95 "
                f"{med[f'{kind}_p95']:.1f} ms (CPU p95 {med[f'{kind}_cpu95']:.1f}, "
                f"best-of-{ROUNDS} p95 {med[f'{kind}_best95']:.1f})"
            )
            if f"sem_{kind}_p95" in med:
                line += (
                    f" | semantic layer warm: p50 {med[f'sem_{kind}_p50']:.1f} ms, "
                    f"p95 {med[f'sem_{kind}_p95']:.1f} ms "
                    f"(best-of-{ROUNDS} {med[f'sem_{kind}_best95']:.1f})"
                )
            print(line)
        print(
            f"  one-file change: update {med['update_ms']:.1f} ms, next recall "
            f"{med['after_ms']:.1f} ms",
            flush=True,
        )
    print(
        f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
        f"on {os.cpu_count()} CPUs (wall times include waiting for a CPU; CPU times do not)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
