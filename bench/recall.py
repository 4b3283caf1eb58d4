"""Recall quality on real repositories' history (a benchmark, not a test).

    python bench/recall.py /path/to/repo[@BASE] ... [--back 300] [--tasks 80]

Each path is a git work tree or bare mirror; BASE defaults to HEAD~--back. Each repository is
extracted at its base, indexed once (temporary THEUS_HOME), and every later descriptive commit
becomes a task (see bench/_tasks.py). Reported per repository and pooled, per system:
Recall@1/@5/@10 at file level, MRR, latency p50/p95 (wall; CPU p95 beside it, since a shared
machine makes wall times wait for a CPU); for Theus also the injected block's tokens
(median) and how often the block names a gold file.

Systems are entries of `SYSTEMS`: name -> factory(repo) -> (task -> ranked repo-relative file
paths). Add a column by adding a factory.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._tasks import Task, checkout, git_dir_of, mine, pick_base
from knowledge.context import build_block, count_tokens
from knowledge.graph import Graph
from knowledge.project import Project
from knowledge.recall import Recaller
from knowledge.recall.tokens import fold, split_words


@dataclass
class Repo:
    name: str
    root: Path
    base: str
    graph: Graph
    tasks: list[Task]
    extra: dict[str, object] = field(default_factory=dict)  # per-task side figures by system

    def files(self) -> list[str]:
        return sorted(n.path for n in self.graph.nodes("file") if n.status == "ok")


Ranker = Callable[[Task], list[str]]


def theus_system(repo: Repo) -> Ranker:
    recaller = Recaller(repo.graph, repo.root)
    blocks: dict[str, tuple[int, bool, float]] = {}
    repo.extra["theus"] = blocks

    def rank(task: Task) -> list[str]:
        start = time.perf_counter()
        result = recaller.recall(task.query, top=30)
        block = build_block(result, repo.graph)
        took = (time.perf_counter() - start) * 1000.0
        names_gold = any(g in block for g in task.gold)
        blocks[task.commit] = (count_tokens(block), names_gold, took)
        return list(dict.fromkeys(h.path for h in result.hits if h.path))

    return rank


def _bm25_tokens(text: str) -> list[str]:
    return [fold(w) for w in split_words(text) if len(w) > 1]


def bm25_ranking(repo: Repo, depth: int = 10) -> Callable[[str], list[str]]:
    """Whole-file BM25 (bm25s) over path + content, identifiers split like Theus does:
    query text -> the `depth` best files."""
    import bm25s

    paths = repo.files()
    corpus = []
    for rel in paths:
        try:
            text = (repo.root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        corpus.append(_bm25_tokens(rel + " " + text))
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    vocab = retriever.vocab_dict

    def rank(query: str) -> list[str]:
        terms = [t for t in _bm25_tokens(query) if t in vocab]
        if not terms:
            return []
        scores = retriever.get_scores(terms)
        return [paths[i] for i in scores.argsort()[::-1][:depth] if scores[i] > 0]

    return rank


def bm25_system(repo: Repo) -> Ranker:
    rank = bm25_ranking(repo)
    return lambda task: rank(task.query)


def run_tasks(ranker: Ranker, tasks: list[Task], show_misses: bool = False) -> list[Row]:
    """Score every task, timing each query (wall, and CPU of this thread only: work a system
    hands to another thread, such as a query embedding, shows in wall time)."""
    rows = []
    for task in tasks:
        start, start_cpu = time.perf_counter(), time.thread_time()
        ranked = ranker(task)
        rows.append(score(ranked, task.gold, (time.perf_counter() - start) * 1e3,
                          (time.thread_time() - start_cpu) * 1e3))
        if show_misses and rows[-1].r10 == 0:
            print(f"  miss: {task.query!r} gold={sorted(task.gold)} got={ranked[:5]}")
    return rows


SYSTEMS: dict[str, Callable[[Repo], Ranker]] = {"theus": theus_system, "bm25": bm25_system}


@dataclass
class Row:
    r1: float
    r5: float
    r10: float
    rr: float
    ms: float
    cpu_ms: float


def score(ranked: list[str], gold: frozenset[str], ms: float, cpu_ms: float) -> Row:
    def at(k: int) -> float:
        return len(gold.intersection(ranked[:k])) / len(gold)

    rr = next((1.0 / (i + 1) for i, p in enumerate(ranked[:10]) if p in gold), 0.0)
    return Row(at(1), at(5), at(10), rr, ms, cpu_ms)


def summary(rows: list[Row]) -> str:
    mean = statistics.fmean
    lat = sorted(r.ms for r in rows)
    cpu = sorted(r.cpu_ms for r in rows)
    p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
    cpu95 = cpu[min(len(cpu) - 1, int(0.95 * len(cpu)))]
    return (f"R@1 {mean(r.r1 for r in rows):.3f}  R@5 {mean(r.r5 for r in rows):.3f}  "
            f"R@10 {mean(r.r10 for r in rows):.3f}  MRR {mean(r.rr for r in rows):.3f}  "
            f"p50 {statistics.median(lat):.1f} ms  p95 {p95:.1f} ms  (CPU p95 {cpu95:.1f} ms)")


def prepare(spec: str, back: int, limit: int) -> Repo:
    path, _, base = spec.partition("@")
    git_dir = git_dir_of(Path(path).resolve())
    base = base or pick_base(git_dir, back)
    name = git_dir.parent.name if git_dir.name in ("repo", ".git") else git_dir.name
    tasks = mine(git_dir, base, name, limit)
    root = checkout(git_dir, base)
    start = time.perf_counter()
    project = Project(root)
    report = project.index()
    print(f"# {name} @ {base[:12]}: {report.files} files, {report.symbols} symbols, "
          f"{len(project.graph)} nodes, indexed in {time.perf_counter() - start:.1f}s; "
          f"{len(tasks)} tasks", flush=True)
    return Repo(name, root, base, project.graph, tasks)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repos", nargs="+", help="git work tree or bare mirror, optional @BASE")
    ap.add_argument("--back", type=int, default=300, help="base = HEAD~BACK when not given")
    ap.add_argument("--tasks", type=int, default=80, help="at most this many tasks per repo")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated")
    ap.add_argument("--show-misses", action="store_true", help="print Theus misses")
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="theus-bench-home-")
    os.environ["THEUS_HOME"] = home
    names = [s for s in args.systems.split(",") if s]
    pooled: dict[str, list[Row]] = {n: [] for n in names}
    block_stats: list[tuple[int, bool, float]] = []
    roots = []
    try:
        for spec in args.repos:
            repo = prepare(spec, args.back, args.tasks)
            roots.append(repo.root)
            for name in names:
                ranker = SYSTEMS[name](repo)
                rows = run_tasks(ranker, repo.tasks, args.show_misses and name == "theus")
                pooled[name].extend(rows)
                print(f"  {name:<8} {summary(rows)}", flush=True)
            stats = repo.extra.get("theus")
            if isinstance(stats, dict):
                block_stats.extend(stats.values())
        total = len(next(iter(pooled.values())))
        print(f"\n# pooled over {total} tasks, {len(args.repos)} repositories")
        for name in names:
            print(f"  {name:<8} {summary(pooled[name])}")
        if block_stats:
            tokens = [t for t, _, _ in block_stats]
            named = sum(1 for _, g, _ in block_stats if g) / len(block_stats)
            empty = sum(1 for t in tokens if t == 0) / len(tokens)
            print(f"  block: median {statistics.median(tokens):.0f} tokens, names a gold file "
                  f"in {named:.1%} of tasks, empty (below threshold) in {empty:.1%}")
    finally:
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
