"""The headless path never imports Textual (at run time; import-linter's contracts in
pyproject.toml check the static imports)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
from entrypoint.cli import build_parser, main
import theus.cli.headless
code = main(["-p", "hello", "--path", sys.argv[1]])  # no model configured: a usage error
assert code == 2, code
build_parser().parse_args(["status"])
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "tui"))
assert not leaked, leaked
print("clean")
"""


def test_headless_run_does_not_import_textual(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean"
