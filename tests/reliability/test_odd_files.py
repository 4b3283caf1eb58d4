"""Odd things in a project: a file name that is not UTF-8, a FIFO, a folder reached again
through a link. Each is one skipped file with its reason; the rest is indexed, recalled and
watched as usual."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from knowledge.core import keys
from knowledge.index.project import Project
from knowledge.watch.watcher import Watcher
from tests.conftest import write_tree
from tests.knowledge.test_watch import DEADLINE, settled

BAD = b"bad_\xff.py"


def odd_project(tmp_path: Path) -> Path:
    root = write_tree(
        tmp_path / "repo",
        {"good.py": "def good():\n    return 1\n", "real/inner.py": "def inner():\n    return 3\n"},
    )
    with open(os.path.join(os.fsencode(root), BAD), "wb") as fh:
        fh.write(b"def bad():\n    return 2\n")
    os.mkfifo(root / "pipe.py")
    (root / "alink").symlink_to("real")  # sorts before the folder it points at
    return root


def theus(args: list[str], root: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update({"THEUS_HOME": str(home), "THEUS_NO_EMBEDDINGS": "1", "THEUS_NO_WATCH": "1"})
    return subprocess.run(
        [sys.executable, "-m", "entrypoint", "--path", str(root), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_odd_files_are_skipped_with_a_reason_and_the_rest_indexed(tmp_path: Path) -> None:
    root, home = odd_project(tmp_path), tmp_path / "home"
    done = theus(["index"], root, home)
    assert done.returncode == 0, done.stderr
    status = json.loads(theus(["status", "--json"], root, home).stdout)["index"]
    assert status["skipped"] == {
        "undecodable-name": 1,
        "not-a-regular-file": 1,
        "symlink-duplicate": 1,
    }
    assert status["files"] == 2
    recalled = json.loads(theus(["recall", "--json", "inner"], root, home).stdout)
    assert recalled["files"][0] == "real/inner.py"  # indexed where it lives, once
    assert not any(f.startswith("alink/") for f in recalled["files"])


def test_the_watcher_survives_a_name_that_is_not_utf8(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {"good.py": "def good():\n    return 1\n"})
    project = Project(root)
    project.index()
    watcher = Watcher(project).start_in_thread()
    try:
        assert watcher.wait_ready(DEADLINE)
        with open(os.path.join(os.fsencode(root), BAD), "wb") as fh:
            fh.write(b"x = 1\n")
        (root / "later.py").write_text("def later():\n    return 4\n")
        settled(
            watcher,
            lambda: keys.symbol_key("later.py", "later") in project.graph,
            "a change after the odd name",
        )
        assert watcher.alive and watcher.status()["running"]
        assert watcher.mode == "native"
        warning = watcher.status()["warning"] or ""
        assert "restarted" in warning and "decode" in warning
    finally:
        watcher.stop()
        project.close()
