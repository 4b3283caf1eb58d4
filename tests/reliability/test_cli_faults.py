"""The commands on a full disk and a read-only data folder, as real processes: success is
reported only for what was durably written; a turn completes with one clear warning."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import write_tree
from tests.reliability.disks import full_disk, read_only
from tests.scripted_server import ScriptedServer, text


def theus(
    args: list[str], root: Path, home: Path, preexec: Callable[[], None] | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    full.update({"THEUS_HOME": str(home), "THEUS_NO_EMBEDDINGS": "1", "THEUS_NO_WATCH": "1", **env})
    return subprocess.run(
        [sys.executable, "-m", "entrypoint", "--path", str(root), *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec,
    )


def setup(tmp_path: Path) -> tuple[Path, Path]:
    root = write_tree(tmp_path / "repo", {"cart.py": "def total(items):\n    return 0\n"})
    home = tmp_path / "home"
    done = theus(["index"], root, home)
    assert done.returncode == 0, done.stderr
    assert theus(["memory", "add", "the first memory"], root, home).returncode == 0
    return root, home


def memories(root: Path, home: Path) -> list[str]:
    done = theus(["memory", "list", "--json"], root, home)
    return [m["text"] for m in json.loads(done.stdout)]


def test_memory_add_on_a_full_disk_is_refused_not_acknowledged(tmp_path: Path) -> None:
    root, home = setup(tmp_path)
    with full_disk(tmp_path / "small") as disk:
        moved = disk / "home"
        shutil.copytree(home, moved)
        disk.fill()
        done = theus(["memory", "add", "a second memory"], root, moved, preexec=disk.preexec)
        assert done.returncode == 1
        assert "added" not in done.stdout
        assert done.stderr.count("\n") == 1 and "not saved" in done.stderr
        assert "Traceback" not in done.stderr
        # The healthy store was not touched: still readable, nothing set aside.
        assert list(moved.rglob("graph.db.corrupt*")) == []
        assert memories(root, moved) == ["the first memory"]


def test_a_read_only_data_folder_refuses_memories_and_answers_turns(tmp_path: Path) -> None:
    root, home = setup(tmp_path)
    with read_only(home), ScriptedServer([text("an answer")]) as server:
        added = theus(["memory", "add", "a second memory"], root, home)
        assert added.returncode == 1 and "added" not in added.stdout
        assert "Traceback" not in added.stderr
        done = theus(
            ["-p", "where is the cart total?"],
            root,
            home,
            THEUS_BASE_URL=server.url,
            THEUS_MODEL="test-model",
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "an answer\n"
        warnings = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(warnings) == 1 and "not writable" in warnings[0]
    assert memories(root, home) == ["the first memory"]
