"""Random `kill -9` against the real CLI, then a reload (a benchmark, not a test).

    python bench/crash.py [--trials 1000] [--seed 1]

Each trial starts one real process on a generated project (`theus index` after some files
changed, `theus watch` while files change, `theus memory add`, or `theus -p` against the
scripted model server), kills it with SIGKILL after a random delay (0 to 1.5 s), then checks:
- reload: `theus status --json` and `theus memory list --json` exit 0, and no store was set
  aside (a kill must leave the last committed state, never a corrupt one);
- acknowledged writes: every memory whose `added mem:…` line was printed before the kill is
  listed, and an index that printed its summary is in the store;
- orphans: no process started by the killed one is alive 3 s later.
Prints the three counts (all must be 0) and the kills per operation.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.reliability.test_orphans import alive, children
from tests.scripted_server import ScriptedServer, text, tool

OPERATIONS = ("index", "watch", "memory", "headless")


def env_for(home: Path, server_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update(
        {
            "THEUS_HOME": str(home),
            "THEUS_NO_EMBEDDINGS": "1",
            "THEUS_BASE_URL": server_url,
            "THEUS_MODEL": "test-model",
            "THEUS_RETRY_BASE": "0.01",
        }
    )
    return env


def theus(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoint", "--path", str(root), *args],
        env={**env, "THEUS_NO_WATCH": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def write_project(root: Path, rng: random.Random, files: int = 300) -> None:
    for i in range(files):
        path = root / f"pkg/m{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "".join(f"def f{i}_{j}_{rng.randrange(1000)}(x):\n    return x\n\n" for j in range(30))
        )


def start(op: str, root: Path, env: dict[str, str], trial: int) -> subprocess.Popen[bytes]:
    args = {
        "index": ["index"],
        "watch": ["watch"],
        "memory": ["memory", "add", f"memory number {trial}"],
        "headless": ["-p", "read pkg/m1.py and answer"],
    }[op]
    run_env = {**env, "THEUS_NO_WATCH": "0" if op == "watch" else "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "entrypoint", "--path", str(root), *args],
        env=run_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def trial(
    rng: random.Random,
    root: Path,
    env: dict[str, str],
    n: int,
    acknowledged: set[str],
    lost: set[str],
) -> dict[str, int]:
    op = rng.choice(OPERATIONS)
    if op in ("index", "watch"):  # something to do while it dies
        for i in rng.sample(range(300), 20):
            (root / f"pkg/m{i}.py").write_text(f"def changed_{n}_{i}():\n    return {n}\n")
    proc = start(op, root, env, n)
    time.sleep(rng.uniform(0.0, 1.5))
    if op == "watch":
        (root / f"pkg/new{n}.py").write_text(f"def new_{n}():\n    return {n}\n")
    descendants = children(proc.pid)
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate()
    printed = out.decode(errors="replace")
    if op == "memory" and printed.startswith("added "):
        acknowledged.add(f"memory number {n}")
    index_acknowledged = op == "index" and printed.startswith("Indexed")
    end = time.monotonic() + 3.0
    while alive(descendants) and time.monotonic() < end:
        time.sleep(0.05)
    orphans = alive(descendants)
    for pid in orphans:
        os.kill(pid, signal.SIGKILL)
    status = theus(root, env, "status", "--json")
    listed = theus(root, env, "memory", "list", "--json")
    failed = status.returncode != 0 or listed.returncode != 0
    index_lost = 0
    if not failed:
        report = json.loads(status.stdout)
        failed = bool(report["index"].get("recovered_from"))
        index_lost = int(index_acknowledged and report["index"]["files"] < 300)
    texts = {m["text"] for m in json.loads(listed.stdout)} if listed.returncode == 0 else set()
    missing = acknowledged - texts - lost
    lost |= missing
    return {
        "op": OPERATIONS.index(op),
        "failed": int(failed),
        "lost": len(missing) + index_lost,
        "orphans": len(orphans),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="theus-crash-"))
    root, home = work / "repo", work / "home"
    write_project(root, rng)
    acknowledged: set[str] = set()
    lost: set[str] = set()
    totals: Counter[str] = Counter()
    kills: Counter[str] = Counter()
    replies = [tool("read", {"path": "pkg/m1.py"}), text("it returns x")]
    try:
        with ScriptedServer([*replies * (args.trials + 1)]) as server:
            env = env_for(home, server.url)
            theus(root, env, "index")
            start_time = time.monotonic()
            for n in range(args.trials):
                result = trial(rng, root, env, n, acknowledged, lost)
                kills[OPERATIONS[result.pop("op")]] += 1
                totals.update(result)
                if (n + 1) % 50 == 0:
                    spent = time.monotonic() - start_time
                    print(f"  {n + 1} trials: {dict(totals)} ({spent:.0f}s)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"{args.trials} kill -9 trials ({dict(kills)}): failed reloads {totals['failed']}, "
        f"acknowledged writes lost {totals['lost']} (of {len(acknowledged)} acknowledged), "
        f"processes left behind {totals['orphans']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
