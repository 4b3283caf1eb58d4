"""`--allow-edits` does not write files that run code by themselves: headless runs refuse
them unless `--allow-config-edits`; the Theus data folder and secrets files stay refused even
then. Through the real write tool on real files."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import write_tree
from theus.protocol import ApprovalRequest
from theus.tools.base import ToolContext, ToolError
from theus.tools.files import write_file
from theus.tools.jail import Jail
from theus.tools.protected import RULES

CODE_RUNNING = [
    ".mcp.json",
    "CLAUDE.md",
    "AGENTS.md",
    ".cursorrules",
    ".github/workflows/ci.yml",
    ".gitattributes",
    ".gitmodules",
    ".pre-commit-config.yaml",
    ".husky/pre-commit",
    ".devcontainer/devcontainer.json",
    ".zed/settings.json",
    ".continue/config.json",
    ".direnv/hook.sh",
    "sitecustomize.py",
    "conftest.py",
    "tests/conftest.py",
    "setup.py",
    "Makefile",
    ".bashrc",
    ".envrc",
    ".git/hooks/pre-commit",
    ".vscode/tasks.json",
    ".claude/settings.json",
    # the families the attack run wrote with --allow-edits alone: other agents' configuration,
    # CI, dev environments, build tools
    ".gemini/settings.json",
    ".roo/mcp.json",
    "opencode.json",
    ".kiro/steering/rules.md",
    ".amazonq/rules/x.md",
    ".clinerules",
    ".aider.conf.yml",
    ".github/copilot-instructions.md",
    "Jenkinsfile",
    "azure-pipelines.yml",
    ".travis.yml",
    ".buildkite/pipeline.yml",
    "bitbucket-pipelines.yml",
    ".drone.yml",
    ".devcontainer.json",
    ".cargo/config.toml",
    ".gitlab-ci.yml",
    ".circleci/config.yml",
    ".windsurfrules",
    "GEMINI.md",
    ".yarnrc.yml",
    "gradle/wrapper/gradle-wrapper.properties",
    "mise.toml",
    ".git/config",
    "sub/project/.vscode/settings.json",
    "app.code-workspace",
]
NEVER = [".env", ".env.production", "id_rsa", "deploy/server.pem"]
ORDINARY = [
    "src/app.py",
    "docs/setup.md",
    "README.md",
    "github/workflows.txt",
    "package.json",
    "pyproject.toml",
    "src/agents.py",
    ".github/ISSUE_TEMPLATE/bug.md",
]


def write(root: Path, path: str, *, headless: bool = True, allow_config_edits: bool = False) -> str:
    async def yes(request: ApprovalRequest) -> bool:
        return True

    ctx = ToolContext(
        jail=Jail(root),
        approve=yes,
        refuse_protected=headless,
        allow_config_edits=allow_config_edits,
    )
    said: str = asyncio.run(write_file.run({"path": path, "content": "echo pwned\n"}, ctx))
    return said


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", {"src/app.py": "x = 1\n"})


@pytest.mark.parametrize("path", CODE_RUNNING)
def test_headless_refuses_files_that_run_code_unless_allowed(root: Path, path: str) -> None:
    with pytest.raises(ToolError, match="--allow-config-edits"):
        write(root, path)
    assert not (root / path).exists()
    assert write(root, path, allow_config_edits=True).startswith("write ")
    assert (root / path).read_text() == "echo pwned\n"


@pytest.mark.parametrize("path", NEVER)
def test_secrets_files_stay_refused_even_with_the_flag(root: Path, path: str) -> None:
    with pytest.raises(ToolError, match="refused"):
        write(root, path, allow_config_edits=True)
    assert not (root / path).exists()


@pytest.mark.parametrize("path", ORDINARY)
def test_ordinary_files_are_written(root: Path, path: str) -> None:
    assert write(root, path).startswith("write ")


def test_every_rule_says_why() -> None:
    assert all(rule.reason and rule.pattern for rule in RULES)
    assert len({rule.pattern for rule in RULES}) == len(RULES)  # no rule twice
