"""MCP servers in the app: the user's start at launch, a project's only once trusted; the
model calls a tool of a small MCP server written for the test through the scripted model
server, and the call waits on the approval screen; `/mcp` lists servers, state and tools."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from textual.screen import Screen
from textual.widgets import Static

from tests.scripted_server import ScriptedServer, text, tool
from tests.tui.conftest import MakeApp, ready, wait_for
from tests.tui.test_chat import ask, items
from tui.app import TheusApp
from tui.screens.approval import ApprovalScreen
from tui.widgets.chat_items import AssistantReply, Notice, ToolCallView

FIXTURE = Path(__file__).parents[1] / "mcp_fixture_server.py"


def servers(marker: Path) -> dict[str, Any]:
    return {"mcpServers": {"fx": {"command": sys.executable, "args": [str(FIXTURE), str(marker)]}}}


def notices(app: Any) -> list[str]:
    return [str(n.render()) for n in items(app, Notice)]


def asking(app: TheusApp, tool: str) -> ApprovalScreen | None:
    """The approval screen once it asks about `tool`, else None."""
    screen: Screen[Any] = app.screen  # as `Screen[object]` it would not narrow
    return screen if isinstance(screen, ApprovalScreen) and screen.request.tool == tool else None


def result_of(view: ToolCallView) -> str:
    return str(view.query_one(".tool-result", Static).render())


async def test_an_mcp_call_asks_first_and_a_project_server_waits_for_trust(
    make_app: MakeApp, server: ScriptedServer, repo: Path, theus_home: Path, tmp_path: Path
) -> None:
    (theus_home / "config").mkdir(exist_ok=True)
    (theus_home / "config" / "mcp.json").write_text(json.dumps(servers(tmp_path / "user")))
    project = servers(tmp_path / "project")
    project["mcpServers"]["proj"] = project["mcpServers"].pop("fx")
    (repo / ".mcp.json").write_text(json.dumps(project))
    server.add(tool("fx__echo", {"text": "hi"}), tool("fx__wipe", {}), text("done"))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await ask(pilot, "echo hi")
        modal = await wait_for(
            pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen, timeout=30
        )
        assert modal.request.kind == "mcp" and modal.request.tool == "fx__echo"
        assert json.loads(modal.request.detail) == {"text": "hi"}
        await pilot.press("y")
        modal = await wait_for(pilot, lambda: asking(app, "fx__wipe"))
        await pilot.press("n")
        await wait_for(pilot, lambda: items(app, AssistantReply))
        await app.workers.wait_for_complete()
        views = {v.tool_name: v for v in items(app, ToolCallView)}
        assert result_of(views["fx__echo"]) == "echo: hi"
        assert "not approved" in result_of(views["fx__wipe"])
        assert not (tmp_path / "user.wiped").exists()
        await wait_for(pilot, lambda: app.status["mcp"] == "mcp 1/1")  # the status bar's
        offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
        assert "fx__echo" in offered and not any(n.startswith("proj__") for n in offered)

        # The repository's own server never ran: /mcp says why and how to start it.
        assert not (tmp_path / "project").exists()
        await ask(pilot, "/mcp")
        listing = await wait_for(pilot, lambda: [n for n in notices(app) if "MCP servers" in n])
        assert "fx (user, stdio" in listing[0] and "— ready" in listing[0]
        assert "fx__echo, fx__wipe" in listing[0] and "/mcp trust" in listing[0]
        await ask(pilot, "/mcp trust")
        await wait_for(pilot, lambda: (tmp_path / "project").exists(), timeout=30)
