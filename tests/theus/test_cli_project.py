"""The project folder, as every command takes it: `--path` everywhere (older spellings kept),
an unreadable one refused in one line, a look that creates nothing, one watcher per project.
Real processes of the real entry point."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from knowledge.core.paths import ProjectPaths
from tests.conftest import write_tree

ENTRY = [sys.executable, "-m", "entrypoint"]
# As root, permission bits bind only without these capabilities (setpriv drops them).
AS_USER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


def theus(
    *args: str, cwd: Path, prefix: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "THEUS_NO_EMBEDDINGS": "1", "THEUS_NO_WATCH": "1"}
    return subprocess.run(
        [*(prefix or []), *ENTRY, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def project(tmp_path: Path) -> Path:
    return write_tree(
        tmp_path / "shop", {"cart.py": "class Cart:\n    def total(self):\n        return 0\n"}
    )


def test_read_only_commands_take_path_and_create_nothing(tmp_path: Path) -> None:
    root = project(tmp_path)
    home = ProjectPaths.for_root(root).home
    elsewhere = tmp_path  # not the project: only --path names it
    status = theus("status", "--path", str(root), "--json", cwd=elsewhere)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["index"]["root"] == str(root) and not report["index"]["indexed"]
    assert report["index"]["data_dir"] == str(home)  # where it will live, not a scratch folder
    for args in (
        ("episodes", "--path", str(root), "--json"),
        ("facts", "list", "--path", str(root), "--json"),
        ("memory", "list", "--json", "--path", str(root)),
        ("sessions", "--path", str(root), "--json"),
    ):
        done = theus(*args, cwd=elsewhere)
        assert (done.returncode, json.loads(done.stdout)) == (0, []), (args, done.stderr)
    assert not home.exists()


def test_an_indexed_project_recall_and_status_print_once(tmp_path: Path) -> None:
    root = project(tmp_path)
    paths = ProjectPaths.for_root(root)
    assert theus("index", str(root), cwd=tmp_path).returncode == 0  # the positional stays
    before = sorted(p.name for p in paths.home.iterdir())
    recall = theus("recall", "cart total", "--path", str(root), "--json", cwd=tmp_path)
    assert recall.returncode == 0, recall.stderr
    assert "cart.py" in json.loads(recall.stdout)["files"]
    assert sorted(p.name for p in paths.home.iterdir()) == before  # no memory folder made
    status = theus("status", "--project", str(root), cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert status.stdout.count("edges") == 1  # the counts once, not twice


def test_an_unreadable_root_is_one_line_and_exit_2(tmp_path: Path) -> None:
    root = project(tmp_path)
    root.chmod(0)
    try:
        for args in (("index", str(root)), ("--path", str(root), "status")):
            done = theus(*args, cwd=tmp_path, prefix=AS_USER)
            assert done.returncode == 2, (args, done.stdout, done.stderr)
            assert done.stdout == "" and done.stderr.count("\n") == 1
            assert f"cannot read the folder {root}" in done.stderr
    finally:
        root.chmod(0o755)
    assert not ProjectPaths.for_root(root).home.exists()


def test_a_second_watch_names_the_running_watchers_pid(tmp_path: Path) -> None:
    root = project(tmp_path)
    env = {**os.environ, "THEUS_NO_EMBEDDINGS": "1"}
    first = subprocess.Popen(
        [*ENTRY, "watch", "--path", str(root)],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert first.stdout is not None
        lines: queue.Queue[str] = queue.Queue()

        def pump() -> None:
            for line in first.stdout or ():
                lines.put(line)

        threading.Thread(target=pump, daemon=True).start()
        line = ""
        while not line.startswith("Watching"):  # queue.Empty after 30 s of silence
            line = lines.get(timeout=30)
        second = subprocess.run(
            [*ENTRY, "watch", str(root)], env=env, text=True, capture_output=True, timeout=30
        )
        assert second.returncode == 1 and second.stdout == ""
        assert f"another watcher (pid {first.pid})" in second.stderr
        assert second.stderr.count("\n") == 1
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(30)


@pytest.mark.parametrize(
    ("words", "kept", "opening"),
    [
        (["where", "are", "the", "tests"], [], ["where", "are", "the", "tests"]),
        (["--model", "fix", "fix", "it"], ["--model", "fix"], ["fix", "it"]),
        (["fix", "it", "--model", "m"], ["--model", "m"], ["fix", "it"]),
        (["--max-turns=3", "go"], ["--max-turns=3"], ["go"]),
        (["-r", "abc"], ["-r", "abc"], []),  # a session id, not a request
        (["status"], ["status"], []),
        (["index", "--path", "."], ["index", "--path", "."], []),
        (["-p", "where", "are", "they"], ["-p", "where", "are", "they"], []),
    ],
)
def test_words_that_are_no_command_open_the_app_with_that_request(
    words: list[str], kept: list[str], opening: list[str]
) -> None:
    from entrypoint.cli import _opening_request

    assert _opening_request(words) == (kept, opening)


def test_version_is_printed_by_a_real_process() -> None:
    from importlib.metadata import version

    done = subprocess.run(
        [sys.executable, "-m", "entrypoint", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == f"theus {version('theus')}\n"
