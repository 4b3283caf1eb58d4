"""`theus -p` as scripts written for Claude Code call it: the prompt as the rest of the line,
piped stdin added to it, Claude Code's result and init fields. A real subprocess, the real
openai client, the scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.scripted_server import ScriptedServer, text, tool
from tests.theus.test_headless import lines, theus

CLAUDE_USAGE = ("input_tokens", "output_tokens", "cache_read_input_tokens",
                "cache_creation_input_tokens")


def asked(server: ScriptedServer) -> Any:
    return server.requests[0]["messages"][-1]["content"]


def test_the_rest_of_the_line_is_the_prompt_and_piped_stdin_follows(
        server: ScriptedServer, repo: Path) -> None:
    server.add(text("A short summary."))
    done = theus(["-p", "summarise", "these", "notes", "--output-format", "json"], server, repo,
                 stdin="line one\nline two\n")
    assert done.returncode == 0, done.stderr
    (result,) = lines(done.stdout)  # the flag after the prompt is still a flag
    assert result["result"] == "A short summary."
    assert asked(server) == "summarise these notes\n\nline one\nline two\n"


def test_words_after_a_later_flag_are_one_clear_line(repo: Path) -> None:
    for words in (["fix", "--max-turns", "3", "the", "tests"], ["--max-turns", "3", "status"]):
        done = theus(["-p", *words], None, repo, stdin="")
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.count("\n") == 1
        assert "the prompt goes in one piece after -p" in done.stderr


def test_continue_with_resume_is_a_conflict(repo: Path) -> None:
    done = theus(["-c", "-r", "abc123", "-p", "q"], None, repo, stdin="")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "-r/--resume" in done.stderr and "-c/--continue" in done.stderr


def test_json_result_carries_claude_codes_fields(server: ScriptedServer, repo: Path,
                                                 tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"test-model": {"input": 2.0, "output": 10.0}}))
    server.add(text("priced", prompt_tokens=1000, completion_tokens=50, cached_tokens=400))
    done = theus(["-p", "q", "--output-format", "json"], server, repo, stdin="",
                 THEUS_PRICES=str(prices), THEUS_NO_FACTS="1")
    assert done.returncode == 0, done.stderr
    (result,) = lines(done.stdout)
    # Theus's own fields stay.
    assert result["usage"]["prompt_tokens"] == 1000 and "injected_tokens" in result
    assert {k: result["usage"][k] for k in CLAUDE_USAGE} == {
        "input_tokens": 1000, "output_tokens": 50, "cache_read_input_tokens": 400,
        "cache_creation_input_tokens": None}
    assert result["total_cost_usd"] == (1000 * 2.0 + 50 * 10.0) / 1e6
    assert isinstance(result["duration_api_ms"], int)
    assert 0 <= result["duration_api_ms"] <= result["duration_ms"]
    assert result["permission_denials"] == []


def test_stream_json_init_session_ids_and_permission_denials(
        server: ScriptedServer, repo: Path) -> None:
    server.add(tool("shell", {"command": "touch pwned"}), text("could not run it"))
    done = theus(["-p", "make", "a", "file", "--output-format", "stream-json"], server, repo,
                 stdin="")
    assert done.returncode == 0, done.stderr
    events = lines(done.stdout)
    init, result = events[0], events[-1]
    assert (init["type"], init["subtype"]) == ("system", "init")
    assert {"read", "edit", "shell"} <= set(init["tools"])
    assert init["permissionMode"] == "default" and init["cwd"] == str(repo.resolve())
    assert all(e["session_id"] == init["session_id"] for e in events)
    use = next(e for e in events if e["type"] == "tool_use")
    [denial] = result["permission_denials"]
    assert denial["tool_name"] == "shell" and denial["tool_use_id"] == use["id"]
    assert denial["tool_input"] == {"command": "touch pwned"}
    assert "--allow-shell" in denial["reason"]
    assert not (repo / "pwned").exists()
    # No price table, no cache report: null, never a guess.
    assert result["total_cost_usd"] is None
    assert result["usage"]["cache_read_input_tokens"] is None
