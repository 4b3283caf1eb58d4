"""How long a memdir sync takes with 1,000 memories (median of several runs).

    python bench/memdir.py [--memories 1000] [--runs 7] [--project PATH]

Without --project a small synthetic project (60 Python files) is indexed so that backticked
paths in the memories resolve to real file nodes. THEUS_HOME is a temporary folder: nothing
outside it is touched. Scenarios:
  cold      all N entries new: N nodes upserted, mention edges linked, one store save
  warm      nothing changed (what every watcher event after our own write costs)
  edit      one line edited by hand among N
  capped    N entries with Claude Code's caps (200 lines / 25 KB): 200 loaded, rest reported
  add       one `add_memory` (topic file + pointer + sync) on top of N-1 entries
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from entrypoint.settings import apply as apply_settings

T = TypeVar("T")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--project",
        type=Path,
        default=None,
        help="index this folder instead of a synthetic project",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="theus-bench-memdir-") as tmp:
        os.environ["THEUS_HOME"] = str(Path(tmp) / "home")
        os.environ.pop("THEUS_NO_MEMDIR", None)
        apply_settings({}, os.environ)
        root = args.project or _synthetic(Path(tmp) / "repo")
        run(root.resolve(), args.memories, args.runs)
    return 0


def run(root: Path, n: int, runs: int) -> None:
    from knowledge import memdir
    from knowledge.index.project import Project
    from knowledge.memdir import Caps

    project = Project(root)
    start = time.perf_counter()
    project.index()
    files = sorted(project.files)
    print(f"project: {root} ({len(files)} files indexed in {time.perf_counter() - start:.2f} s)")
    mdir = project.paths.memory
    mdir.mkdir(parents=True, exist_ok=True)
    index = mdir / "MEMORY.md"
    lifted = Caps(lines=n + 10, bytes=10**8)
    full = _index_text(mdir, n, files)
    topics = sum(1 for line in full.splitlines() if "](" in line)
    print(
        f"memories: {n} ({topics} pointers to topic files), MEMORY.md "
        f"{len(full.encode()) / 1024:.0f} KB, {runs} runs each\n"
    )

    def cold() -> None:
        index.write_text("")
        memdir.sync(project, lifted)
        index.write_text(full)

    report = _time("cold", runs, cold, lambda: memdir.sync(project, lifted))
    assert report.entries == n and len(report.added) == n, report.to_json()
    report = _time("warm", runs, lambda: None, lambda: memdir.sync(project, lifted))
    assert not report.changed
    counter = [0]

    def edit() -> None:
        counter[0] += 1
        lines = full.splitlines()
        lines[n // 2] = f"- edited by hand, version {counter[0]}"
        index.write_text("\n".join(lines) + "\n")

    report = _time("edit", runs, edit, lambda: memdir.sync(project, lifted))
    assert len(report.added) == 1 and len(report.removed) == 1
    index.write_text(full)
    memdir.sync(project)
    report = _time("capped", runs, lambda: None, lambda: memdir.sync(project))
    assert report.entries < n and report.warnings
    print(f"          ({report.entries} loaded, {report.not_loaded} reported not loaded)")
    short = "\n".join(full.splitlines()[:-1]) + "\n"
    counter[0] = 0

    def before_add() -> None:
        counter[0] += 1
        index.write_text(short)
        memdir.sync(project, lifted)

    _time(
        "add",
        runs,
        before_add,
        lambda: memdir.add_memory(
            project, f"added through the API, run {counter[0]}, see `{files[0]}`", lifted
        ),
    )
    project.close()


def _time(name: str, runs: int, setup: Callable[[], object], step: Callable[[], T]) -> T:
    seconds: list[float] = []
    result: T  # set by the first run (with no run, the median below raises first)
    for _ in range(runs):
        setup()
        start = time.perf_counter()
        result = step()
        seconds.append(time.perf_counter() - start)
    print(
        f"{name:<8}  median {statistics.median(seconds) * 1000:8.1f} ms   "
        f"min {min(seconds) * 1000:8.1f} ms   max {max(seconds) * 1000:8.1f} ms"
    )
    return result


def _index_text(mdir: Path, n: int, files: list[str]) -> str:
    """70% one-line memories, 30% pointers to topic files a person wrote; about one in three
    mentions a project file in backticks."""
    lines = []
    for i in range(n):
        mention = f" — see `{files[i % len(files)]}`" if files and i % 3 == 0 else ""
        if i % 10 < 7:
            lines.append(f"- memory {i}: prefer small commits in this area{mention}")
        else:
            name = f"topic-{i}.md"
            (mdir / name).write_text(
                f"---\nname: Topic {i}\ndescription: notes {i}\ntype: project\n---\n\n"
                f"Longer notes for topic {i}{mention}.\n" + "More detail. " * 20 + "\n"
            )
            lines.append(f"- [Topic {i}]({name}) — notes {i}")
    return "\n".join(lines) + "\n"


def _synthetic(root: Path) -> Path:
    for i in range(60):
        path = root / f"pkg{i % 6}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"class Thing{i}:\n    def run_{i}(self):\n        return {i}\n")
    return root


if __name__ == "__main__":
    raise SystemExit(main())
