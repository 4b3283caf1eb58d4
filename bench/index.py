"""Index benchmark: cold and warm index of real trees, store size and peak memory.

Usage: python bench/index.py PATH [PATH ...] [--runs 3]

PATH is any source tree: a checkout of a public repository, or an installed package's folder.
Each run indexes in a fresh child process with an empty THEUS_HOME (cold), then again with no
change (warm, also a fresh process: store open + walk + stat). Figures are medians over runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TypedDict

from entrypoint.settings import apply as apply_settings

CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
from knowledge.index.project import Project
t0 = time.perf_counter()
project = Project(Path(sys.argv[1]))
report = project.index()
seconds = time.perf_counter() - t0
lines = sum(s.lines for s in project.files.values())
counts = project.counts()
rss_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
rss_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
store = project.paths.store
project.close()  # folds the WAL back: the size is the store as it stays on disk
size = sum(p.stat().st_size for p in store.parent.glob(store.name + "*"))
print(json.dumps({"seconds": seconds, "parsed": report.parsed, "files": report.files,
                  "lines": lines, "nodes": sum(v for k, v in counts.items() if k != "edges"),
                  "edges": counts.get("edges", 0), "rss_mb": rss_self / 1024,
                  "worker_rss_mb": rss_children / 1024, "store_mb": size / 1e6,
                  "skipped": report.skipped}))
"""


class ChildRun(TypedDict):
    """The JSON line one CHILD run prints."""

    seconds: float
    parsed: int
    files: int
    lines: int
    nodes: int
    edges: int
    rss_mb: float
    worker_rss_mb: float
    store_mb: float
    skipped: dict[str, int]


def run_child(path: Path, home: Path) -> ChildRun:
    env = {"THEUS_HOME": str(home), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    run: ChildRun = json.loads(out.stdout)
    return run


def bench(path: Path, runs: int) -> dict[str, object]:
    cold: list[ChildRun] = []
    warm: list[ChildRun] = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as home:
            cold.append(run_child(path, Path(home)))
            warm.append(run_child(path, Path(home)))
            assert warm[-1]["parsed"] == 0, "a warm re-index must parse nothing"
    first = cold[0]
    cold_s = statistics.median(r["seconds"] for r in cold)
    return {
        "path": str(path),
        "files": first["files"],
        "lines": first["lines"],
        "nodes": first["nodes"],
        "edges": first["edges"],
        "cold_s": cold_s,
        "lines_per_s": first["lines"] / cold_s,
        "warm_s": statistics.median(r["seconds"] for r in warm),
        "store_mb": first["store_mb"],
        "peak_rss_mb": statistics.median(r["rss_mb"] for r in cold),
        "worker_rss_mb": statistics.median(r["worker_rss_mb"] for r in cold),
        "skipped": first["skipped"],
    }


def main() -> None:
    apply_settings({}, os.environ)  # as `theus` does at start
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"theus index, median of {args.runs} runs")
    columns = [
        "path",
        "files",
        "lines",
        "nodes",
        "edges",
        "cold s",
        "lines/s",
        "warm s",
        "store MB",
        "peak RSS MB",
        "worker RSS MB",
    ]
    for name in columns:
        table.add_column(name, justify="left" if name == "path" else "right")
    for path in args.paths:
        r = bench(path.resolve(), args.runs)
        table.add_row(
            Path(str(r["path"])).name,
            f"{r['files']:,}",
            f"{r['lines']:,}",
            f"{r['nodes']:,}",
            f"{r['edges']:,}",
            f"{r['cold_s']:.2f}",
            f"{r['lines_per_s']:,.0f}",
            f"{r['warm_s']:.3f}",
            f"{r['store_mb']:.1f}",
            f"{r['peak_rss_mb']:.0f}",
            f"{r['worker_rss_mb']:.0f}",
        )
        print(json.dumps(r), file=sys.stderr)
    Console().print(table)


if __name__ == "__main__":
    main()
