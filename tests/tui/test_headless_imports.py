"""The headless path never imports Textual; theus/ and knowledge/ never import the app."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UI_IMPORT = re.compile(r"^\s*(from|import)\s+(textual|tui)\b", re.MULTILINE)

PROBE = """
import sys
from theus.cli import build_parser, main
import theus.headless
code = main(["-p", "hello", "--path", sys.argv[1]])  # no model configured: a usage error
assert code == 2, code
build_parser().parse_args(["status"])
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "tui"))
assert not leaked, leaked
print("clean")
"""


def test_headless_run_does_not_import_textual(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean"


def test_engine_packages_do_not_import_the_app() -> None:
    """Only the CLI's no-argument branch opens the app, importing it lazily."""
    found = {str(path.relative_to(ROOT)): [m.group(0).strip() for m in
                                            UI_IMPORT.finditer(path.read_text(encoding="utf-8"))]
             for package in ("theus", "knowledge") for path in (ROOT / package).rglob("*.py")}
    offenders = {path: lines for path, lines in found.items() if lines}
    assert offenders == {"theus/cli.py": ["from tui"]}
    cli = (ROOT / "theus/cli.py").read_text(encoding="utf-8")
    assert "\n        from tui.app import run_app\n" in cli  # inside main(), not at the top
