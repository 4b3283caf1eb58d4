"""Replay a scripted multi-turn session on a real repository and print the tokens sent per
turn with and without injection and microcompact, and the injection latency p50/p95.

    python bench/agent.py PATH [--turns 8] [--runs 3] [--idle-before 5]

The model is a scripted OpenAI-compatible server (tests/scripted_server.py) driven by a simple
policy, the same in every mode, so only what Theus adds or removes differs:
- without an injected block naming the target file, the model greps for the symbol and then
  reads the whole file (as an agent that starts from zero does);
- with one that names it, it reads 40 lines around the recalled line instead.
Before turn `--idle-before` the clock jumps 61 minutes (a lunch break): microcompact may clear.
Tokens are estimated with knowledge.core.token_count.count_tokens over each request's messages.
Uses a temporary THEUS_HOME; the repository is only read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from entrypoint.settings import apply as apply_settings
from knowledge.core.token_count import count_tokens
from knowledge.index.project import Project
from knowledge.recall.recaller import Recaller, make_recaller
from tests.conftest import texts_of
from tests.scripted_server import Reply, ScriptedServer, text, tool
from theus.agent.injection import Injector
from theus.agent.loop import Agent
from theus.config import AgentSettings, ModelSettings
from theus.model import ModelClient
from theus.protocol import InjectionInfo

MODES = {
    "baseline": (False, False),
    "+inject": (True, False),
    "+microcompact": (False, True),
    "both": (True, True),
}


def pick_targets(project: Project, turns: int) -> list[tuple[str, str, int]]:
    """(label, path, line) of symbols spread over the repository, deterministically."""
    symbols = sorted(
        (
            n
            for n in project.graph.nodes("symbol")
            if n.path and n.line and "." in n.label and len(n.label) > 8
        ),
        key=lambda n: n.key,
    )
    if not symbols:
        symbols = sorted(
            (n for n in project.graph.nodes("symbol") if n.path and n.line), key=lambda n: n.key
        )
    if not symbols:
        raise SystemExit("no symbols indexed in this repository")
    step = max(1, len(symbols) // turns)
    chosen: list[tuple[str, str, int]] = []
    seen: set[str] = set()
    for node in symbols[::step]:
        if node.path not in seen:
            seen.add(node.path)
            chosen.append((node.label, node.path, node.line or 1))
    return chosen[:turns]


class Policy:
    """The scripted model: decides the next reply from the request body."""

    def __init__(self, targets: list[tuple[str, str, int]]) -> None:
        self.by_request = {request(t): t for t in targets}

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        # The request is the tail of the last user message (after its injected block, if any).
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        content = "\n".join(texts_of(messages[last_user]))  # the block is a part of its own
        asked = next(r for r in self.by_request if content.endswith(r))
        label, path, line = self.by_request[asked]
        done = [m for m in messages[last_user + 1 :] if m["role"] == "tool"]
        injected = content[: -len(asked)]
        knows = "<system-reminder>" in injected and path in injected
        if not done:
            if knows:
                return tool("read", {"path": path, "offset": max(1, line - 10), "limit": 40})
            return tool("grep", {"pattern": label.split(".")[-1]})
        if len(done) == 1 and not knows:
            return tool("read", {"path": path})
        return text(
            f"{label} is defined in {path} around line {line}. It is called from the "
            "places listed above; the main logic is in its body. " * 2
        )


def request(target: tuple[str, str, int]) -> str:
    return f"How does {target[0]} work, and what calls it?"


async def run_mode(
    root: Path,
    recaller: Recaller,
    targets: list[tuple[str, str, int]],
    inject: bool,
    microcompact: bool,
    idle_before: int,
) -> tuple[list[int], list[float]]:
    policy = Policy(targets)
    with ScriptedServer([policy], models=["bench"]) as server:
        server.script[0] = _repeat(policy)
        settings = AgentSettings(
            inject=inject, microcompact_after_s=3600 if microcompact else float("inf")
        )
        clock = [1_000_000.0]
        events: list[Any] = []
        model = ModelClient(ModelSettings(server.url, "k", "bench", "bench", retry_base_s=0.01))
        agent = Agent(
            model,
            root,
            sink=events.append,
            settings=settings,
            injector=Injector(settings, lambda: recaller),
            clock=lambda: clock[0],
            approver=_deny,
        )
        per_turn: list[int] = []
        for number, target in enumerate(targets, start=1):
            clock[0] += (61 * 60) if number == idle_before else 120
            before = len(server.requests)
            result = await agent.run_turn(request(target))
            if result.is_error:
                raise SystemExit(f"turn {number} failed: {result.error}")
            sent = server.requests[before:]
            per_turn.append(sum(count_tokens(json.dumps(b["messages"])) for b in sent))
        await model.close()
        took = [e.took_ms for e in events if isinstance(e, InjectionInfo)]
        return per_turn, took


def _repeat(policy: Policy) -> Callable[[dict[str, Any]], Reply]:
    def reply(body: dict[str, Any]) -> Reply:
        result = policy(body)
        result.repeat = True
        return result

    return reply


async def _deny(request: Any) -> bool:
    return False


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path")
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--idle-before", type=int, default=5, help="the turn before which 61 minutes pass"
    )
    args = parser.parse_args()
    root = Path(args.path).resolve()
    os.environ["THEUS_HOME"] = tempfile.mkdtemp(prefix="theus-bench-")
    os.environ.setdefault("THEUS_NO_EMBEDDINGS", "1")
    apply_settings({}, os.environ)
    start = time.perf_counter()
    project = Project(root)
    report = project.index()
    print(
        f"indexed {root.name}: {project.counts()} in {time.perf_counter() - start:.1f}s "
        f"({len(report.changed) if hasattr(report, 'changed') else '?'} files)"
    )
    recaller = make_recaller(project)
    recaller.warm()
    targets = pick_targets(project, args.turns)
    print(f"{len(targets)} turns; 61 minutes pass before turn {args.idle_before}\n")
    tables: dict[str, list[list[int]]] = {m: [] for m in MODES}
    latencies: list[float] = []
    for _ in range(args.runs):
        for mode, (inject, micro) in MODES.items():
            per_turn, took = asyncio.run(
                run_mode(root, recaller, targets, inject, micro, args.idle_before)
            )
            tables[mode].append(per_turn)
            latencies += took if inject else []
    medians = {
        m: [int(statistics.median(run[i] for run in runs)) for i in range(len(targets))]
        for m, runs in tables.items()
    }
    print("tokens sent per turn (median of runs; all model calls of the turn)")
    print("turn  " + "".join(f"{m:>15}" for m in MODES) + "   request")
    for i, target in enumerate(targets):
        row = "".join(f"{medians[m][i]:>15}" for m in MODES)
        print(f"{i + 1:>4}  {row}   {target[0]}")
    totals = {m: sum(v) for m, v in medians.items()}
    print("total " + "".join(f"{totals[m]:>15}" for m in MODES))
    base = totals["baseline"]
    print(
        "vs baseline "
        + "  ".join(
            f"{m}: {100 * (totals[m] - base) / base:+.1f}%" for m in MODES if m != "baseline"
        )
    )
    if latencies:
        print(
            f"\ninjection latency over {len(latencies)} requests: "
            f"p50 {percentile(latencies, 0.5):.1f} ms, p95 {percentile(latencies, 0.95):.1f} ms"
            f" (deadline 150 ms; dropped: "
            f"{sum(1 for t in latencies if t >= 150)})"
        )
    project.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
