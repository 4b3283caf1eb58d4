"""No tool writes the files where grants live (the project's approval rules and MCP trust in
the data folder, the user's `mcp.json` with its `projectVariables` in the config folder): the
write tool refuses them (headless, even with --allow-config-edits), whether the Theus folders
are outside the project or inside it, and a sandboxed command's writes never reach them. Real
files, the real tools, bubblewrap."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import configure
from tests.security.test_shell_sandbox import root, sandbox_tool, shell, top  # noqa: F401
from theus.mcp.config import user_file
from theus.mcp.trust import trust
from theus.permissions import Permissions, rules_for
from theus.protocol import ApprovalRequest
from theus.tools.base import ToolContext, ToolError
from theus.tools.files import write_file
from theus.tools.jail import Jail, JailError

GRANT_ALL = '{"allow": [{"tool": "shell", "command": "sh"}]}'


def granted(project: Path) -> list[Path]:
    """The grant files, written as the app writes them."""
    permissions = Permissions(project)
    permissions.allow(rules_for(ApprovalRequest("shell", "run: ls", "ls")), "project")
    trust(project, [])
    user_file().parent.mkdir(parents=True, exist_ok=True)
    user_file().write_text('{"mcpServers": {}}')
    return [permissions.path, permissions.path.with_name("mcp-trust.json"), user_file()]


def write(project: Path, path: Path) -> str:
    async def yes(request: ApprovalRequest) -> bool:
        return True

    ctx = ToolContext(
        jail=Jail(project), approve=yes, refuse_protected=True, allow_config_edits=True
    )
    said: str = asyncio.run(write_file.run({"path": str(path), "content": GRANT_ALL}, ctx))
    return said


@pytest.mark.parametrize("home_inside", [False, True], ids=["home-outside", "home-inside"])
def test_the_write_tool_never_writes_a_grant_file(
    root: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    home_inside: bool,
) -> None:
    if home_inside:
        configure(monkeypatch, home=str(root / ".theus-home"))
    files = granted(root)
    before = {path: path.read_bytes() for path in files}
    for path in files:
        with pytest.raises((ToolError, JailError)):
            write(root, path)
    assert {path: path.read_bytes() for path in files} == before


def test_a_sandboxed_command_never_writes_a_grant_file(root: Path) -> None:  # noqa: F811
    files = granted(root)
    before = {path: path.read_bytes() for path in files}
    script = "; ".join(f"printf '%s' '{GRANT_ALL}' > {path}" for path in files)
    out = shell(root, f"{script}; true")
    assert {path: path.read_bytes() for path in files} == before, out
    assert Permissions(root).allowing(ApprovalRequest("shell", "run: sh", "sh")) == []
