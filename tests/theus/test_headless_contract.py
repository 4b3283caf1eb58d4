"""`theus -p` as scripts written for Claude Code call it: the prompt as the rest of the line,
piped stdin added to it, Claude Code's result and init fields. A real subprocess, the real
openai client, the scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import texts_of
from tests.scripted_server import ScriptedServer, text, tool
from tests.theus.test_headless import blocks, lines, theus

CLAUDE_USAGE = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def asked(server: ScriptedServer) -> Any:
    return server.requests[0]["messages"][-1]["content"]


def test_the_rest_of_the_line_is_the_prompt_and_piped_stdin_follows(
    server: ScriptedServer, repo: Path
) -> None:
    server.add(text("A short summary."))
    done = theus(
        ["-p", "summarise", "these", "notes", "--output-format", "json"],
        server,
        repo,
        stdin="line one\nline two\n",
    )
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


def test_json_result_carries_claude_codes_fields(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"test-model": {"input": 2.0, "output": 10.0}}))
    server.add(text("priced", prompt_tokens=1000, completion_tokens=50, cached_tokens=400))
    done = theus(
        ["-p", "q", "--output-format", "json"],
        server,
        repo,
        stdin="",
        THEUS_PRICES=str(prices),
        THEUS_NO_FACTS="1",
    )
    assert done.returncode == 0, done.stderr
    (result,) = lines(done.stdout)
    # Theus's own fields stay.
    assert result["usage"]["prompt_tokens"] == 1000 and "injected_tokens" in result
    assert {k: result["usage"][k] for k in CLAUDE_USAGE} == {
        "input_tokens": 1000,
        "output_tokens": 50,
        "cache_read_input_tokens": 400,
        "cache_creation_input_tokens": None,
    }
    assert result["total_cost_usd"] == (1000 * 2.0 + 50 * 10.0) / 1e6
    assert isinstance(result["duration_api_ms"], int)
    assert 0 <= result["duration_api_ms"] <= result["duration_ms"]
    assert result["permission_denials"] == []


def test_stream_json_init_session_ids_and_permission_denials(
    server: ScriptedServer, repo: Path
) -> None:
    server.add(tool("shell", {"command": "touch pwned"}), text("could not run it"))
    done = theus(
        ["-p", "make", "a", "file", "--output-format", "stream-json"], server, repo, stdin=""
    )
    assert done.returncode == 0, done.stderr
    events = lines(done.stdout)
    init, result = events[0], events[-1]
    assert (init["type"], init["subtype"]) == ("system", "init")
    assert {"read", "edit", "shell"} <= set(init["tools"])
    assert init["permissionMode"] == "default" and init["cwd"] == str(repo.resolve())
    assert all(e["session_id"] == init["session_id"] for e in events)
    use = blocks(done.stdout, "tool_use")[0]
    [denial] = result["permission_denials"]
    assert denial["tool_name"] == "shell" and denial["tool_use_id"] == use["id"]
    assert denial["tool_input"] == {"command": "touch pwned"}
    assert "--allow-shell" in denial["reason"]
    assert not (repo / "pwned").exists()
    # No price table, no cache report: null, never a guess.
    assert result["total_cost_usd"] is None
    assert result["usage"]["cache_read_input_tokens"] is None


# A stream as Claude Code's documentation shows it (Agent SDK message types: system init,
# assistant and user messages of content blocks, result), kept in the repository.
CLAUDE_STREAM = Path(__file__).parent.parent / "fixtures" / "claude_code_stream.jsonl"
# Documented as null where the server reports no cache figures.
NULLABLE = {"cache_creation_input_tokens", "cache_read_input_tokens"}
# Each tool's own arguments (Claude Code's Read takes file_path, Theus's read path): an object.
OPAQUE = {"input"}


def _kind(value: Any) -> str:
    return {
        bool: "bool",
        int: "number",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
        type(None): "null",
    }[type(value)]


def missing(theirs: Any, ours: Any, where: str = "") -> list[str]:
    """Where `ours` lacks a field of `theirs` or has it as another JSON type (content blocks
    are matched by their `type`, other lists by their first item)."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        found = []
        for key, value in theirs.items():
            if key not in ours:
                found.append(f"{where}.{key}")
            elif key in OPAQUE:
                found += [] if _kind(ours[key]) == _kind(value) else [f"{where}.{key}"]
            elif not (key in NULLABLE and ours[key] is None):
                found += missing(value, ours[key], f"{where}.{key}")
        return found
    if isinstance(theirs, list) and isinstance(ours, list):
        if theirs and isinstance(theirs[0], dict) and "type" in theirs[0]:
            found = []
            for block in theirs:
                same = [b for b in ours if b.get("type") == block["type"]]
                found += (
                    missing(block, same[0], f"{where}[{block['type']}]")
                    if same
                    else [f"{where}[{block['type']}]"]
                )
            return found
        return missing(theirs[0], ours[0], f"{where}[0]") if theirs and ours else []
    if theirs is None:  # Claude Code's null (parent_tool_use_id, stop_sequence): null or text
        return [] if ours is None or isinstance(ours, str) else [f"{where}: {_kind(ours)}"]
    return [] if _kind(theirs) == _kind(ours) else [f"{where}: {_kind(ours)}, not {_kind(theirs)}"]


def test_the_stream_has_claude_codes_event_shapes(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"test-model": {"input": 1.0, "output": 2.0}}))
    server.add(
        tool("read", {"path": "cart.py"}, text="I'll read the file first."),
        text("The cart holds items."),
    )
    done = theus(
        ["-p", "what does the cart hold?", "--output-format", "stream-json", "--verbose"],
        server,
        repo,
        THEUS_PRICES=str(prices),
    )
    assert done.returncode == 0, done.stderr
    ours = lines(done.stdout)
    for theirs in map(json.loads, CLAUDE_STREAM.read_text().splitlines()):
        key = (
            theirs["type"],
            theirs.get("subtype"),
            tuple(b["type"] for b in theirs.get("message", {}).get("content", [])),
        )
        same = [
            e
            for e in ours
            if (
                e["type"],
                e.get("subtype"),
                tuple(b["type"] for b in e.get("message", {}).get("content", [])),
            )
            == key
        ]
        assert same, f"no {key} event in {[e['type'] for e in ours]}"
        assert missing(theirs, same[0]) == [], key
    # What a `jq '.message.content[]'` pipeline written for claude -p reads.
    said = [b for e in ours if e["type"] == "assistant" for b in e["message"]["content"]]
    assert [b.get("text") or b["name"] for b in said] == [
        "I'll read the file first.",
        "read",
        "The cart holds items.",
    ]
    [result] = blocks(done.stdout, "tool_result")
    assert result["tool_use_id"] == said[1]["id"] and "class Cart" in result["content"]


def test_stream_json_input_is_a_conversation_one_result_per_turn(
    server: ScriptedServer, repo: Path
) -> None:
    server.add(text("It holds items."), text("In cents."))
    said = [
        {"type": "user", "message": {"role": "user", "content": "what is in the cart?"}},
        {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "text", "text": "and the prices?"}]},
        },
    ]
    done = theus(
        ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"],
        server,
        repo,
        stdin="".join(json.dumps(m) + "\n" for m in said),
    )
    assert done.returncode == 0, done.stderr
    results = [e for e in lines(done.stdout) if e["type"] == "result"]
    assert [r["result"] for r in results] == ["It holds items.", "In cents."]
    assert len({r["session_id"] for r in results}) == 1
    second = [texts_of(m) for m in server.requests[1]["messages"][1:]]
    assert [t[-1] for t in second] == ["what is in the cart?", "It holds items.", "and the prices?"]


def test_stream_json_input_refuses_what_it_cannot_read(server: ScriptedServer, repo: Path) -> None:
    server.add(text("It holds items."))
    stream = ["--input-format", "stream-json", "--output-format", "stream-json"]
    good = json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}})
    done = theus(["-p", *stream], server, repo, stdin=good + "\nnot json\n")
    assert done.returncode == 1 and "not JSON: 'not json'" in done.stderr
    assert [e["type"] for e in lines(done.stdout)][-1] == "system"  # the error, after a result
    for args, stdin in ((["-p", *stream], ""), (["-p", "--input-format", "stream-json"], good)):
        done = theus(args, server, repo, stdin=stdin)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert len(server.requests) == 1
