"""Status counters' files are written off the caller's thread, newest state last, and what is
still pending is written at exit, also by a process that ends with `exit_now`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from knowledge.core import atomic, state_writer
from knowledge.recall.status import InjectionStats


def test_the_newest_state_is_the_one_left(tmp_path: Path) -> None:
    path = tmp_path / "state" / "recall.json"
    for n in range(50):
        state_writer.write_soon(path, {"n": n})
    state_writer.flush()
    assert atomic.read_state(path) == {"n": 49}


def test_counting_returns_before_the_file_is_written_and_flush_writes_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "recall.json"
    stats = InjectionStats.load(path)
    with state_writer._writing:  # the writer busy: a count must not wait for it
        assert stats.count("injected")["injected"] == 1
        assert stats.count("late")["late"] == 1
    state_writer.flush()
    saved = atomic.read_state(path)
    assert (saved["injected"], saved["late"]) == (1, 1)


def test_a_process_ending_with_exit_now_leaves_its_counts(tmp_path: Path) -> None:
    path = tmp_path / "recall.json"
    code = (
        "import sys; from pathlib import Path; "
        "from knowledge.recall.status import InjectionStats; "
        "from theus.service.process import exit_now; "
        "s = InjectionStats.load(Path(sys.argv[1])); "
        "[s.count('chat') for _ in range(3)]; exit_now(0)"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(path.read_text())["chat"] == 3
