"""Project instructions (AGENTS.md, CLAUDE.md, THEUS.md and the user's own AGENTS.md) reach
the model's system prompt as Codex and Claude Code users expect: nearest last, once each,
capped, redacted, and listed; through real files and a real `theus -p` process."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from knowledge.core.paths import config_home
from knowledge.memory.instructions import CAP_BYTES, read_instructions
from tests.conftest import texts_of, write_tree
from tests.scripted_server import ScriptedServer, text
from tests.theus.test_headless import lines, theus

TOKEN = "ghp_" + "a1b2c3d4e5" * 4  # a GitHub token's shape


def git_init(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def test_files_from_the_repository_root_down_to_the_project_then_once_each(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path / "mono",
        {
            "AGENTS.md": "Use pnpm.",
            "CLAUDE.md": "Use pnpm.",  # the same text (a copy or a link): given once
            "apps/web/AGENTS.md": "Components go in src/components.",
            "apps/web/THEUS.md": "Prefer small commits.",
            "apps/web/src/x.ts": "export {}\n",
        },
    )
    git_init(repo)
    config_home().mkdir(parents=True, exist_ok=True)
    (config_home() / "AGENTS.md").write_text("Answer in British English.")
    (tmp_path / "AGENTS.md").write_text("outside the repository: never read")
    found = read_instructions(repo / "apps" / "web")
    assert found.files == (
        str(config_home() / "AGENTS.md"),
        str(repo / "AGENTS.md"),
        "AGENTS.md",
        "THEUS.md",
    )
    order = [found.text.index(t) for t in ("British", "pnpm", "src/components", "small")]
    assert order == sorted(order) and "never read" not in found.text
    assert found.text.count("Use pnpm.") == 1 and found.cut == ()


def test_outside_a_repository_only_the_project_folder_is_read(tmp_path: Path) -> None:
    write_tree(tmp_path, {"AGENTS.md": "parent", "p/CLAUDE.md": "mine"})
    found = read_instructions(tmp_path / "p")
    assert found.files == ("CLAUDE.md",) and "parent" not in found.text


def test_instructions_are_capped_and_say_so(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "p", {"AGENTS.md": "a" * (CAP_BYTES + 500), "CLAUDE.md": "left out"}
    )
    found = read_instructions(root)
    assert len(found.text.encode()) < CAP_BYTES + 200
    assert "[cut: 500 more bytes in AGENTS.md]" in found.text
    assert "left out" not in found.text and found.cut == ("AGENTS.md", "CLAUDE.md")


def test_instructions_reach_the_first_request_redacted_and_are_listed(
    tmp_path: Path, server: ScriptedServer
) -> None:
    root = write_tree(
        tmp_path / "repo",
        {
            "AGENTS.md": f"MARKER-AGENTS: run tests with `make check`. Deploy token {TOKEN}",
            "CLAUDE.md": "MARKER-CLAUDE: never edit generated files.",
            "app.py": "def main():\n    return 1\n",
        },
    )
    git_init(root)
    server.add(text("ok"))
    done = theus(
        ["-p", "hello there, what is main?", "--output-format", "stream-json"], server, root
    )
    assert done.returncode == 0, done.stderr
    system = texts_of(server.requests[0]["messages"][0])[0]
    assert "MARKER-AGENTS" in system and "MARKER-CLAUDE" in system
    assert system.index("MARKER-AGENTS") < system.index("MARKER-CLAUDE")
    assert TOKEN not in json.dumps(server.requests)
    init = lines(done.stdout)[0]
    assert init["subtype"] == "init" and init["instructions"] == ["AGENTS.md", "CLAUDE.md"]
    status = json.loads(theus(["status", "--json"], None, root).stdout)
    assert status["instructions"]["files"] == ["AGENTS.md", "CLAUDE.md"]
