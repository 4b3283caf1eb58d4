"""Claude Code's `--allowedTools`, `--disallowedTools` and `--permission-mode` on `theus -p`:
the rules as read (pure), then through real processes against the scripted server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scripted_server import ScriptedServer, text, tool
from tests.theus.test_headless import lines, theus
from theus.protocol import ApprovalRequest
from theus.tool_rules import ToolRules, split_rules

UNSANDBOXED = "--allow-unsandboxed-shell"  # the same with or without bubblewrap here


def shell(command: str) -> ApprovalRequest:
    return ApprovalRequest("shell", "run", command)


def edit(path: str) -> ApprovalRequest:
    return ApprovalRequest("edit", "edit", "diff", path=path)


def test_rules_split_as_claude_code_reads_them() -> None:
    assert split_rules(["Bash(git log:*),Read", "Bash(git diff HEAD:*) Edit"]) == [
        "Bash(git log:*)",
        "Read",
        "Bash(git diff HEAD:*)",
        "Edit",
    ]


def test_a_command_rule_covers_its_prefix_word_by_word_and_every_part() -> None:
    rules = ToolRules.parse(["Bash(git diff:*)", "Bash(npm test)"], None, None)
    assert rules.verdict(shell("git diff HEAD~1 -- cart.py")) is True
    assert rules.verdict(shell("git diff && git diff --stat")) is True
    assert rules.verdict(shell("npm test")) is True
    for asked in (
        "git diffx",
        "git diff && rm -rf /",
        "npm test --watch",
        "git",
        "git diff $(rm x)",
    ):
        assert rules.verdict(shell(asked)) is None, asked  # the run's flags decide


def test_a_disallowed_rule_wins_over_every_allowance() -> None:
    rules = ToolRules.parse(
        ["Bash"], ["Bash(rm:*)", "Edit(.env)", "Edit(secrets/**)"], "bypassPermissions"
    )
    assert rules.verdict(shell("ls -la")) is True
    assert rules.verdict(shell("ls && rm -rf build")) is False
    assert rules.verdict(shell("ls `rm x`")) is False  # unreadable while rm is disallowed
    assert rules.verdict(edit("cart.py")) is True
    assert rules.verdict(edit(".env")) is False
    assert rules.verdict(edit("secrets/prod/key.txt")) is False


def test_path_rules_and_modes() -> None:
    rules = ToolRules.parse(["Edit(src/**)", "Write(./docs/*.md)"], ["Task", "Write"], "default")
    assert rules.verdict(edit("src/shop/cart.py")) is True
    assert rules.verdict(edit("docs/guide.md")) is True
    assert rules.verdict(edit("setup.py")) is None
    assert rules.removed == {"task", "write"}
    plan = ToolRules.parse(None, None, "plan")
    assert plan.removed == {"edit", "write", "shell"}
    assert plan.verdict(edit("src/a.py")) is False and plan.verdict(shell("ls")) is False
    assert ToolRules.parse(None, None, "acceptEdits").verdict(edit("a.py")) is True
    assert ToolRules.parse(None, None, "acceptEdits").verdict(shell("ls")) is None


def test_mcp_rules_name_servers_and_tools() -> None:
    rules = ToolRules.parse(["mcp__docs", "mcp__db__query"], ["mcp__db__drop"], None)
    assert rules.mcp_allowed == ["docs__*", "db__query"]
    call = ApprovalRequest("mcp", "call", "{}", tool="db__drop")
    assert rules.verdict(call) is False
    assert rules.verdict(ApprovalRequest("mcp", "call", "{}", tool="docs__search")) is True


@pytest.mark.parametrize(
    ("allowed", "disallowed", "mode", "says"),
    [
        (["Frobnicate"], None, None, "unknown tool 'Frobnicate'"),
        (None, ["Read(.env)"], None, "only the whole tool"),
        (["Bash(make test && rm x)"], None, None, "names one command"),
        (["Edit(~/x)"], None, None, "inside the project"),
        (None, None, "yolo", "--permission-mode takes one of"),
    ],
)
def test_a_rule_that_cannot_hold_is_one_error(
    allowed: list[str] | None, disallowed: list[str] | None, mode: str | None, says: str
) -> None:
    with pytest.raises(ValueError, match=r".") as caught:
        ToolRules.parse(allowed, disallowed, mode)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_claude_codes_tools_theus_lacks_change_nothing() -> None:
    rules = ToolRules.parse(["WebFetch", "TodoWrite"], ["WebSearch"], None)
    assert rules == ToolRules()


# -- through `theus -p` ------------------------------------------------------------------------


def test_disallowed_task_is_not_offered_and_plan_leaves_the_reading_tools(
    server: ScriptedServer, repo: Path
) -> None:
    server.add(text("no task"), text("planned"))
    done = theus(
        ["-p", "q", "--disallowedTools", "Task", "--output-format", "stream-json", "--verbose"],
        server,
        repo,
    )
    assert done.returncode == 0, done.stderr
    init = lines(done.stdout)[0]
    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert "task" not in init["tools"] and "task" not in offered and "shell" in offered
    done = theus(
        ["-p", "q", "--permission-mode", "plan", "--output-format", "stream-json"], server, repo
    )
    assert done.returncode == 0, done.stderr
    offered = {t["function"]["name"] for t in server.requests[1]["tools"]}
    assert offered == {"read", "list", "grep", "recall", "outline", "task"}
    assert lines(done.stdout)[0]["permissionMode"] == "plan"


def test_allowed_command_rule_runs_that_command_only(server: ScriptedServer, repo: Path) -> None:
    server.add(
        tool("shell", {"command": "touch made.txt"}),
        tool("shell", {"command": "rm cart.py"}),
        text("done"),
    )
    done = theus(
        [
            "-p",
            "go",
            "--allowedTools",
            "Bash(touch:*)",
            "Read",
            UNSANDBOXED,
            "--output-format",
            "json",
        ],
        server,
        repo,
    )
    assert done.returncode == 0, done.stderr
    assert (repo / "made.txt").exists() and (repo / "cart.py").exists()
    [denial] = json.loads(done.stdout)["permission_denials"]
    assert denial["tool_input"] == {"command": "rm cart.py"}


def test_disallowed_rule_refuses_what_the_mode_would_run(
    server: ScriptedServer, repo: Path
) -> None:
    server.add(
        tool("shell", {"command": "rm cart.py"}),
        tool("shell", {"command": "touch made.txt"}),
        tool("edit", {"path": "cart.py", "old_string": "class Cart", "new_string": "class Basket"}),
        text("done"),
    )
    done = theus(
        [
            "-p",
            "go",
            UNSANDBOXED,
            "--dangerously-skip-permissions",
            "--disallowedTools",
            "Bash(rm:*)",
            "--output-format",
            "json",
        ],
        server,
        repo,
    )
    assert done.returncode == 0, done.stderr
    # The mode approved the other command and the edit.
    assert (repo / "made.txt").exists() and "class Basket" in (repo / "cart.py").read_text()
    [denial] = json.loads(done.stdout)["permission_denials"]
    assert "refused by --disallowedTools Bash(rm:*)" in denial["reason"]
    # The model is told which rule, not to ask for a flag the run already has.
    told = server.requests[1]["messages"][-1]["content"]
    assert "not approved (refused by --disallowedTools Bash(rm:*)" in told, told


def test_a_bad_rule_is_one_line_and_exit_2(server: ScriptedServer, repo: Path) -> None:
    for args in (
        ["--allowedTools", "Bsh"],
        ["--permission-mode", "plan", "--allow-edits"],
        ["--permission-mode", "plan", "--dangerously-skip-permissions"],
    ):
        done = theus(["-p", "q", *args], server, repo)
        assert done.returncode == 2 and done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert server.requests == []


def test_append_system_prompt_is_this_runs_only(server: ScriptedServer, repo: Path) -> None:
    server.add(text("oui"), text("yes"))
    done = theus(["-p", "q", "--append-system-prompt", "Answer in French."], server, repo)
    assert done.returncode == 0, done.stderr
    system = server.requests[0]["messages"][0]
    assert system["role"] == "system" and system["content"].endswith("\n\nAnswer in French.")
    done = theus(["-p", "again", "-c"], server, repo)  # the session began without it
    assert done.returncode == 0, done.stderr
    assert "French" not in server.requests[1]["messages"][0]["content"]


def test_a_headless_runs_edits_can_be_undone_from_its_session(
    server: ScriptedServer, repo: Path
) -> None:
    from theus.checkpoints import Checkpoints
    from theus.sessions import SessionStore
    from theus.tools.files import put_back
    from theus.tools.jail import Jail

    before = (repo / "cart.py").read_bytes()
    server.add(
        tool("edit", {"path": "cart.py", "old_string": "class Cart", "new_string": "class Basket"}),
        text("done"),
    )
    done = theus(["-p", "rename", "--permission-mode", "acceptEdits"], server, repo)
    assert done.returncode == 0, done.stderr
    assert (repo / "cart.py").read_bytes() != before
    session = SessionStore(repo).last()  # what `theus -c` then /undo in the app goes on with
    assert session is not None
    checkpoints = Checkpoints.of(session)
    jail = Jail(repo)
    assert checkpoints.undo(lambda rel, data: put_back(jail, rel, data)) == ["cart.py"]
    assert (repo / "cart.py").read_bytes() == before


def test_max_turns_2_with_a_subagent_is_2_model_calls(server: ScriptedServer, repo: Path) -> None:
    server.add(tool("task", {"description": "look", "prompt": "list the files"}, repeat=True))
    done = theus(
        ["-p", "delegate", "--max-turns", "2", "--output-format", "json"],
        server,
        repo,
        THEUS_NO_FACTS="1",
    )
    assert done.returncode == 1 and json.loads(done.stdout)["subtype"] == "error_max_turns"
    assert len(server.requests) == 2  # the request's call and its subagent's, nothing more
