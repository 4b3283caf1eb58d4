"""kill -9 while memories and episodes are being written leaves only readable files.

A child process saves memories (topic file + MEMORY.md line + store) and episodes in a loop,
printing an acknowledgement after each; the parent SIGKILLs it at random moments. Every time,
MEMORY.md and every topic and episode file must parse, the last acknowledged memory must be
there, and the killed writer's temp files must be cleaned at the next start.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge import memdir
from knowledge.core import keys
from knowledge.episodes import EpisodeStore
from knowledge.index.project import Project
from knowledge.memdir import MemoryDir

REPO = Path(__file__).resolve().parents[2]
RUNS = 20
TEMP_SEEN: list[str] = []  # temp files found after a kill: evidence kills land mid-write


# Children run as `python -c` source, not by importing this module: importing pytest would
# cost each of the twenty children more than half a second.
WRITER = """
import sys
import os
from entrypoint.settings import apply
apply({}, os.environ)  # as `theus` does at start
from pathlib import Path
from knowledge.core import keys
from knowledge import memdir
from knowledge.episodes import EpisodeStore
from knowledge.index.project import Project

root, i = sys.argv[1], int(sys.argv[2])
start = i
project = Project(Path(root))
episodes = EpisodeStore(project)

def text(n):
    return f"memory number {n}: deploys need the VPN, see `src/app.py`"

while True:  # print `ack N` once memory N and episode N are durable
    memdir.add_memory(project, text(i))
    if i % 3 == 0:  # rewrites too, so replace_line runs under fire as well
        memdir.delete_memory(project, keys.memory_key(text(i)))
        memdir.add_memory(project, text(i))
    if i > start and i % 4 == 0:
        memdir.delete_memory(project, keys.memory_key(text(i - 2)))
    episodes.record("manual", f"Episode {i}\\n" + "what happened " * 50, "crash")
    print(f"ack {i}", flush=True)
    i += 1
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_during_writes_leaves_readable_files(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def deploy():\n    return 1\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("THEUS_NO_MEMDIR", None)
    env.pop("THEUS_NO_EPISODES", None)
    rng = random.Random(7)
    start = 0
    kills = 0
    for _ in range(RUNS):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), str(start)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("ack "), proc.stderr.read() if proc.stderr else first
        time.sleep(rng.uniform(0.0, 0.25))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=30)
        kills += proc.returncode == -signal.SIGKILL
        acks = [int(line.split()[1]) for line in [first, *out.splitlines()] if line]
        last = acks[-1]
        check_readable(root, last)
        start = last + 1
    assert kills == RUNS
    print(f"acks={start} temp files left by kills={len(TEMP_SEEN)}")


def check_readable(root: Path, last: int) -> None:
    project = Project(root)
    try:
        mdir = MemoryDir(project.paths.memory)
        index = mdir.read()
        assert index.problems == [], index.problems
        text = f"memory number {last}: deploys need the VPN, see `src/app.py`"
        assert index.find(keys.memory_key(text)) is not None
        episodes, problems = EpisodeStore(project).list()
        newest = next(e for e in episodes if e.title == f"Episode {last}")
        assert problems == []
        # The store holds what was acknowledged, before any sync or load rebuilds it.
        assert project.graph.get(keys.memory_key(text)) is not None
        assert project.graph.get(newest.key) is not None
        before = [p.name for d in (mdir.path, project.paths.episodes) for p in d.iterdir()]
        TEMP_SEEN.extend(n for n in before if n.endswith(".tmp"))
        assert EpisodeStore(project).load().problems == []
        report = memdir.sync(project)
        assert report.warnings == [] and report.entries == len(index.entries)
        assert project.graph.get(keys.memory_key(text)) is not None
        leftovers = [
            p.name
            for d in (mdir.path, project.paths.episodes)
            for p in d.iterdir()
            if p.name.endswith(".tmp")
        ]
        assert leftovers == []  # load and sync at start clean the dead writer's temp files
    finally:
        project.close()


ADDER = """
import sys
import os
from entrypoint.settings import apply
apply({}, os.environ)  # as `theus` does at start
from pathlib import Path
from knowledge import memdir
from knowledge.index.project import Project

root, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
project = Project(Path(root))
project.graph  # loaded before the start line, so both writers overlap
print("ready", flush=True)
sys.stdin.readline()
for i in range(count):
    memdir.add_memory(project, f"{name} remembers thing {i}")
project.close()
"""


def test_two_processes_adding_at_once_lose_no_line(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("THEUS_NO_MEMDIR", None)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ADDER, str(root), name, "12"],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("shell", "app")
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    for proc in procs:  # start both at once
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    project = Project(root)
    try:
        index = MemoryDir(project.paths.memory).read()
        assert index.problems == [] and len(index.entries) == 24
        assert memdir.sync(project).entries == 24
        assert project.counts()["memory"] == 24
    finally:
        project.close()
