"""`theus recall` through the real CLI entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from entrypoint.cli import main
from tests.conftest import configure


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    configure(monkeypatch, home=str(tmp_path / "home"))
    root = tmp_path / "repo"
    (root / "shop").mkdir(parents=True)
    (root / "shop/cart.py").write_text(
        '"""Shopping cart."""\n\n\nclass Cart:\n    def total(self, items):\n'
        '        """Sum of line prices."""\n        return sum(items)\n'
    )
    (root / "shop/orders.py").write_text("def list_orders():\n    return []\n")
    return root


def test_json_contract(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recall", "--json", "--path", str(repo), "--top", "3", "cart total"]) == 0
    captured = capsys.readouterr()
    assert "indexing it first" in captured.err
    out = json.loads(captured.out)
    assert out["query"] == "cart total"
    assert isinstance(out["took_ms"], float)
    assert 0 < len(out["results"]) <= 3
    first = out["results"][0]
    assert {"key", "kind", "path", "name", "line", "score", "why"} <= first.keys()
    assert first["path"] == "shop/cart.py" and 0.35 <= first["score"] <= 1.0
    assert out["context"].startswith("Relevant code (score")
    assert "shop/cart.py" in out["context"]
    assert out["injected_tokens"] > 0
    # The one-shot command ranks definitions from the store, as the app does from the graph.
    assert out["definitions"][0] == {
        "key": "sym:shop/cart.py#Cart.total",
        "path": "shop/cart.py",
        "name": "Cart.total",
        "line": 5,
        "end_line": 7,
        "score": 1.0,
    }
    assert "shop/cart.py:5-7 Cart.total(self, items)" in out["context"]


def test_json_files_are_not_cut_short_by_hits_in_one_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(monkeypatch, home=str(tmp_path / "home"))
    root = tmp_path / "many"
    (root / "pkg").mkdir(parents=True)
    for i in range(8):  # each file has several hits: `results` alone would name few files
        (root / f"pkg/parser_{i}.py").write_text(
            "".join(f"def parse_token_{j}(token):\n    return token\n\n" for j in range(4))
        )
    assert main(["recall", "--json", "--path", str(root), "--top", "6", "parse token"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["results"]) == 6
    assert len({r["path"] for r in out["results"]}) < 6
    files = out["files"]
    assert len(files) >= 6 and len(set(files)) == len(files)
    assert all(f.startswith("pkg/parser_") for f in files)
    assert files[0] == out["results"][0]["path"]


def test_json_context_is_empty_when_nothing_matches(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["recall", "--json", "--path", str(repo), "xylophone"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"] == [] and out["context"] == "" and out["injected_tokens"] == 0


def test_plain_output_lists_hits_and_the_block(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    assert main(["recall", "where", "is", "the", "cart", "total"]) == 0
    out = capsys.readouterr().out
    assert "shop/cart.py:5" in out and "Cart.total" in out
    assert "Context block" in out


def test_under_filters_by_path_prefix(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["recall", "--json", "--path", str(repo), "--under", "shop/orders", "cart orders"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert {r["path"] for r in out["results"]} == {"shop/orders.py"}


@pytest.mark.parametrize("argv", [["recall"], ["recall", "  "], ["recall", "--top", "0", "x"]])
def test_bad_input_is_one_line_and_exit_2(
    repo: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main([*argv[:1], "--path", str(repo), *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("theus: ") and err.count("\n") == 1


ONE_SHOT = """
import sys
from entrypoint.cli import main
from tests.conftest import configure
from tests.conftest import configure
assert main(["recall", "--json", "--path", sys.argv[1], "cart total"]) == 0
print(sorted(m for m in sys.modules
             if m.startswith(("theus.cli.commands.", "theus.dashboard", "theus.mcp_server",
                              "multiprocessing", "concurrent.futures.process"))))
"""


def test_a_one_shot_recall_imports_only_its_own_command(repo: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", ONE_SHOT, str(repo)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == str(["theus.cli.commands.recall"])


@pytest.mark.parametrize("argv", [["--help"], ["--help", "recall"]])
def test_the_top_level_help_lists_every_command(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    listed = capsys.readouterr().out
    for command in ("index", "status", "recall", "mcp", "login", "doctor", "history"):
        assert f"    {command} " in listed
