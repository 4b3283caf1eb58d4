"""The injection time box, cold and warm, under load (a benchmark, not a test).

    python bench/time_box.py PATH [--runs 200] [--load 2] [--semantic]

On PATH (a checkout, indexed first into a temporary THEUS_HOME, only read), with `--load`
processes spinning on the CPU the whole time, each run asks the agent's injector for a
request's block exactly as a front end does (`theus.agent.setup.make_agent` over a `Memory`),
and measures how long `inject` took against what it is allowed:

  cold app       a new Memory opening on a thread, the agent made at once (its warm-up
                 started), the first request injected: allowed the injection deadline
  cold headless  the same as `theus -p` makes it (the request prefetched at start):
                 allowed the graph wait (ONE_SHOT_GRAPH_WAIT_S) plus the deadline
  warm           later requests on the app's agent: allowed the deadline

Requests are "where is X defined and who calls it?" for symbols spread over the project.
Prints per kind: runs, median and max milliseconds, the overshoot past the allowance (p99 and
max), how many runs overshot by more than 10 ms, and how many came back with a block. The
time box holds when the overshoot stays within the event loop's own scheduling latency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from entrypoint.settings import apply as apply_settings

TOLERANCE_MS = 10.0
SPIN = "while True: pass"


@dataclass
class Kind:
    name: str
    took_ms: list[float] = field(default_factory=list)
    over_ms: list[float] = field(default_factory=list)
    blocks: int = 0

    def add(self, took_ms: float, allowed_ms: float, block: bool) -> None:
        self.took_ms.append(took_ms)
        self.over_ms.append(took_ms - allowed_ms)
        self.blocks += block

    def row(self) -> str:
        over = sorted(self.over_ms)
        p99 = over[min(len(over) - 1, int(len(over) * 0.99))]
        late = sum(o > TOLERANCE_MS for o in over)
        return (
            f"{self.name:<14} {len(over):>5} {statistics.median(self.took_ms):>9.1f} "
            f"{max(self.took_ms):>8.1f} {p99:>+10.1f} {over[-1]:>+9.1f} {late:>6} "
            f"{self.blocks:>7}"
        )


def requests(root: Path, runs: int) -> list[str]:
    from knowledge.index.project import Project

    project = Project(root)
    try:
        labels = sorted({n.label for n in project.store.of_kind("symbol") if len(n.label) > 6})
    finally:
        project.close()
    if not labels:
        raise SystemExit(f"no symbols indexed in {root}")
    step = max(1, len(labels) // runs)
    return [f"where is {label} defined and who calls it?" for label in labels[::step]][:runs]


async def one(root: Path, request: str, headless: bool, warm: list[str] | None) -> list[float]:
    """(took, allowed, block) of the first request, then of each `warm` request."""
    from knowledge.memory import Memory
    from theus.agent.block_child import ONE_SHOT_GRAPH_WAIT_S
    from theus.agent.setup import make_agent
    from theus.config import ModelSettings

    settings = ModelSettings("http://127.0.0.1:9/v1", "k", "m", "bench")
    memory = Memory(root, one_shot=headless, watch=False)
    opening = asyncio.get_running_loop().run_in_executor(None, memory.open)
    agent = make_agent(
        memory, settings, None, headless=headless, first_request=request if headless else None
    )
    deadline_ms = agent.injector.settings.injection_deadline_ms
    out: list[float] = []

    async def timed(text: str, allowed: float) -> None:
        start = time.perf_counter()
        info = await agent.injector.inject(text)
        out.extend([(time.perf_counter() - start) * 1000, allowed, float(bool(info.block))])

    try:
        await timed(request, deadline_ms + (ONE_SHOT_GRAPH_WAIT_S * 1000 if headless else 0.0))
        await opening
        if warm:
            await asyncio.to_thread(memory.settle, 30.0)  # warm: contents read, model loaded
            for text in warm:
                await timed(text, deadline_ms)
    finally:
        memory.close()
        await agent.model.close()
    return out


def child(root: Path, request: str, headless: bool) -> list[float]:
    """`one` cold, in a new process (the imports done before the clock starts)."""
    code = (
        "import asyncio, json, os, sys; from pathlib import Path; "
        "from entrypoint.settings import apply; apply({}, os.environ); "
        "import bench.time_box as b; "
        "print(json.dumps(asyncio.run(b.one(Path(sys.argv[1]), sys.argv[2], "
        "sys.argv[3] == '1', None))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(root), request, "1" if headless else "0"],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=True,
    )
    found: list[float] = json.loads(done.stdout.splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--load", type=int, default=2, help="CPU-spinning processes")
    parser.add_argument("--semantic", action="store_true", help="the local embedding model on")
    args = parser.parse_args()
    root = args.path.resolve()
    home = tempfile.mkdtemp(prefix="theus-timebox-")
    os.environ["THEUS_HOME"] = home
    os.environ.setdefault("THEUS_NO_WATCH", "1")
    if not args.semantic:
        os.environ["THEUS_NO_EMBEDDINGS"] = "1"
    apply_settings({}, os.environ)
    from knowledge.index.project import Project

    project = Project(root)
    project.index()
    project.save()
    project.close()
    asked = requests(root, args.runs)
    kinds = {k: Kind(k) for k in ("cold app", "cold headless", "warm")}
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.load)]
    try:
        for request in asked:  # each cold run a new process, as a user's start is
            for name, headless in (("cold app", False), ("cold headless", True)):
                took, allowed, block = child(root, request, headless)
                kinds[name].add(took, allowed, bool(block))
        # one app conversation's later turns, once its memory is warm
        measured = asyncio.run(one(root, asked[0], False, asked))
        for j in range(3, len(measured), 3):
            took, allowed, block = measured[j : j + 3]
            kinds["warm"].add(took, allowed, bool(block))
    finally:
        for spinner in spinners:
            spinner.kill()
    print(f"{root.name}: {len(asked)} requests, load {args.load}, semantic {args.semantic}")
    print(
        f"{'kind':<14} {'runs':>5} {'median ms':>9} {'max ms':>8} {'p99 over':>10} "
        f"{'max over':>9} {'>10ms':>6} {'blocks':>7}"
    )
    for kind in kinds.values():
        print(kind.row())


if __name__ == "__main__":
    main()
