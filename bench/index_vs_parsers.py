"""Cold `theus index --no-embed` against the parsers' floor and Aider's tag extraction.

Usage: python bench/index_vs_parsers.py PATH [PATH ...] [--runs 5]
       [--aider-python /tmp/aider-venv/bin/python] [--before SRC] [--floor]

PATH is a checkout. The files are exactly those Theus indexes (its walker and ignore rules);
each run, interleaved and in a fresh child process each:
- `theus cold`: `python -m entrypoint --path PATH index --no-embed` over an empty THEUS_HOME,
  wall time of the whole command (start-up, walk, parse, store, snapshot);
- `before` (with --before SRC): the same command run from another source tree (an export of
  an older commit), so a change is measured against its base in the same run;
- `parse-only`: one process reads every file from disk and parses with tree-sitter those that
  have a grammar among Theus's wheels (tree-sitter-python for Python), timed from the first
  read to the last parse: the floor the issue names. `ast-only` is the same with the standard
  `ast` for Python (what Theus parsed Python with before tree-sitter), for reference;
- `floor`: one process doing only the work whose output a cold index keeps, each step at its
  library's speed: read, parse and extract symbols (`extract_file`), redact, count the
  words recall ranks by (`frozen_texts`, in the index's chunks); no store, links or snapshot.
  Its CPU seconds over the machine's cores bound how close Theus can come to `parse-only`;
- `aider` (with --aider-python: a venv with aider-chat installed, never this project's):
  Aider's `RepoMap.get_tags_raw` on every file, with no tag cache, timed around the loop.

Prints the median and min of each, its CPU seconds (workers' included: the work done, which
the machine's load moves less than the wall time), the throughput ratios of each median
against Theus's, and the peak RSS of each child (the largest process).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TypedDict

from entrypoint.settings import apply as apply_settings

PARSE_ONLY = r"""
import ast, importlib, json, resource, sys, time
import tree_sitter as ts
from knowledge.index.languages import LANGUAGES, by_suffix
root, theus_parsers = sys.argv[1], sys.argv[2] == "ast"
files = json.load(sys.stdin)
parsers = {}
def parser_for(rel):
    spec = by_suffix(rel)
    if spec is None:
        return None
    grammar = spec.grammar
    if grammar is None and spec.name == "python" and not theus_parsers:
        module, function = "tree_sitter_python", "language"
    elif grammar is None:
        return "ast" if spec.name == "python" else None
    else:
        module, function = grammar.module, grammar.function
    if spec.name not in parsers:
        lang = ts.Language(getattr(importlib.import_module(module), function)())
        parsers[spec.name] = ts.Parser(lang)
    return parsers[spec.name]
parsed = 0
t0 = time.perf_counter()
for rel in files:
    with open(f"{root}/{rel}", "rb") as f:
        data = f.read()
    parser = parser_for(rel)
    if parser == "ast":
        try:
            ast.parse(data)
        except (SyntaxError, ValueError):
            pass
        parsed += 1
    elif parser is not None:
        parser.parse(data)
        parsed += 1
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "parsed": parsed}))
"""

FLOOR = r"""
import gc, json, sys, time
import knowledge
from knowledge.core.filetext import text_of
from knowledge.core.redact import redact
from knowledge.index.analyse import _decode
from knowledge.index.extract import extract_file
from knowledge.index.project import _CHUNK
from knowledge.recall.content import frozen_texts
root = sys.argv[1]
files = json.load(sys.stdin)
gc.disable()  # as in the index's workers
steps = {}
t = time.process_time()
datas = []
for rel in files:
    with open(f"{root}/{rel}", "rb") as f:
        datas.append((rel, f.read()))
steps["read"] = time.process_time() - t
texts = [(rel, data, text) for rel, data in datas if (text := _decode(data)[0]) is not None]
t = time.process_time()
for rel, data, _ in texts:
    extract_file(rel, data)
steps["extract"] = time.process_time() - t
t = time.process_time()
for _, _, text in texts:
    redact(text)
steps["redact"] = time.process_time() - t
recalled = [(rel, r) for rel, data, _ in texts if (r := text_of(rel, data)) is not None]
t = time.process_time()
for at in range(0, len(recalled), _CHUNK):
    frozen_texts(recalled[at : at + _CHUNK])
steps["counts"] = time.process_time() - t
print(json.dumps({"seconds": sum(steps.values()), **steps}))
"""

AIDER = r"""
import json, os, shutil, sys, tempfile, time
from aider.io import InputOutput
from aider.repomap import RepoMap
root = sys.argv[1]
files = json.load(sys.stdin)
io = InputOutput(pretty=False, yes=True)
# RepoMap opens its tag cache in the checkout, where the next Theus run would index it.
RepoMap.TAGS_CACHE_DIR = tempfile.mkdtemp(prefix="aider-tags-")
rm = RepoMap(root=root, io=io, verbose=False)
tags = 0
t0 = time.perf_counter()
for rel in files:
    tags += sum(1 for _ in rm.get_tags_raw(os.path.join(root, rel), rel))
seconds = time.perf_counter() - t0
shutil.rmtree(RepoMap.TAGS_CACHE_DIR, ignore_errors=True)
print(json.dumps({"seconds": seconds, "tags": tags}))
"""


FLOOR_STEPS = ("read", "extract", "redact", "counts")


class Run(TypedDict):
    seconds: float
    cpu: float
    rss_mb: float
    detail: dict[str, object]


def run_child(cmd: list[str], cwd: Path, env: dict[str, str], stdin: str = "") -> Run:
    """Wall seconds, CPU seconds (user and system, its workers' included), peak RSS (`wait4`:
    the child itself, not its workers) of one child process, and its last JSON line as
    detail."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=out, stderr=err
        )
        assert proc.stdin is not None
        proc.stdin.write(stdin.encode())
        proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise SystemExit(f"{' '.join(cmd[:4])}... failed: {err.read().strip()[-500:]}")
        lines = [line for line in out.read().splitlines() if line.startswith("{")]
    detail = json.loads(lines[-1]) if lines else {}
    cpu = usage.ru_utime + usage.ru_stime
    return {"seconds": wall, "cpu": cpu, "rss_mb": usage.ru_maxrss / 1024, "detail": detail}


def indexed_files(root: Path) -> list[str]:
    """What `theus index` reads: the walker's files under the project's ignore rules."""
    from knowledge.index.analyse import MAX_BYTES
    from knowledge.index.ignore import IgnoreRules
    from knowledge.index.walker import walk

    found = walk(root, IgnoreRules(root))
    return sorted(f.rel for f in found.files if f.size <= MAX_BYTES)


def summary(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), min(values)


def bench(root: Path, args: argparse.Namespace) -> None:
    files = indexed_files(root)
    listing = json.dumps(files)
    here = Path(__file__).resolve().parent.parent
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    systems: dict[str, list[Run]] = {}

    def theus(src: Path) -> Run:
        with tempfile.TemporaryDirectory() as home:
            cmd = [sys.executable, "-m", "entrypoint", "--path", str(root)]
            cmd += ["index", "--no-embed", "--json"]
            return run_child(cmd, src, {**env, "THEUS_HOME": home})

    jobs: dict[str, object] = {
        "theus cold": lambda: theus(here),
        "parse-only": lambda: run_child(
            [sys.executable, "-c", PARSE_ONLY, str(root), "ts"], here, env, listing
        ),
        "ast-only": lambda: run_child(
            [sys.executable, "-c", PARSE_ONLY, str(root), "ast"], here, env, listing
        ),
    }
    if args.before:
        jobs["before"] = lambda: theus(args.before.resolve())
    if args.floor:
        jobs["floor"] = lambda: run_child(
            [sys.executable, "-c", FLOOR, str(root)], here, env, listing
        )
    if args.aider_python:
        aider_env = {**env, "HOME": tempfile.mkdtemp(prefix="aider-home-")}
        jobs["aider"] = lambda: run_child(
            [str(args.aider_python), "-c", AIDER, str(root)], Path("/tmp"), aider_env, listing
        )
    names = list(jobs)
    for i in range(args.runs):
        order = names[i % len(names) :] + names[: i % len(names)]  # rotate: no fixed position
        for name in order:
            job = jobs[name]
            assert callable(job)
            systems.setdefault(name, []).append(job())
        print(f"# run {i + 1}/{args.runs} done", file=sys.stderr, flush=True)

    # The in-process timed part for the parsers and Aider (their start-up and imports left
    # out, in their favour); the whole command for Theus.
    def seconds(name: str, run: Run) -> float:
        inner = run["detail"].get("seconds")
        if name.startswith(("parse", "ast", "aider", "floor")) and isinstance(inner, float):
            return inner
        return run["seconds"]

    first = systems["theus cold"][0]["detail"]
    print(
        f"\n{root.name}: {len(files):,} files, {first.get('files', '?')} file nodes, "
        f"{first.get('symbols', '?')} symbols, {first.get('edges', '?')} edges; "
        f"median/min of {args.runs} interleaved runs"
    )
    theus_median = statistics.median(seconds("theus cold", r) for r in systems["theus cold"])
    print(
        f"{'system':12} {'median s':>9} {'min s':>8} {'CPU s':>6} {'RSS MB':>7} "
        f"{'theus/x thrpt':>14}"
    )
    for name, runs in systems.items():
        median, low = summary([seconds(name, r) for r in runs])
        cpu = statistics.median(r["cpu"] for r in runs)
        rss = statistics.median(r["rss_mb"] for r in runs)
        ratio = median / theus_median  # theus throughput as a fraction of this system's
        print(f"{name:12} {median:9.2f} {low:8.2f} {cpu:6.2f} {rss:7.0f} {ratio:14.2f}")
    print("# CPU s: the whole process's, start-up included, workers' too (median)")
    floor = systems.get("floor")
    if floor:
        steps = {
            k: statistics.median(float(str(r["detail"][k])) for r in floor) for k in FLOOR_STEPS
        }
        least = statistics.median(seconds("floor", r) for r in floor) / (os.cpu_count() or 1)
        parse = statistics.median(seconds("parse-only", r) for r in systems["parse-only"])
        print(
            "# floor: CPU s in one process, "
            + ", ".join(f"{k} {v:.2f}" for k, v in steps.items())
            + f"; over {os.cpu_count()} cores at best {least:.2f} s, so theus/parse-only "
            f"<= {parse / least:.2f} before start-up, the store, links and the snapshot"
        )
    aider = systems.get("aider")
    if aider:
        print(f"# aider tags: {aider[0]['detail'].get('tags')}")


def main() -> None:
    apply_settings({}, os.environ)  # as `theus` does at start
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--aider-python", type=Path, help="python of a venv with aider-chat")
    parser.add_argument("--before", type=Path, help="another Theus source tree to compare")
    parser.add_argument("--floor", action="store_true", help="the least work, step by step")
    args = parser.parse_args()
    for path in args.paths:
        bench(path.resolve(), args)


if __name__ == "__main__":
    main()
