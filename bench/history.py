"""The run history, measured: the stores' insert and filtered-search latency (10k and 100k
points), and end to end, how often the examples `theus -p` injects are the right ones.

    python bench/history.py                      # both parts
    python bench/history.py --part e2e --runs 50 # 50 related headless runs only
    python bench/history.py --part stores --points 10000 100000

End to end: real `theus -p` processes (the local embedder, the scripted OpenAI-compatible
server from tests/) on a fresh project, 50 requests from 10 families of related tasks (5
wordings each), asked family by family in rounds. An example is right when it comes from the
same family; a run can have one when an earlier run of its family finished. Reported with the
default time box (the embedder loads in every one-shot process) and with a generous one, which
separates the ranking from the timing.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import texts_of
from tests.scripted_server import ScriptedServer, text

FAMILIES = [
    [
        f"add a --{f} flag to the export command"
        for f in ("quiet", "verbose", "json", "dry-run", "color")
    ],
    [
        f"fix the crash when the config file {c}"
        for c in (
            "is empty",
            "has no [tool] table",
            "is not valid TOML",
            "is a directory",
            "cannot be read",
        )
    ],
    [
        f"rename the {n} function in the billing module to something clearer"
        for n in ("calc", "do_it", "process", "handle", "run2")
    ],
    [
        f"write unit tests for the {p} parser"
        for p in ("date", "duration", "currency", "address", "phone number")
    ],
    [
        f"make the HTTP client retry {r} with exponential backoff"
        for r in (
            "on 503 responses",
            "on connection resets",
            "on timeouts",
            "on 429 with Retry-After",
            "on DNS failures",
        )
    ],
    [
        f"document the {o} option in the README"
        for o in ("--port", "--host", "--workers", "--log-level", "--reload")
    ],
    [
        f"speed up the {q} query on the orders table"
        for q in (
            "monthly totals",
            "top customers",
            "late shipments",
            "refund rate",
            "average basket",
        )
    ],
    [
        f"upgrade {d} to the latest major version and fix what breaks"
        for d in ("pydantic", "sqlalchemy", "fastapi", "pytest", "numpy")
    ],
    [
        f"add a dark mode toggle to the {p} page"
        for p in ("settings", "profile", "dashboard", "login", "checkout")
    ],
    [
        f"log a warning when the cache {w}"
        for w in (
            "is nearly full",
            "misses too often",
            "evicts a hot key",
            "takes over a second",
            "cannot reach redis",
        )
    ],
]


def _theus(
    args: list[str], server: ScriptedServer, root: Path, home: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    full.update(
        {
            "THEUS_HOME": str(home),
            "THEUS_NO_WATCH": "1",
            "THEUS_BASE_URL": server.url,
            "THEUS_MODEL": "test-model",
            "THEUS_NO_FACTS": "1",
            **env,
        }
    )
    return subprocess.run(
        [sys.executable, "-m", "entrypoint", "--path", str(root), *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def end_to_end(runs: int, deadline_ms: str | None, threshold: float) -> dict[str, object]:
    order = [(f, FAMILIES[f][w]) for w in range(5) for f in range(len(FAMILIES))][:runs]
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer() as server:
        root, home = Path(tmp) / "project", Path(tmp) / "home"
        root.mkdir()
        (root / "app.py").write_text("def main():\n    return 0\n")
        env = {"THEUS_RECALL_DEADLINE_MS": deadline_ms} if deadline_ms else {}
        _theus(["history", "settings", "--threshold", str(threshold)], server, root, home)
        done_families: set[int] = set()
        eligible = with_examples = right = shown = wrong_when_none = 0
        walls = []
        for family, request in order:
            server.add(text(f"Done: {request}."))
            started = time.perf_counter()
            out = _theus(
                ["-p", request, "--output-format", "stream-json"], server, root, home, **env
            )
            walls.append(time.perf_counter() - started)
            if out.returncode != 0:
                raise SystemExit(f"theus -p failed: {out.stderr[-500:]}")
            block = _block(server.requests[-1]["messages"])
            examples = _example_requests(block)
            fam_of = {r: i for i, fam in enumerate(FAMILIES) for r in fam}
            if family in done_families:
                eligible += 1
                with_examples += bool(examples)
            elif examples:
                wrong_when_none += 1
            shown += len(examples)
            right += sum(fam_of.get(e) == family for e in examples)
            done_families.add(family)
        status = json.loads(_theus(["status", "--json"], server, root, home).stdout)
        lookups = {k: status["history"].get(k) for k in ("used", "none", "skipped", "failed")}
    return {
        "threshold": threshold,
        "runs": len(order),
        "eligible": eligible,
        "eligible_with_examples": with_examples / eligible if eligible else 0.0,
        "precision": right / shown if shown else 0.0,
        "examples_shown": shown,
        "runs_without_a_relative_given_examples": wrong_when_none,
        "median_run_s": round(statistics.median(walls), 2),
        "lookups": lookups,
    }


def _block(messages: list[dict[str, object]]) -> str:
    for message in messages:
        for part in texts_of(message):
            if part.startswith("<system-reminder>"):
                return part
    return ""


def _example_requests(block: str) -> list[str]:
    found = []
    for line in block.splitlines():
        line = line.lstrip("> ").strip()
        if ". Request" in line[:12] and ": " in line:
            found.append(line.split(": ", 1)[1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("all", "stores", "e2e"), default="all")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--points", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--thresholds",
        type=float,
        nargs="+",
        default=[0.85, 0.6],
        help="the default first, then others to compare",
    )
    args = parser.parse_args()
    if args.part in ("all", "stores"):
        from bench.history_stores import main as stores_main

        stores_main(
            [
                "--points",
                *map(str, args.points),
                "--queries",
                str(args.queries),
            ]
        )
    if args.part in ("all", "e2e"):
        for label, deadline in (("default time box", None), ("generous time box", "30000")):
            for threshold in args.thresholds:
                figures = end_to_end(args.runs, deadline, threshold)
                print(f"end to end, {label}: " + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
