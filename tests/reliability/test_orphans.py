"""No process left behind: the indexer's pool workers die with a `kill -9`-ed `theus index`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import write_tree


def children(pid: int) -> set[int]:
    """Every living descendant of `pid`, from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z":  # a zombie is dead, only not yet reaped
                parents[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] != "Z":
            out.add(pid)
    return out


def test_pool_workers_die_with_a_killed_indexer(tmp_path: Path) -> None:
    # Enough files for the process pool, slow enough to be killed in the middle.
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(400))
    root = write_tree(tmp_path / "repo", {f"pkg/m{i}.py": body for i in range(600)})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update({"THEUS_HOME": str(tmp_path / "home"), "THEUS_NO_EMBEDDINGS": "1"})
    indexer = subprocess.Popen(
        [sys.executable, "-m", "entrypoint", "index", str(root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: set[int] = set()
    deadline = time.monotonic() + 60
    while len(workers) < 2 and time.monotonic() < deadline and indexer.poll() is None:
        workers = children(indexer.pid)
        time.sleep(0.05)
    assert len(workers) >= 2, "the pool never started"
    indexer.send_signal(signal.SIGKILL)
    indexer.wait()
    end = time.monotonic() + 10
    while alive(workers) and time.monotonic() < end:
        time.sleep(0.05)
    left = alive(workers)
    for pid in left:  # never leave them to the next test either
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} worker(s) outlived the indexer"
