"""Recall quality on real repositories' history, against the strongest simple baselines
(a benchmark, not a test).

    python bench/recall.py --corpus bench/recall_corpus.txt --mirrors /work/.mirror
        [--set tuning|check|all] [--tasks 80] [--query full|subject|voice|both|all]
        [--voice bench/recall_voice.txt]
        [--systems theus,theus+sem,bm25_code,dense,rrf] [--cache vectors.db] [--ablate]
    python bench/recall.py /path/to/repo[@BASE] ...      (ad hoc, set "adhoc")

Tasks (bench/_tasks.py): a later commit's subject plus cleaned body is the request (`--query
subject` for the subject alone; `--query voice`: the request as a user would ask it, written
from the commit message alone, from `--voice`), the non-test source files it changed are the
gold set, and the definitions it changed the symbol-level gold (bench/_symbols.py). Each
repository is extracted at its base and indexed once (temporary THEUS_HOME). Systems, all in
the same run on the same tasks:

  theus      Theus recall, lexical + graph (THEUS_NO_EMBEDDINGS=1): the `files` list that
             `theus recall --json` prints, built by the same function every front end uses
  theus+sem  the same with the semantic layer on (local model, every file embedded first)
  bm25_code  BM25 over the code files (see bench/_baselines.py for the exact definition)
  dense      the local model over chunks of the code files, a file scores its best chunk
  rrf        reciprocal-rank fusion (k = 60) of bm25_code and dense

Printed per set (tuning and check apart) and per repository: Recall@1/5/10 at file level,
MRR (first gold file, 100 deep), latency p50/p95; for Theus the injected block's median
tokens, how often it names a gold file, how often it names a changed definition and whether
the first definition it names is one (over the tasks whose change touched a definition the
base has), and the targets of the recall issue.
`--ablate` adds a Theus row per signal switched off (lexical + graph, and with the layer).
`--cache` keeps embeddings between runs (keyed by model and text: always safe to reuse).
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
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import knowledge  # noqa: F401  first, as in a Theus process: numpy then loads with one BLAS thread
from entrypoint.settings import apply as apply_settings

# isort: split
from bench import _baselines as base
from bench._symbols import NOT_DEFINITIONS, Definition, changed_definitions, named
from bench._tasks import Task, checkout, git_dir_of, mine, pick_base
from knowledge.embed.indexer import NodeVectors, embed_pass
from knowledge.embed.semantic import SemanticReranker
from knowledge.index.project import Project
from knowledge.memory.context import build_context
from knowledge.recall.recaller import Recaller, RecallTuning, make_recaller

DEPTH = 100


@dataclass
class Answer:
    files: list[str]  # ranked repo-relative paths
    block: str | None = None  # the injected block, for Theus
    tokens: int = 0


Ranker = Callable[[str], Answer]  # request text -> answer


@dataclass
class Repo:
    name: str
    set: str
    root: Path
    base: str
    project: Project
    tasks: list[Task]
    files: list[str]  # code files at the base (the baselines' universe before test removal)
    definitions: dict[str, frozenset[Definition]]  # commit -> the definitions it changed
    labels: dict[str, frozenset[str]]  # path -> its definitions' qualified names at the base


@dataclass
class Row:
    r1: float
    r5: float
    r10: float
    rr: float
    ms: float
    tokens: int | None = None  # the block's, for Theus
    named: bool = False  # the block names a gold file
    # Over tasks with changed definitions (None otherwise, or without a block): the block
    # names one of them, and the first definition it names is one.
    defs_named: bool | None = None
    defs_first: bool | None = None


def score(answer: Answer, task: Task, repo: Repo, ms: float) -> Row:
    gold, ranked = task.gold, answer.files

    def at(k: int) -> float:
        return len(gold.intersection(ranked[:k])) / len(gold)

    rr = next((1.0 / (i + 1) for i, p in enumerate(ranked[:DEPTH]) if p in gold), 0.0)
    if answer.block is None:
        return Row(at(1), at(5), at(10), rr, ms)
    named_file = any(g in answer.block for g in gold)
    row = Row(at(1), at(5), at(10), rr, ms, answer.tokens, named_file)
    changed = repo.definitions.get(task.commit)
    if changed:
        shown = named(answer.block, lambda p: repo.labels.get(p, frozenset()))
        row.defs_named = any(d in changed for d in shown)
        row.defs_first = bool(shown) and shown[0] in changed
    return row


def mean(rows: list[Row], what: str) -> float:
    return statistics.fmean(getattr(r, what) for r in rows) if rows else 0.0


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0


# -- systems -------------------------------------------------------------------------------


def theus_ranker(recaller: Recaller) -> Ranker:
    """Theus's file ranking and its block, through the functions the product uses; warmed
    first, as the app and the agent warm it at start."""
    recaller.warm()

    def rank(query: str) -> Answer:
        context = build_context(recaller, query)
        return Answer(context.recall.files, context.block, context.tokens)

    return rank


def baseline(ranking: base.Ranking) -> Ranker:
    return lambda query: Answer(ranking(query))


def semantic_reranker(repo: Repo, emb: base.Embeddings) -> SemanticReranker:
    vectors = NodeVectors(emb.embedder.dim)
    report = embed_pass(repo.project.graph, repo.root, emb.embedder, emb.cache, vectors)
    print(
        f"  (semantic layer: {report.seen} nodes, {report.cached} cached, "
        f"{report.embedded} embedded in {report.embed_seconds:.1f}s)",
        flush=True,
    )
    return SemanticReranker.fixed(emb.embedder, vectors, emb.cache, repo.root)


def systems(
    repo: Repo, names: list[str], emb: base.Embeddings | None, ablate: bool
) -> dict[str, Ranker]:
    root = repo.root
    out: dict[str, Ranker] = {}
    reranker = semantic_reranker(repo, emb) if emb and "theus+sem" in names else None
    variants: list[tuple[str, RecallTuning]] = [("", RecallTuning())]
    if ablate:
        variants += [(f"-{n}", t) for n, t in RecallTuning().ablations().items()]
    for suffix, tuning in variants:
        if "theus" in names:
            out["theus" + suffix] = theus_ranker(make_recaller(repo.project, tuning=tuning))
        if reranker is not None:
            out["theus+sem" + suffix] = theus_ranker(
                make_recaller(repo.project, reranker=reranker, tuning=tuning)
            )
    bm25 = base.bm25_code(root, repo.files) if {"bm25_code", "rrf"} & set(names) else None
    dense = base.dense(emb, root, repo.files) if emb and {"dense", "rrf"} & set(names) else None
    if bm25 and "bm25_code" in names:
        out["bm25_code"] = baseline(bm25)
    if dense and "dense" in names:
        out["dense"] = baseline(dense)
    if bm25 and dense and "rrf" in names:
        out["rrf"] = baseline(lambda q: base.rrf(bm25(q), dense(q)))
    return out


def run(ranker: Ranker, repo: Repo, variant: str, voice: dict[str, str]) -> list[Row]:
    rows = []
    for task in repo.tasks:
        text = {"subject": task.subject, "full": task.query}.get(variant)
        if text is None:
            text = voice.get(task_id(task))
            if text is None:
                continue
        start = time.perf_counter()
        ranked = ranker(text)
        rows.append(score(ranked, task, repo, (time.perf_counter() - start) * 1e3))
    return rows


def task_id(task: Task) -> str:
    """How the voice file names a task: `owner/name sha12`."""
    return f"{task.repo} {task.commit[:12]}"


def read_voice(path: Path) -> dict[str, str]:
    """task id -> the request in a user's words (`owner/name sha12<TAB>text` lines)."""
    out: dict[str, str] = {}
    if not path.is_file():
        return out
    for raw in path.read_text().splitlines():
        if raw.strip() and not raw.startswith("#"):
            key, _, text = raw.partition("\t")
            out[key.strip()] = text.strip()
    return out


# -- reporting -------------------------------------------------------------------------------


def line(name: str, rows: list[Row]) -> str:
    lat = [r.ms for r in rows]
    return (
        f"  {name:<16} R@1 {mean(rows, 'r1'):.3f}  R@5 {mean(rows, 'r5'):.3f}  "
        f"R@10 {mean(rows, 'r10'):.3f}  MRR {mean(rows, 'rr'):.3f}  "
        f"p50 {statistics.median(lat):6.1f} ms  p95 {p95(lat):6.1f} ms"
    )


def report(
    title: str,
    repos: list[Repo],
    results: dict[tuple[str, str], list[Row]],
    names: list[str],
    variant: str,
) -> None:
    if not repos:
        return
    pooled = {n: [x for r in repos for x in results.get((r.name, n), [])] for n in names}
    tasks = max((len(rows) for rows in pooled.values()), default=0)
    print(f"\n## {title}, query = {variant}: {tasks} tasks, {len(repos)} repositories")
    for name in names:
        if pooled[name]:
            print(line(name, pooled[name]))
    for name in names:
        blocks = [r for r in pooled[name] if r.tokens is not None]
        if blocks:
            named = sum(1 for r in blocks if r.named) / len(blocks)
            empty = sum(1 for r in blocks if r.tokens == 0) / len(blocks)
            tokens = statistics.median(r.tokens or 0 for r in blocks)
            print(
                f"  {name} block: median {tokens:.0f} tokens, names a gold file in "
                f"{named:.1%} of tasks, empty in {empty:.1%}"
            )
            print(f"  {name} definitions: {definitions(blocks)}")
            for r in repos:
                print(f"    {r.name:<22} {definitions(results.get((r.name, name), []))}")
    present = [n for n in names if pooled[n]]
    print("  per repository, R@5 / MRR:")
    print("    " + f"{'':<22}" + "".join(f"{n:>17}" for n in present))
    for r in repos:
        cells = "".join(
            f"{mean(rows, 'r5'):>9.3f}/{mean(rows, 'rr'):.3f}"
            for n in present
            for rows in [results.get((r.name, n), [])]
        )
        print(f"    {r.name:<22}{cells}")
    targets(repos, results, pooled)


def definitions(rows: list[Row]) -> str:
    """How often the block names a changed definition, and names one first."""
    counted = [r for r in rows if r.defs_named is not None]
    if not counted:
        return "no task changed a definition"
    some = sum(1 for r in counted if r.defs_named) / len(counted)
    first = sum(1 for r in counted if r.defs_first) / len(counted)
    tokens = statistics.median(r.tokens or 0 for r in counted)
    return (
        f"names a changed one in {some:.1%}, first named is changed in {first:.1%} "
        f"({len(counted)} tasks, median {tokens:.0f} tokens)"
    )


def targets(
    repos: list[Repo], results: dict[tuple[str, str], list[Row]], pooled: dict[str, list[Row]]
) -> None:
    """The issue's bars: theus >= bm25_code + 0.03, theus+sem >= rrf + 0.03 (pooled and per
    repository), and no repository more than 0.02 below its best baseline with the layer."""
    pairs = [("theus", "bm25_code", 0.03), ("theus+sem", "rrf", 0.03)]
    for ours, theirs, margin in pairs:
        if not pooled.get(ours) or not pooled.get(theirs):
            continue
        scopes = [("pooled", pooled[ours], pooled[theirs])] + [
            (r.name, results[(r.name, ours)], results[(r.name, theirs)]) for r in repos
        ]
        fails = []
        for scope, a, b in scopes:
            for what in ("r5", "rr"):
                delta = mean(a, what) - mean(b, what)
                if delta < margin:
                    fails.append(f"{scope} {what} {delta:+.3f}")
        d5 = mean(pooled[ours], "r5") - mean(pooled[theirs], "r5")
        dm = mean(pooled[ours], "rr") - mean(pooled[theirs], "rr")
        verdict = "met" if not fails else "NOT met: " + ", ".join(fails)
        print(
            f"  target {ours} >= {theirs} + {margin}: pooled R@5 {d5:+.3f}, MRR {dm:+.3f}; "
            f"{verdict}"
        )
    if pooled.get("theus+sem"):
        fails = []
        for r in repos:
            layer = results[(r.name, "theus+sem")]
            for what in ("r5", "rr"):
                best = max(
                    (
                        mean(results[(r.name, b)], what)
                        for b in ("bm25_code", "dense", "rrf")
                        if (r.name, b) in results
                    ),
                    default=0.0,
                )
                if mean(layer, what) < best - 0.02:
                    fails.append(f"{r.name} {what} {mean(layer, what) - best:+.3f}")
        print(
            "  target no repository > 0.02 below its best baseline (theus+sem): "
            + ("met" if not fails else "NOT met: " + ", ".join(fails))
        )


# -- main ----------------------------------------------------------------------------------


def specs(args: argparse.Namespace) -> list[tuple[str, str, Path, str]]:
    """(set, name, git dir, base) of every repository to run."""
    out = []
    if args.corpus:
        for raw in Path(args.corpus).read_text().splitlines():
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            which, slug, commit = raw.split()
            if args.set in ("all", which):
                git_dir = Path(args.mirrors) / slug.replace("/", "+") / "repo"
                out.append((which, slug, git_dir, commit))
    for spec in args.repos:
        path, _, commit = spec.partition("@")
        git_dir = git_dir_of(Path(path).resolve())
        name = git_dir.parent.name if git_dir.name in ("repo", ".git") else git_dir.name
        out.append(("adhoc", name, git_dir, commit or pick_base(git_dir, args.back)))
    return out


def prepare(which: str, name: str, git_dir: Path, commit: str, limit: int) -> Repo:
    tasks = mine(git_dir, commit, name, limit)
    root = checkout(git_dir, commit)
    start = time.perf_counter()
    project = Project(root)
    indexed = project.index()
    files = base.code_files(git_dir, commit)
    graph = project.graph
    labels = {
        path: frozenset(
            n.label
            for n in graph.owned_nodes(path)
            if n.kind == "symbol" and n.subkind not in NOT_DEFINITIONS
        )
        for path in graph.owners()
    }
    changed = {
        t.commit: changed_definitions(
            git_dir, t.commit, t.gold, lambda d: d[1] in labels.get(d[0], frozenset())
        )
        for t in tasks
    }
    print(
        f"# [{which}] {name} @ {commit[:12]}: {indexed.files} files indexed "
        f"({len(files)} code files), {len(graph)} nodes, "
        f"{time.perf_counter() - start:.1f}s; {len(tasks)} tasks, "
        f"{sum(1 for c in changed.values() if c)} with changed definitions",
        flush=True,
    )
    return Repo(name, which, root, commit, project, tasks, files, changed, labels)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repos", nargs="*", help="git work tree or bare mirror, optional @BASE")
    ap.add_argument("--corpus", help="file of `set owner/name base` lines")
    ap.add_argument("--mirrors", default="/work/.mirror", help="folder of <owner>+<name>/repo")
    ap.add_argument("--set", default="all", help="tuning, check or all (with --corpus)")
    ap.add_argument("--back", type=int, default=300, help="base = HEAD~BACK when not given")
    ap.add_argument("--tasks", type=int, default=80, help="at most this many tasks per repo")
    ap.add_argument("--query", default="both", choices=("full", "subject", "voice", "both", "all"))
    ap.add_argument(
        "--voice",
        type=Path,
        default=Path(__file__).with_name("recall_voice.txt"),
        help="the tasks' requests in a user's words",
    )
    ap.add_argument("--systems", default="theus,theus+sem,bm25_code,dense,rrf")
    ap.add_argument("--cache", type=Path, help="vector cache file kept between runs")
    ap.add_argument("--ablate", action="store_true", help="a Theus row per signal removed")
    args = ap.parse_args()
    names = [s for s in args.systems.split(",") if s]
    variants = {"both": ["full", "subject"], "all": ["full", "subject", "voice"]}.get(
        args.query, [args.query]
    )
    voice = read_voice(args.voice) if "voice" in variants else {}
    home = tempfile.mkdtemp(prefix="theus-bench-home-")
    os.environ["THEUS_HOME"] = home
    apply_settings({}, os.environ)
    needs_model = bool({"theus+sem", "dense", "rrf"} & set(names))
    emb = base.Embeddings(args.cache or Path(home) / "vectors.db") if needs_model else None
    repos: list[Repo] = []
    results: dict[str, dict[tuple[str, str], list[Row]]] = {v: {} for v in variants}
    shown: list[str] = []
    try:
        for which, name, git_dir, commit in specs(args):
            repo = prepare(which, name, git_dir, commit, args.tasks)
            repos.append(repo)
            for label, ranker in systems(repo, names, emb, args.ablate).items():
                if label not in shown:
                    shown.append(label)
                for variant in variants:
                    rows = run(ranker, repo, variant, voice)
                    results[variant][(repo.name, label)] = rows
                    if rows:
                        print(f"  {variant:<7}" + line(label, rows)[1:], flush=True)
            repo.project.close()
            shutil.rmtree(repo.root, ignore_errors=True)
        for variant in variants:
            for which in dict.fromkeys(r.set for r in repos):
                report(
                    f"{which} set",
                    [r for r in repos if r.set == which],
                    results[variant],
                    shown,
                    variant,
                )
        if emb is not None and emb.embedded:
            print(
                f"\n(embedded {emb.embedded} texts in {emb.seconds:.0f}s: "
                f"{emb.embedded / max(emb.seconds, 1e-9):.1f} texts/s)"
            )
    finally:
        if emb is not None:
            emb.close()
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
