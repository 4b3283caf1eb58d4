"""Recall with and without the semantic layer, beside BM25, dense retrieval and their fusion.

    python bench/recall_semantic.py /path/to/repo[@BASE] ... [--back 300] [--tasks 80]
        [--cache /tmp/vectors.db]

Tasks and the two reference systems come from bench/recall.py (real history: a later commit's
subject is the request, the files it changed are the gold set). Columns, in one run:
  theus      Theus recall without the semantic layer
  theus+sem  Theus recall with the layer on (local model; the node vectors computed first,
             the way `theus index` does, and that time is reported)
  bm25       whole-file BM25 (bm25s), as in bench/recall.py
  dense      dense retrieval over file chunks (CHUNK_LINES lines, path first: the layer's
             own chunking) with the same local model; a file scores its best chunk
  rrf        reciprocal-rank fusion (k=60) of BM25 and dense, both ranked 100 deep
Also: query latency of theus+sem (p50/p95, the query embedding included), embedding throughput
of the index pass and of the chunks, and the seconds the index pass spent embedding.
`--cache` keeps vectors between runs (keyed by model and text, so always safe to reuse).
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
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._tasks import Task
from bench.recall import SYSTEMS, Repo, Row, bm25_ranking, prepare, run_tasks, summary
from knowledge.embed.cache import VectorCache
from knowledge.embed.indexer import NodeVectors, embed_pass, file_chunks
from knowledge.embed.local import LocalEmbedder
from knowledge.recall import Recaller

Ranker = Callable[[Task], list[str]]
DEPTH = 100
RRF_K = 60


class Shared:
    """One loaded model and one cache for every system of the run."""

    def __init__(self, cache_path: Path) -> None:
        self.embedder = LocalEmbedder()  # all cores, like `theus index`
        self.embedder.load()
        self.cache = VectorCache(cache_path, self.embedder.model_id, self.embedder.dim)
        self.figures: dict[str, list[float]] = {
            "index_s": [], "index_texts": [], "chunk_s": [], "chunk_texts": [], "sem_ms": []
        }

    def vectors(self, texts: list[str], kind: str) -> np.ndarray:
        found = self.cache.get_many(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            start = time.perf_counter()
            rows = self.embedder.embed(missing)
            self.figures[f"{kind}_s"].append(time.perf_counter() - start)
            self.figures[f"{kind}_texts"].append(len(missing))
            self.cache.put_many(missing, rows)
            found.update(zip(missing, rows, strict=True))
        return np.stack([found[t] for t in texts]) if texts else np.empty((0, 384), np.float32)


def chunks(repo: Repo) -> tuple[list[str], list[str]]:
    """(path of each chunk, chunk text): the layer's own chunking of every indexed file."""
    paths: list[str] = []
    texts: list[str] = []
    for node in sorted(repo.graph.nodes("file"), key=lambda n: n.path):
        for text in file_chunks(node, repo.root) if node.status == "ok" else []:
            paths.append(node.path)
            texts.append(text)
    return paths, texts


def dense_ranking(shared: Shared, repo: Repo) -> Callable[[str], list[str]]:
    paths, texts = chunks(repo)
    matrix = shared.vectors(texts, "chunk")
    files = sorted(set(paths))
    where = {p: i for i, p in enumerate(files)}
    owner = np.array([where[p] for p in paths])

    def rank(query: str) -> list[str]:
        sims = matrix @ shared.embedder.embed([query])[0]
        best = np.full(len(files), -1.0, dtype=np.float32)
        np.maximum.at(best, owner, sims)
        return [files[i] for i in np.argsort(-best)[:DEPTH]]

    return rank


def rrf(*rankings: list[str], k: int = RRF_K) -> list[str]:
    fused: dict[str, float] = {}
    for ranking in rankings:
        for i, path in enumerate(ranking):
            fused[path] = fused.get(path, 0.0) + 1.0 / (k + i + 1)
    return sorted(fused, key=lambda p: (-fused[p], p))


def semantic_system(shared: Shared, repo: Repo) -> Ranker:
    from knowledge.recall.semantic import SemanticReranker

    store = NodeVectors(shared.embedder.dim)
    report = embed_pass(repo.graph, repo.root, shared.embedder, shared.cache, store)
    if report.embedded:
        shared.figures["index_s"].append(report.embed_seconds)
        shared.figures["index_texts"].append(report.embedded)
    print(f"  (index pass: {report.seen} nodes, {report.cached} cached, {report.embedded} "
          f"embedded in {report.embed_seconds:.1f}s)", flush=True)
    reranker = SemanticReranker.fixed(shared.embedder, store, shared.cache, repo.root)
    recaller = Recaller(repo.graph, repo.root, reranker=reranker)

    def rank(task: Task) -> list[str]:
        start = time.perf_counter()
        result = recaller.recall(task.query, top=30)
        shared.figures["sem_ms"].append((time.perf_counter() - start) * 1000.0)
        return list(dict.fromkeys(h.path for h in result.hits if h.path))

    return rank


def systems(shared: Shared, repo: Repo) -> dict[str, Ranker]:
    dense = dense_ranking(shared, repo)
    bm25 = bm25_ranking(repo, DEPTH)
    return {
        "theus": SYSTEMS["theus"](repo),
        "theus+sem": semantic_system(shared, repo),
        "bm25": SYSTEMS["bm25"](repo),
        "dense": lambda t: dense(t.query),
        "rrf": lambda t: rrf(bm25(t.query), dense(t.query)),
    }


def rate(texts: list[float], seconds: list[float]) -> str:
    if not seconds or sum(seconds) <= 0:
        return "all cached"
    return f"{sum(texts) / sum(seconds):.1f} texts/s ({sum(texts):.0f} in {sum(seconds):.1f}s)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repos", nargs="+", help="git work tree or bare mirror, optional @BASE")
    ap.add_argument("--back", type=int, default=300)
    ap.add_argument("--tasks", type=int, default=80)
    ap.add_argument("--cache", type=Path, help="vector cache file kept between runs")
    ap.add_argument("--show-misses", action="store_true", help="print theus+sem misses")
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="theus-bench-home-")
    os.environ["THEUS_HOME"] = home
    shared = Shared(args.cache or Path(home) / "vectors.db")
    pooled: dict[str, list[Row]] = {}
    roots: list[Path] = []
    try:
        for spec in args.repos:
            repo = prepare(spec, args.back, args.tasks)
            roots.append(repo.root)
            for name, ranker in systems(shared, repo).items():
                rows = run_tasks(ranker, repo.tasks, args.show_misses and name == "theus+sem")
                pooled.setdefault(name, []).extend(rows)
                print(f"  {name:<9} {summary(rows)}", flush=True)
        total = len(next(iter(pooled.values())))
        print(f"\n# pooled over {total} tasks, {len(args.repos)} repositories")
        for name, rows in pooled.items():
            print(f"  {name:<9} {summary(rows)}")
        lat = sorted(shared.figures["sem_ms"])
        print(f"  theus+sem query latency: p50 {statistics.median(lat):.1f} ms, "
              f"p95 {lat[min(len(lat) - 1, int(0.95 * len(lat)))]:.1f} ms")
        f = shared.figures
        print(f"  index pass embedding: {rate(f['index_texts'], f['index_s'])}")
        print(f"  file chunks embedding: {rate(f['chunk_texts'], f['chunk_s'])}")
    finally:
        shared.cache.close()
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
