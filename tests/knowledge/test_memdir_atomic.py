"""knowledge.core.atomic: replace-by-rename writes and the cleaning of dead writers' temp files."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from knowledge.core import atomic


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_write_replaces_whole_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    target.write_text("old\n")
    atomic.write_text(target, "new ✓\n", mode=0o600)
    assert target.read_text(encoding="utf-8") == "new ✓\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["MEMORY.md"]


def test_failed_write_keeps_the_old_file_and_removes_its_temp(tmp_path: Path) -> None:
    target = tmp_path / "x.md"
    target.write_text("old")
    with pytest.raises(TypeError):
        atomic.write_bytes(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.md"]


def test_clean_orphans_removes_only_dead_or_stale_writers_files(tmp_path: Path) -> None:
    dead = tmp_path / f".MEMORY.md.{dead_pid()}.abc_12.tmp"
    live = tmp_path / f".MEMORY.md.{os.getpid()}.def34.tmp"
    old = tmp_path / f".topic.md.{os.getppid()}.ghi56.tmp"
    unrelated = [tmp_path / "notes.tmp", tmp_path / ".MEMORY.md.swp", tmp_path / "MEMORY.md"]
    for path in [dead, live, old, *unrelated]:
        path.write_text("x")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    removed = atomic.clean_orphans(tmp_path)
    assert sorted(removed) == sorted([dead, old])
    assert live.exists() and all(p.exists() for p in unrelated)
    assert atomic.is_temp_name(live.name) and not atomic.is_temp_name("notes.tmp")
    assert atomic.clean_orphans(tmp_path / "missing") == []


def test_lock_serialises_read_modify_write(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    target.write_text("")

    def append(i: int) -> None:
        with atomic.locked(tmp_path / ".lock"):
            text = target.read_text()
            time.sleep(0.001)
            atomic.write_text(target, text + f"- {i}\n")

    threads = [threading.Thread(target=append, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(target.read_text().splitlines()) == sorted(f"- {i}" for i in range(20))


def test_remove(tmp_path: Path) -> None:
    path = tmp_path / "t.md"
    path.write_text("x")
    assert atomic.remove(path) and not path.exists()
    assert not atomic.remove(path)
