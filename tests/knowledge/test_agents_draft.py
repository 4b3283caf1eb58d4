"""The AGENTS.md draft: what the project states, nothing guessed."""

from __future__ import annotations

import json
from pathlib import Path

from knowledge.memory.agents_draft import draft
from tests.conftest import write_tree


def commands(text: str) -> list[str]:
    section = (
        text.split("## Commands\n\n", 1)[1].split("\n\n", 1)[0] if "## Commands" in text else ""
    )
    return section.splitlines()


def test_a_python_project_names_its_make_target_lint_and_scripts(tmp_path: Path) -> None:
    files = {
        "pyproject.toml": '[project]\nname = "shop"\n[project.scripts]\nshop = '
        '"shop.cli:main"\n[tool.pytest.ini_options]\n[tool.mypy]\n',
        "Makefile": "test:\n\tpython -m pytest -q\n",
        "shop/cli.py": "def main(): ...\n",
        "shop/cart.py": "class Cart: ...\n",
        "tests/test_cart.py": "def test(): ...\n",
    }
    root = write_tree(tmp_path, files)
    text = draft(root, [f for f in files if f.endswith(".py")])
    assert commands(text) == ["- test: `make test`", "- types: `mypy`"]
    assert "Languages: python (3 files)." in text and "- `shop/`: 2 files" in text
    assert "- `shop` runs `shop.cli:main`" in text
    assert "Run the tests before saying a change is done." in text


def test_node_go_and_rust_projects_use_their_own_tools(tmp_path: Path) -> None:
    node = write_tree(
        tmp_path / "web",
        {
            "package.json": json.dumps({"scripts": {"test": "vitest", "build": "vite build"}}),
            "pnpm-lock.yaml": "",
            "src/app.ts": "export {}\n",
        },
    )
    assert commands(draft(node, ["src/app.ts"])) == [
        "- test: `pnpm test`",
        "- build: `pnpm run build`",
    ]
    go = write_tree(
        tmp_path / "svc", {"go.mod": "module svc\n", "cmd/svc/main.go": "package main\n"}
    )
    text = draft(go, ["cmd/svc/main.go"])
    assert commands(text)[0] == "- test: `go test ./...`" and "- `cmd/svc/main.go`" in text
    rust = write_tree(tmp_path / "cli", {"Cargo.toml": "[package]\nname='cli'\n"})
    assert commands(draft(rust, []))[0] == "- test: `cargo test`"


def test_nothing_stated_is_nothing_claimed(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {"notes.py": "x = 1\n", "package.json": "{broken"})
    text = draft(root, ["notes.py"])
    assert "## Commands" not in text and "Run the tests" not in text
