"""The agent with the user's MCP servers, headless (`theus -p`): a real subprocess, the real
openai client against the scripted model, and a small MCP server written for the test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.scripted_server import ScriptedServer, text, tool
from tests.theus.test_headless import blocks, lines, theus
from theus.mcp.client import McpHub
from theus.mcp.config import ServerConfig

FIXTURE = Path(__file__).parents[1] / "mcp_fixture_server.py"


def configure(root: Path, marker: Path, **more: dict[str, Any]) -> None:
    servers: dict[str, Any] = {
        "fx": {"command": sys.executable, "args": [str(FIXTURE), str(marker)]},
        **more,
    }
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


def tool_names(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools", [])}


def results(out: str) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in blocks(out, "tool_result")}


def test_an_allowed_tool_runs_and_any_other_is_refused_with_the_flag_to_use(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "fx.started"
    configure(repo, marker)
    server.add(
        tool("fx__echo", {"text": "hi"}),
        tool("fx__wipe", {}),
        tool("fx__big", {}),
        tool("fx__fail", {}),
        text("done"),
    )
    done = theus(
        [
            "-p",
            "use the tools",
            "--output-format",
            "stream-json",
            "--allow-mcp-tool",
            "fx__echo",
            "--allow-mcp-tool",
            "fx__big",
            "--allow-mcp-tool",
            "fx__fail",
        ],
        server,
        repo,
    )
    assert done.returncode == 0, done.stderr
    assert {"fx__echo", "fx__wipe", "read"} <= tool_names(server.requests[0])
    found = results(done.stdout)
    assert found["fx__echo"]["content"] == "echo: hi" and not found["fx__echo"]["is_error"]
    refused = found["fx__wipe"]
    assert refused["is_error"] and "not approved" in refused["content"]
    assert "--allow-mcp" in refused["content"] and not marker.with_suffix(".wiped").exists()
    assert (
        len(found["fx__big"]["content"]) < 31_000
        and "characters cut" in found["fx__big"]["content"]
    )
    assert found["fx__fail"]["is_error"] and "failed on purpose" in found["fx__fail"]["content"]
    final = lines(done.stdout)[-1]
    assert [d["tool_name"] for d in final["permission_denials"]] == ["fx__wipe"]


def test_a_subagent_gets_the_mcp_tools_but_no_task_tool(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    configure(repo, tmp_path / "fx.started")
    server.add(
        tool("task", {"description": "echo", "prompt": "echo hi with the fx tool"}),
        tool("fx__echo", {"text": "hi"}),
        text("child: echoed"),
        text("done"),
    )
    done = theus(
        ["-p", "delegate it", "--allow-mcp-tool", "fx__echo"], server, repo, THEUS_NO_FACTS="1"
    )
    assert done.returncode == 0, done.stderr
    child = server.requests[1]
    assert "fx__echo" in tool_names(child) and "task" not in tool_names(child)
    assert any(
        m["role"] == "tool" and m["content"] == "echo: hi" for m in server.requests[2]["messages"]
    )


def test_only_the_servers_a_run_names_start_and_a_failing_one_is_one_warning(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "fx.started"
    configure(
        repo,
        marker,
        broken={"command": str(tmp_path / "no-such-server")},
        hangs={"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]},
    )
    server.add(text("answered"), text("answered anyway"))
    # No flag: no server runs, no MCP tool is offered, and the SDK is not even imported.
    probe = (
        "import sys\nfrom entrypoint.cli import main\n"
        f"code = main(['--path', {str(repo)!r}, '-p', 'hello'])\n"
        "assert code == 0, code\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')]\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "THEUS_BASE_URL": server.url,
            "THEUS_MODEL": "test-model",
            "THEUS_NO_WATCH": "1",
            "THEUS_NO_EMBEDDINGS": "1",
        },
    )
    assert done.returncode == 0 and done.stdout == "answered\n", done.stderr
    assert not any("__" in name for name in tool_names(server.requests[0]))
    assert "MCP" not in done.stderr
    # Two servers named, neither comes up: one warning each, and the run goes on.
    done = theus(
        ["-p", "hello", "--allow-mcp-tool", "broken__*", "--allow-mcp-tool", "hangs__*"],
        server,
        repo,
        THEUS_MCP_START_TIMEOUT="2",
    )
    assert done.returncode == 0 and done.stdout == "answered anyway\n", done.stderr
    warnings = [w for w in done.stderr.splitlines() if "MCP server" in w]
    assert len(warnings) == 2, done.stderr
    assert any("broken failed" in w for w in warnings)
    assert any("hangs failed: did not start within 2 s" in w for w in warnings)
    assert not marker.exists()  # fx was not named: it never ran
    bad = theus(["-p", "hello", "--allow-mcp-tool", "echo"], server, repo)
    assert bad.returncode == 2 and "SERVER__TOOL" in bad.stderr


def test_always_allowing_an_mcp_tool_allows_that_tool_and_nothing_else(repo: Path) -> None:
    from theus.permissions import Permissions, rules_for
    from theus.protocol import ApprovalRequest

    echo = ApprovalRequest(
        "mcp", "call MCP tool fx__echo", '{"text": "hi"}', tool="fx__echo", server="entry-a"
    )
    Permissions(repo).allow(rules_for(echo), "project")
    kept = Permissions(repo)  # read back from the project's data folder
    assert kept.allowing(echo)
    assert not kept.allowing(
        ApprovalRequest("mcp", "call MCP tool fx__wipe", "{}", tool="fx__wipe", server="entry-a")
    )
    assert not kept.allowing(ApprovalRequest("edit", "edit cart.py", "diff", path="cart.py"))
    assert not kept.allowing(ApprovalRequest("shell", "run: ls", "ls"))


def test_mcp_config_given_on_the_command_line_as_claude_code_takes_it(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "fx.started"
    given = tmp_path / "servers.json"
    given.write_text(
        json.dumps(
            {"mcpServers": {"fx": {"command": sys.executable, "args": [str(FIXTURE), str(marker)]}}}
        )
    )
    server.add(tool("fx__echo", {"text": "hi"}), text("done"))
    done = theus(
        [
            "-p",
            "echo",
            "--mcp-config",
            str(given),
            "--allowedTools",
            "mcp__fx__echo",
            "--output-format",
            "stream-json",
        ],
        server,
        repo,
    )
    assert done.returncode == 0, done.stderr
    assert results(done.stdout)["fx__echo"]["content"] == "echo: hi"
    assert lines(done.stdout)[0]["mcp_servers"] == [{"name": "fx", "status": "connected"}]
    done = theus(["-p", "echo", "--mcp-config", str(tmp_path / "missing.json")], server, repo)
    assert done.returncode == 2 and "--mcp-config" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and len(server.requests) == 2


def test_a_server_the_hub_cannot_reach_by_its_deadline_is_one_warning_and_never_starts(
    tmp_path: Path,
) -> None:
    """On a busy machine the hub's thread can still be importing the SDK when a server's
    start-up deadline passes: the run is told, as of a server too slow to start, and the
    server is not started behind its back."""
    marker = tmp_path / "started"
    hub = McpHub(start_timeout_s=0.3)
    hub._running_loop().call_soon_threadsafe(time.sleep, 1.5)  # the hub's thread, busy
    late = ServerConfig(
        name="late",
        transport="stdio",
        scope="project",
        command=sys.executable,
        args=("-c", f"open({str(marker)!r}, 'w'); import time; time.sleep(60)"),
    )
    try:
        hub.connect([late])
        assert hub.wait_ready()
        assert hub.warnings() == ["MCP server late failed: did not start within 0.3 s"]
    finally:
        hub.close()
    assert not marker.exists()
