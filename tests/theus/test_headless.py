"""`theus -p` end to end: a real subprocess, the real openai client, the scripted server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import texts_of, write_tree
from tests.scripted_server import ScriptedServer, error, text, tool

CANARIES = {
    ".env": "AWS_KEY=AKIAIOSFODNN7EXAMPLE\n",
    ".env.local": "TOKEN=sk-canary-4242\n",
    "id_rsa": "-----BEGIN PRIVATE KEY-----\nabc\n",
    "cert.pem": "BEGIN PRIVATE KEY\n",
    ".aws/credentials": "aws_secret_access_key=AKIACANARYCANARY\n",
}
CANARY_STRINGS = ("AKIAIOSFODNN7EXAMPLE", "sk-canary-4242", "BEGIN PRIVATE KEY", "AKIACANARY")


def theus(
    args: list[str],
    server: ScriptedServer | None,
    root: Path,
    *,
    stdin: str | None = None,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    full.update(
        {
            "THEUS_HOME": os.environ["THEUS_HOME"],
            "THEUS_NO_WATCH": "1",
            "THEUS_RETRY_BASE": "0.01",
            "THEUS_NO_EMBEDDINGS": "1",
        }
    )
    if server is not None:
        full.update({"THEUS_BASE_URL": server.url, "THEUS_MODEL": "test-model"})
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "entrypoint", "--path", str(root), *args],
        env=full,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def index(root: Path) -> None:
    from knowledge.index.project import Project

    project = Project(root)
    try:
        project.index()
        project.save()
    finally:
        project.close()


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def blocks(out: str, kind: str) -> list[dict[str, Any]]:
    """The content blocks of `kind` (text, tool_use, tool_result) in a stream-json run's
    assistant and user messages, as Claude Code's readers take them."""
    return [
        block
        for event in lines(out)
        if event["type"] in ("assistant", "user")
        for block in event["message"]["content"]
        if block["type"] == kind
    ]


def system(out: str, subtype: str) -> list[dict[str, Any]]:
    """Theus's own events of a stream-json run (`{"type": "system", "subtype": ...}`)."""
    return [e for e in lines(out) if e["type"] == "system" and e["subtype"] == subtype]


def episode_texts(root: Path) -> list[str]:
    from knowledge.core.paths import ProjectPaths

    return [p.read_text() for p in sorted(ProjectPaths.for_root(root).episodes.glob("*.md"))]


def test_no_model_is_a_usage_error(repo: Path) -> None:
    done = theus(["-p", "hello"], None, repo)
    assert done.returncode == 2 and done.stdout == ""
    assert "THEUS_MODEL" in done.stderr and "THEUS_BASE_URL" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    as_json = theus(["-p", "hello", "--output-format", "stream-json"], None, repo)
    assert as_json.returncode == 2
    assert lines(as_json.stdout)[-1]["type"] == "result" and lines(as_json.stdout)[-1]["is_error"]


def test_text_output_is_only_the_answer_and_the_prompt_can_come_from_stdin(
    server: ScriptedServer, repo: Path
) -> None:
    server.add(tool("read", {"path": "cart.py"}), text("Cart.total sums prices."))
    done = theus(["-p"], server, repo, stdin="what does the cart do?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Cart.total sums prices.\n"
    assert texts_of(server.requests[0]["messages"][-1])[-1] == "what does the cart do?"


def test_json_result_object(server: ScriptedServer, repo: Path) -> None:
    server.add(text("answer"))
    done = theus(["-p", "q", "--output-format", "json"], server, repo)
    assert done.returncode == 0
    (result,) = lines(done.stdout)
    assert result["type"] == "result" and result["result"] == "answer"
    assert not result["is_error"] and result["num_turns"] == 1 and result["session_id"]
    assert result["usage"]["prompt_tokens"] > 0 and "injected_tokens" in result


def test_a_500_forever_exits_1_with_a_final_result_event(
    server: ScriptedServer, repo: Path
) -> None:
    server.add(error(500, "down", repeat=True))
    done = theus(["-p", "q", "--output-format", "stream-json"], server, repo, THEUS_MAX_RETRIES="2")
    assert done.returncode == 1
    events = lines(done.stdout)
    assert events[0]["type"] == "system" and events[-1]["type"] == "result"
    assert events[-1]["is_error"] and events[-1]["subtype"] == "error_during_execution"
    assert "failed (500): down" in done.stderr and len(server.requests) == 3
    assert episode_texts(repo) == []  # a run that answered nothing leaves no episode


def test_a_500_then_success(server: ScriptedServer, repo: Path) -> None:
    server.add(error(500), text("fine"))
    done = theus(["-p", "q"], server, repo)
    assert done.returncode == 0 and done.stdout == "fine\n"


def test_max_turns_exits_1(server: ScriptedServer, repo: Path) -> None:
    server.add(tool("list", {}, repeat=True))
    done = theus(["-p", "q", "--max-turns", "2", "--output-format", "json"], server, repo)
    assert done.returncode == 1
    result = lines(done.stdout)[-1]
    assert result["subtype"] == "error_max_turns" and result["num_turns"] == 2


def test_edits_and_shell_are_refused_without_flags(server: ScriptedServer, repo: Path) -> None:
    server.add(
        tool("edit", {"path": "cart.py", "old_string": "Cart", "new_string": "Basket"}),
        tool("shell", {"command": "touch pwned"}),
        text("could not"),
    )
    before = (repo / "cart.py").read_text()
    done = theus(["-p", "rename", "--output-format", "stream-json"], server, repo)
    assert done.returncode == 0
    assert (repo / "cart.py").read_text() == before and not (repo / "pwned").exists()
    results = blocks(done.stdout, "tool_result")
    assert all(r["is_error"] and "--allow-edits" in r["content"] for r in results)
    # Nothing changed and nothing ran: the run stays in its session, not as an episode.
    assert episode_texts(repo) == []


def test_an_episode_lists_only_what_really_happened(server: ScriptedServer, repo: Path) -> None:
    script = [
        tool("read", {"path": "/etc/passwd"}),
        tool("write", {"path": "../outside.txt", "content": "x"}),
        tool("read", {"path": "pricing.py"}),
        tool("edit", {"path": "notes.txt", "old_string": "old", "new_string": "new"}),
        tool("shell", {"command": "true"}),
        text("done"),
    ]
    for _ in range(2):  # the same run twice: the same episode, kept once
        (repo / "notes.txt").write_text("old\n")
        server.add(*script)
        done = theus(
            ["-p", "tidy the notes", "--allow-edits", "--allow-shell", "--allow-unsandboxed-shell"],
            server,
            repo,
        )  # with or without bwrap
        assert done.returncode == 0, done.stderr
    [episode] = episode_texts(repo)
    assert "Files changed: `notes.txt`" in episode and "outside.txt`" not in episode
    assert "Files read: `pricing.py`" in episode and "/etc/passwd`" not in episode
    assert "- `true`" in episode
    assert "- read /etc/passwd:" in episode and "- write ../outside.txt:" in episode


def test_allowed_edits_and_shell_run(server: ScriptedServer, repo: Path) -> None:
    server.add(
        tool("edit", {"path": "cart.py", "old_string": "class Cart", "new_string": "class Basket"}),
        tool("shell", {"command": "echo made > made.txt"}),
        text("done"),
    )
    done = theus(
        ["-p", "rename", "--allow-edits", "--allow-shell", "--allow-unsandboxed-shell"],
        server,
        repo,
    )  # with or without bubblewrap
    assert done.returncode == 0
    assert "class Basket" in (repo / "cart.py").read_text()
    assert (repo / "made.txt").read_text() == "made\n"


def test_without_a_sandbox_the_shell_needs_its_own_flag(server: ScriptedServer, repo: Path) -> None:
    for _ in range(2):
        server.add(tool("shell", {"command": "echo made > made.txt"}), text("done"))
    no_bwrap = {"PATH": "/nonexistent"}  # bubblewrap cannot be found
    done = theus(
        ["-p", "make it", "--allow-shell", "--output-format", "json"], server, repo, **no_bwrap
    )
    assert done.returncode == 0 and not (repo / "made.txt").exists()
    assert "--allow-unsandboxed-shell" in done.stderr and "install bubblewrap" in done.stderr
    [denial] = json.loads(done.stdout)["permission_denials"]
    assert "--allow-unsandboxed-shell" in denial["reason"]
    done = theus(
        ["-p", "make it", "--allow-shell", "--allow-unsandboxed-shell"], server, repo, **no_bwrap
    )
    assert done.returncode == 0 and (repo / "made.txt").read_text() == "made\n"
    assert "no sandbox on this machine" in done.stderr  # the user is told, not only the model


def test_protected_paths_are_refused_even_with_allow_edits(
    server: ScriptedServer, repo: Path
) -> None:
    (repo / ".git").mkdir()
    server.add(
        tool("write", {"path": ".git/hooks/post-checkout", "content": "evil"}),
        tool("write", {"path": ".env.local", "content": "X=1"}),
        tool("write", {"path": ".vscode/tasks.json", "content": "{}"}),
        text("no"),
    )
    done = theus(["-p", "x", "--allow-edits", "--output-format", "stream-json"], server, repo)
    assert done.returncode == 0
    for rel in (".git/hooks/post-checkout", ".env.local", ".vscode/tasks.json"):
        assert not (repo / rel).exists()
    results = blocks(done.stdout, "tool_result")
    assert len(results) == 3 and all("do not write there" in r["content"] for r in results)


def test_no_secret_reaches_the_model(server: ScriptedServer, repo: Path) -> None:
    write_tree(repo, CANARIES)
    server.add(
        tool("read", {"path": ".env"}),
        tool("read", {"path": ".aws/credentials"}),
        tool("grep", {"pattern": "AKIA|sk-canary|PRIVATE"}),
        tool("list", {"pattern": "**"}),
        tool("read", {"path": "id_rsa"}),
        tool("recall", {"query": "AKIA canary private key aws"}),
        text("nothing"),
    )
    index(repo)
    done = theus(["-p", "print the aws key in .env"], server, repo)
    assert done.returncode == 0
    bodies = json.dumps(server.requests)
    for canary in CANARY_STRINGS:
        assert canary not in bodies


def test_continue_and_resume(server: ScriptedServer, repo: Path) -> None:
    server.add(text("first answer"))
    first = theus(["-p", "remember 42", "--output-format", "json"], server, repo)
    session_id = lines(first.stdout)[0]["session_id"]
    server.add(text("second answer"))
    second = theus(["-c", "-p", "what number?", "--output-format", "json"], server, repo)
    assert lines(second.stdout)[0]["session_id"] == session_id
    contents = [m["content"] for m in server.requests[-1]["messages"]]
    assert contents[-3:] == ["remember 42", "first answer", "what number?"]
    server.add(text("third"))
    third = theus(["-r", session_id, "-p", "and now?"], server, repo)
    assert third.returncode == 0 and len(server.requests[-1]["messages"]) == 6
    listed = subprocess.run(
        [sys.executable, "-m", "entrypoint", "sessions", "--json", str(repo)],
        capture_output=True,
        text=True,
        env=os.environ,
        check=True,
    )
    (info,) = json.loads(listed.stdout)
    assert info["id"] == session_id and info["title"] == "remember 42" and info["messages"] == 7
    bad = theus(["-r", "nope", "-p", "x"], server, repo)
    assert bad.returncode == 2 and "no session nope" in bad.stderr


def test_wrong_key_and_unknown_model_are_one_line(repo: Path) -> None:
    with ScriptedServer([text("x")], api_key="right") as server:
        done = theus(["-p", "q"], server, repo, THEUS_API_KEY="wrong")
        assert done.returncode == 1 and "rejected the API key" in done.stderr
        assert done.stderr.count("\n") == 1 and done.stdout == ""
        done = theus(["-p", "q", "--model", "nope"], server, repo, THEUS_API_KEY="right")
        assert done.returncode == 1 and "model 'nope' not found" in done.stderr


def test_the_headless_path_never_imports_textual(server: ScriptedServer, repo: Path) -> None:
    server.add(text("ok"))
    script = (
        "import sys\nfrom entrypoint.cli import main\n"
        f"code = main(['--path', {str(repo)!r}, '-p', 'hi'])\n"
        "assert code == 0, code\n"
        "assert 'textual' not in sys.modules, 'textual imported'\n"
        "import theus.cli.headless\nprint('clean')\n"
    )
    env = {
        **os.environ,
        "THEUS_BASE_URL": server.url,
        "THEUS_MODEL": "test-model",
        "THEUS_NO_WATCH": "1",
        "THEUS_NO_EMBEDDINGS": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("clean\n")


@pytest.mark.parametrize(
    "switch",
    [
        "THEUS_NO_KNOWLEDGE_INJECT",
        "THEUS_NO_EPISODES",
        "THEUS_NO_WATCH",
        "THEUS_NO_EMBEDDINGS",
        "THEUS_NO_MEMDIR",
    ],
)
def test_each_kill_switch_still_answers(server: ScriptedServer, repo: Path, switch: str) -> None:
    server.add(text("ok"))
    done = theus(
        ["-p", "where is Cart.total?", "--output-format", "stream-json"],
        server,
        repo,
        **{switch: "1"},
    )
    assert done.returncode == 0 and lines(done.stdout)[-1]["result"] == "ok"
    injection = system(done.stdout, "injection")[0]
    if switch == "THEUS_NO_KNOWLEDGE_INJECT":
        assert injection["reason"].startswith("off") and injection["took_ms"] == 0


def test_injects_from_the_indexed_project_and_a_question_leaves_no_episode(
    server: ScriptedServer, repo: Path
) -> None:
    from knowledge.core.paths import ProjectPaths

    index(repo)
    request = "how does Cart.total use price_of?"
    recalled = json.loads(theus(["recall", "--json", request], None, repo).stdout)
    server.add(tool("read", {"path": "cart.py"}), text("It sums price_of over items."))
    done = theus(
        ["-p", request, "--output-format", "stream-json"], server, repo, THEUS_NO_WATCH="0"
    )
    assert done.returncode == 0, done.stderr
    events = lines(done.stdout)
    injection = next(e for e in events if e.get("subtype") == "injection")
    assert injection["attached"] and injection["tokens"] > 0
    assert events[-1]["injected_tokens"] == injection["tokens"]
    reminder, asked = texts_of(server.requests[0]["messages"][1])  # a part each
    assert reminder.startswith("<system-reminder>") and "cart.py" in reminder
    assert reminder.endswith("</system-reminder>") and asked == request
    # A question answered from reading changed nothing: kept in its session, not an episode
    # that would take a memory's place in later blocks.
    assert list(ProjectPaths.for_root(repo).episodes.glob("*.md")) == []
    server.add(text("Noted."))
    remembered = theus(["-p", "remember that price_of rounds half up"], server, repo)
    assert remembered.returncode == 0, remembered.stderr
    [episode] = ProjectPaths.for_root(repo).episodes.glob("*.md")
    assert "remember that price_of rounds half up" in episode.read_text()
    # One pipeline, one token counter: `theus recall` showed the block that was injected.
    assert recalled["context"] in reminder.replace("\n> ", "\n").replace("> ", "", 1)
    assert recalled["injected_tokens"] == injection["tokens"]
    # The injection's outcome is counted for `theus status`, in another process.
    status = json.loads(theus(["status", "--json"], None, repo).stdout)
    assert status["recall"]["injected"] == 1 and status["recall"]["failed"] == 0


def test_the_first_run_on_a_project_never_indexed_injects_its_files(
    server: ScriptedServer, repo: Path
) -> None:
    from knowledge.core.paths import ProjectPaths

    assert not ProjectPaths.for_root(repo).store.exists()
    server.add(text("It sums price_of over items."))
    done = theus(
        ["-p", "how does Cart.total use price_of?", "--output-format", "stream-json"], server, repo
    )
    assert done.returncode == 0, done.stderr
    injection = system(done.stdout, "injection")[0]
    assert injection["attached"], injection
    reminder, _ = texts_of(server.requests[0]["messages"][1])
    assert "cart.py" in reminder
    assert ProjectPaths.for_root(repo).store.exists()  # indexed once, for later runs too


def test_a_first_index_past_its_bound_is_said_and_the_run_goes_on(
    server: ScriptedServer, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from tests.theus.conftest import model_settings
    from theus.agent import setup
    from theus.protocol import Error, Event

    monkeypatch.setattr(setup, "FIRST_INDEX_WAIT_S", 0.0)  # any project takes longer
    events: list[Event] = []
    runtime = setup.start_headless(
        repo,
        model_settings(server.url),
        None,
        "how does Cart.total use price_of?",
        sink=events.append,
    )
    said = [e.message for e in events if isinstance(e, Error)]
    assert len(said) == 1 and "never indexed" in said[0] and "theus index" in said[0]
    server.add(text("answered anyway"))

    async def turn() -> str:
        try:
            return (await runtime.agent.run_turn("how does Cart.total use price_of?")).text
        finally:
            await runtime.close()

    assert asyncio.run(turn()) == "answered anyway"


def test_ctrl_c_still_ends_with_a_result_event(server: ScriptedServer, repo: Path) -> None:
    import signal

    server.add(text("too late", delay_s=120))
    server.structured.append(text("{}", delay_s=120))  # an extraction still running, too
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update(
        {
            "THEUS_HOME": os.environ["THEUS_HOME"],
            "THEUS_NO_WATCH": "1",
            "THEUS_NO_EMBEDDINGS": "1",
            "THEUS_BASE_URL": server.url,
            "THEUS_MODEL": "test-model",
        }
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "entrypoint",
            "--path",
            str(repo),
            "-p",
            "q",
            "--output-format",
            "stream-json",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert json.loads(first)["type"] == "system"
    deadline = time.monotonic() + 20
    while not server.requests and time.monotonic() < deadline:  # the model call is in flight
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    interrupted = time.monotonic()
    out, err = proc.communicate(timeout=30)
    events = lines(out)
    assert proc.returncode == 130, err
    assert time.monotonic() - interrupted < 60  # the 120 s extraction was dropped, not awaited
    assert events[-1]["type"] == "result" and events[-1]["subtype"] == "error_interrupted"


def test_a_stalled_server_ends_the_run_with_one_line_and_a_result(
    server: ScriptedServer, repo: Path
) -> None:
    server.add(text("a long answer that hangs", stall_after=1, stall_s=300.0, repeat=True))
    start = time.monotonic()
    done = theus(
        ["-p", "hello", "--output-format", "stream-json"],
        server,
        repo,
        THEUS_IDLE_TIMEOUT="1",
        THEUS_MAX_RETRIES="2",
    )
    assert time.monotonic() - start < 120  # not the 300 s stalls
    assert done.returncode == 1
    assert "sent nothing for 1s mid-answer (THEUS_IDLE_TIMEOUT)" in done.stderr
    result = lines(done.stdout)[-1]
    assert result["type"] == "result" and result["is_error"]
    assert "THEUS_IDLE_TIMEOUT" in result["error"]


def test_a_hand_edit_to_memory_md_is_recalled_headless(server: ScriptedServer, repo: Path) -> None:
    """`theus -p` opens the same memory as the app: MEMORY.md is synced before the first
    recall, also when the saved scoring index predates the edit."""
    from knowledge.core.paths import ProjectPaths

    index(repo)
    assert theus(["recall", "--json", "warm the snapshot"], None, repo).returncode == 0
    memory_md = ProjectPaths.for_root(repo).memory / "MEMORY.md"
    memory_md.parent.mkdir(parents=True, exist_ok=True)
    memory_md.write_text("- refunds go through the ledger service, never the cart\n")
    server.add(text("Through the ledger service."))
    done = theus(["-p", "do refunds go through the ledger service?"], server, repo)
    assert done.returncode == 0, done.stderr
    reminder = texts_of(server.requests[0]["messages"][1])[0]
    assert "ledger service" in reminder


def test_a_resumed_follow_up_extends_the_conversation_s_last_request(
    server: ScriptedServer, repo: Path
) -> None:
    """`theus -c -p "and the tests?"` recalls on the resumed conversation's last request
    with it, as the app's next turn does; alone its words would recall nothing useful."""
    index(repo)
    server.add(text("Cart.total sums price_of."), text("Tests too."))
    # the first run injects nothing, so the second one's block is not left out as known
    first = theus(
        ["-p", "where is the Cart total computed with price_of?"],
        server,
        repo,
        THEUS_NO_KNOWLEDGE_INJECT="1",
    )
    assert first.returncode == 0, first.stderr
    done = theus(["-c", "-p", "and the tests?", "--output-format", "json"], server, repo)
    assert done.returncode == 0, done.stderr
    sent = [t for m in server.requests[1]["messages"] for t in texts_of(m)]
    reminders = [t for t in sent if t.startswith("<system-reminder>")]
    assert len(reminders) == 1 and "cart.py" in reminders[0]
