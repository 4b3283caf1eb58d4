"""The index/status commands through the real console script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import write_tree


def theus(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("theus") or ""
    cmd = [exe] if exe else [sys.executable, "-m", "entrypoint"]
    return subprocess.run(
        [*cmd, *args], cwd=cwd, capture_output=True, text=True, env=os.environ.copy(), timeout=120
    )


def test_index_json_contract_and_status(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path / "repo",
        {
            "app.py": "def main():\n    pass\n",
            ".env": "TOKEN=sk-canary",
            "blob.bin": b"\x00\x01",
        },
    )
    out = theus("index", "--json", str(repo), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert {"files", "symbols", "edges", "skipped", "seconds"} <= set(report)
    assert (report["files"], report["symbols"]) == (1, 1)
    assert report["skipped"] == {"binary": 1, "secret": 1}
    status = theus("status", "--json", cwd=repo)
    assert status.returncode == 0, status.stderr
    index = json.loads(status.stdout)["index"]
    assert index["root"] == str(repo.resolve())
    assert index["files"] == 1 and index["last_index"]
    assert Path(index["store"]).is_file()
    assert "sk-canary" not in Path(index["store"]).read_bytes().decode("latin-1")


def test_plain_output_is_one_summary_line(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", {"a.py": "X = 1\n"})
    out = theus("index", cwd=repo)
    assert out.returncode == 0
    assert out.stdout.startswith("Indexed 1 files, 1 symbols")
    assert len(out.stdout.strip().splitlines()) == 1


def test_bad_path_and_bad_flag_are_one_line_and_exit_2(tmp_path: Path) -> None:
    for args in (
        ("index", str(tmp_path / "missing")),
        ("index", "--bogus"),
        ("status", "--nope"),
        ("frobnicate",),
    ):  # a first request for the app, which needs a terminal
        out = theus(*args, cwd=tmp_path)
        assert out.returncode == 2, args
        assert out.stdout == ""
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_help_everywhere(tmp_path: Path) -> None:
    for args in (("--help",), ("index", "--help"), ("status", "--help")):
        out = theus(*args, cwd=tmp_path)
        assert out.returncode == 0 and "usage:" in out.stdout


def test_init_writes_an_agents_file_naming_the_real_test_command(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path / "repo", {"go.mod": "module svc\n", "main.go": "package main\nfunc main() {}\n"}
    )
    assert theus("index", cwd=repo).returncode == 0
    out = theus("init", cwd=repo)  # no terminal to ask on, no --yes: shown, not written
    assert out.returncode == 1 and not (repo / "AGENTS.md").exists()
    assert "- test: `go test ./...`" in out.stdout and "pass --yes" in out.stderr
    out = theus("init", "--yes", cwd=repo)
    assert out.returncode == 0, out.stderr
    written = (repo / "AGENTS.md").read_text()
    assert "- test: `go test ./...`" in written and "Languages: go (1 file)." in written
    (repo / "AGENTS.md").write_text("mine\n")
    out = theus("init", "--yes", cwd=repo)  # never replaced
    assert out.returncode == 1 and (repo / "AGENTS.md").read_text() == "mine\n"
    assert len(out.stderr.strip().splitlines()) == 1
