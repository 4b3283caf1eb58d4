"""The facts layer through the agent: one extraction of the request and the answer together,
after the answer, for a request the gate says can carry a durable fact (none for a command),
asked of the scripted server's structured-output conversation with the real openai client,
applied to the real graph; every failure of it leaves the turn as it was."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from knowledge.memory import Memory, open_memory
from tests.conftest import configure, texts_of
from tests.scripted_server import Reply, ScriptedServer, error, text
from tests.theus.conftest import model_settings
from tests.theus.test_headless import lines, theus
from theus.agent.loop import Agent


def extraction(**found: Any) -> Reply:
    empty: dict[str, list[Any]] = {"entities": [], "relations": [], "facts": [], "corrections": []}
    return text(json.dumps({**empty, **found}))


def chat_agent(
    server: ScriptedServer, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Memory, Agent]:
    """The app's agent over `repo`'s memory (no embeddings, no watcher), talking to `server`."""
    from theus.agent.setup import make_agent

    configure(monkeypatch, no_embeddings=True, no_watch=True)
    memory = open_memory(repo, index_if_missing=True)
    return memory, make_agent(memory, model_settings(server.url), None)


def extraction_counts(repo: Path) -> dict[str, Any]:
    """`theus status --json`'s facts section, as another process reads it."""
    done = theus(["status", "--json"], None, repo)
    assert done.returncode == 0, done.stderr
    facts: dict[str, Any] = json.loads(done.stdout)["facts"]
    return facts


POSTGRES = extraction(
    entities=[{"label": "PostgreSQL", "type": "Technology", "layer": "UNIVERSAL"}],
    facts=[
        {
            "subject": "PostgreSQL",
            "text": "the orders database runs on PostgreSQL",
            "source": "user",
        }
    ],
)


def test_a_headless_run_keeps_what_the_user_said(server: ScriptedServer, repo: Path) -> None:
    server.structured.append(POSTGRES)
    server.add(text("Noted: orders on PostgreSQL."))
    done = theus(
        ["-p", "we moved the orders database to PostgreSQL", "--output-format", "json"],
        server,
        repo,
    )
    assert done.returncode == 0, done.stderr
    result = lines(done.stdout)[-1]
    assert result["usage"]["extraction_tokens"] > 0  # the extraction counts in the usage
    (asked,) = server.structured_requests  # one call, no more
    assert asked["response_format"]["json_schema"]["strict"] is True
    sent = json.dumps(asked["messages"])
    # The request and the answer in one call: made after the answer, which it holds.
    assert "we moved the orders database" in sent and "Noted: orders on PostgreSQL." in sent
    listed = json.loads(theus(["facts", "--json"], None, repo).stdout)
    assert [(f["subject"], f["text"], f["current"]) for f in listed] == [
        ("PostgreSQL", "the orders database runs on PostgreSQL", True)
    ]


@pytest.mark.parametrize(
    "reply",
    [text("not json at all"), error(500, "extractor down"), extraction(entities="nope")],
    ids=["garbage", "server-error", "wrong-shape"],
)
def test_a_failing_extraction_leaves_the_run_as_it_was(
    server: ScriptedServer, repo: Path, reply: Reply
) -> None:
    server.structured.append(reply)
    server.add(text("The answer."))
    done = theus(["-p", "we use PostgreSQL"], server, repo)
    assert done.returncode == 0 and done.stdout == "The answer.\n"
    assert done.stderr.count("fact extraction skipped") == 1, done.stderr
    assert json.loads(theus(["facts", "--json"], None, repo).stdout) == []


def test_a_slow_extraction_is_dropped_at_its_deadline(server: ScriptedServer, repo: Path) -> None:
    slow = extraction(
        entities=[{"label": "PostgreSQL", "type": "Technology", "layer": "UNIVERSAL"}]
    )
    slow.delay_s = 60.0  # far past any machine's start-up time: waiting for it shows
    server.structured.append(slow)
    server.add(text("The answer."))
    start = time.monotonic()
    done = theus(["-p", "we use PostgreSQL"], server, repo, THEUS_FACTS_TIMEOUT="0.5")
    assert done.returncode == 0 and done.stdout == "The answer.\n"
    assert time.monotonic() - start < 30.0  # not the minute the extraction would take
    assert "no answer within 0.5s" in done.stderr


def test_a_coding_request_makes_no_extraction_call(server: ScriptedServer, repo: Path) -> None:
    server.add(text("Fixed."))
    done = theus(["-p", "fix the typo in the README", "--output-format", "json"], server, repo)
    assert done.returncode == 0, done.stderr
    assert server.structured_requests == []
    assert lines(done.stdout)[-1]["usage"]["extraction_tokens"] == 0
    facts = extraction_counts(repo)
    assert (facts["not_asked"], facts["asked"], facts["failed"]) == (1, 0, 0)


def test_a_server_that_answers_no_json_is_warned_about_once(
    server: ScriptedServer, repo: Path
) -> None:
    """Learned with the server's capabilities: the next run does not ask it, nor warn."""
    server.structured.append(text("Sure! The user uses PostgreSQL."))
    server.add(text("Noted."), text("Noted again."))
    first = theus(["-p", "we use PostgreSQL"], server, repo)
    second = theus(["-p", "we also use Redis"], server, repo)
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert "not JSON" in first.stderr and "not asked again for a day" in first.stderr
    assert "fact extraction" not in second.stderr, second.stderr
    assert len(server.structured_requests) == 1
    facts = extraction_counts(repo)  # `theus status` says what the warning said once
    assert (facts["asked"], facts["failed"], facts["skipped"]) == (1, 1, 1)
    assert "not JSON" in facts["last_error"]


def test_the_facts_model_setting_sends_the_extraction_to_its_own_server(
    server: ScriptedServer, repo: Path
) -> None:
    with ScriptedServer(models=("small-model",)) as extractor:
        extractor.structured.append(POSTGRES)
        server.add(text("Noted."))
        done = theus(
            ["-p", "we moved the orders database to PostgreSQL"],
            server,
            repo,
            THEUS_FACTS_BASE_URL=extractor.url,
            THEUS_FACTS_MODEL="small-model",
        )
    assert done.returncode == 0, done.stderr
    assert server.structured_requests == [] and len(server.requests) == 1
    (asked,) = extractor.structured_requests
    assert asked["model"] == "small-model" and extractor.requests == []
    listed = json.loads(theus(["facts", "--json"], None, repo).stdout)
    assert [f["subject"] for f in listed] == ["PostgreSQL"]


async def test_a_server_refusing_response_format_is_asked_in_the_prompt_from_then_on(
    server: ScriptedServer, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory, agent = chat_agent(server, repo, monkeypatch)
    server.structured.append(error(400, "unsupported parameter: response_format"))
    # Without response_format the extraction is a chat request like the others.
    server.add(text("Noted."), POSTGRES, text("Noted too."), extraction())
    try:
        for request in ("we use PostgreSQL", "we also use Redis"):
            await agent.run_turn(request)
            assert agent.facts is not None
            await agent.facts.settle()
        assert agent.facts is not None and agent.facts.stats.failed == 0
    finally:
        memory.close()
        await agent.model.close()
    assert len(server.structured_requests) == 1  # refused once, then not sent again
    assert "we also use Redis" in json.dumps(server.requests[3]["messages"])
    assert memory.facts is not None and [v.subject for v in memory.facts.current()] == [
        "PostgreSQL"
    ]


def test_the_kill_switch_makes_no_extraction_call(server: ScriptedServer, repo: Path) -> None:
    server.add(text("The answer."))
    done = theus(["-p", "we use PostgreSQL"], server, repo, THEUS_NO_FACTS="1")
    assert done.returncode == 0 and server.structured_requests == []


async def test_what_was_said_is_in_the_next_requests_block(
    server: ScriptedServer, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory, agent = chat_agent(server, repo, monkeypatch)
    server.structured.append(
        extraction(
            entities=[{"label": "Poetry", "type": "Technology", "layer": "UNIVERSAL"}],
            facts=[
                {"subject": "Poetry", "text": "the shop is packaged with Poetry", "source": "user"}
            ],
        )
    )
    server.add(text("Good to know."), text("Run poetry add."))
    try:
        await agent.run_turn("we use Poetry to package the shop")
        assert agent.facts is not None
        await agent.facts.settle()
        await agent.run_turn("how should I add a dependency?")
        sent = [t for m in server.requests[1]["messages"] for t in texts_of(m)]
        block = next(t for t in sent if t.startswith("<system-reminder>"))
        assert "Facts from this conversation" in block and "packaged with Poetry" in block
    finally:
        if agent.facts is not None:
            await agent.facts.settle()
        memory.close()
        await agent.model.close()


def test_the_next_headless_run_recalls_what_the_last_one_was_told(
    server: ScriptedServer, repo: Path
) -> None:
    from tests.theus.test_headless import index

    index(repo)
    assert theus(["recall", "--json", "warm the snapshot"], None, repo).returncode == 0
    server.structured.append(POSTGRES)
    server.add(text("Noted."), text("PostgreSQL."))
    assert theus(["-p", "we moved the orders database to PostgreSQL"], server, repo).returncode == 0
    done = theus(["-p", "what runs the orders database?"], server, repo)
    assert done.returncode == 0, done.stderr
    sent = [t for m in server.requests[1]["messages"] for t in texts_of(m)]
    assert any(
        "orders database runs on PostgreSQL" in t for t in sent if t.startswith("<system-reminder>")
    )


SPECS = sorted((Path(__file__).resolve().parents[1] / "knowledge" / "facts_specs").glob("*.json"))


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
async def test_each_graph_quality_spec_holds_through_the_agent(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The specs' conversations played through the real pipeline: the agent's requests, the
    model's answers and its extractions come from the scripted server, one extraction of each
    exchange the gate lets through, as in a session; then every declared check runs on the
    memory's facts layer."""
    from tests.conftest import write_tree
    from tests.knowledge.test_facts_specs import CHECKS
    from theus.agent.setup import make_agent

    configure(monkeypatch, no_embeddings=True)
    configure(monkeypatch, no_watch=True)
    spec = json.loads(path.read_text(encoding="utf-8"))
    turns = spec["turns"]
    by_text = {t["text"]: t for t in turns}

    def extract(body: dict[str, Any]) -> Reply:  # what the exchange it is asked about says
        asked = json.dumps(body["messages"], ensure_ascii=False)
        found = [
            t for said, t in by_text.items() if json.dumps(said, ensure_ascii=False)[1:-1] in asked
        ]
        merged: dict[str, list[Any]] = {}
        for turn in found:  # the request's, then the answer's
            for name, items in turn["extraction"].items():
                merged.setdefault(name, []).extend(items)
        return extraction(**merged)

    root = write_tree(tmp_path / "repo", spec.get("files") or {"README.md": "# notes\n"})
    memory = open_memory(root, index_if_missing=True)
    with ScriptedServer() as server:
        server.structured.append(_repeating(extract))
        agent = make_agent(memory, model_settings(server.url), None)
        try:
            for i, turn in enumerate(turns):
                if turn["speaker"] != "user":
                    continue
                follows = turns[i + 1] if i + 1 < len(turns) else None
                server.add(
                    text(
                        follows["text"]
                        if follows and follows["speaker"] == "assistant"
                        else "Noted."
                    )
                )
                await agent.run_turn(turn["text"])
                assert agent.facts is not None
                await agent.facts.settle()
            layer = memory.facts
            assert layer is not None and agent.facts is not None and agent.facts.stats.failed == 0
            declared = [(kind, item) for kind, items in spec["checks"].items() for item in items]
            failures = [
                f"{kind} {item}: {problem}"
                for kind, item in declared
                if (problem := CHECKS[kind](layer, item)) is not None
            ]
            assert failures == [] and len(declared) >= 15
        finally:
            memory.close()
            await agent.model.close()


def _repeating(reply: Any) -> Any:
    """A structured-script item served for every extraction request."""

    def serve(body: dict[str, Any]) -> Reply:
        answer: Reply = reply(body)
        answer.repeat = True
        return answer

    return serve


def reminder_of(server: ScriptedServer, request: int) -> str:
    sent = [t for m in server.requests[request]["messages"] for t in texts_of(m)]
    return "\n".join(t for t in sent if t.startswith("<system-reminder>"))


def test_a_resumed_headless_run_gets_the_facts_its_conversation_named(
    server: ScriptedServer, repo: Path
) -> None:
    """`theus -c -p` is the next turn of the conversation: what was said in it comes back as
    the block's facts lines, as the app's next turn has them, though this process opened no
    facts layer; a new conversation gets the facts its request names, and only those."""
    from tests.theus.test_headless import index

    index(repo)
    server.structured.append(POSTGRES)
    server.add(text("Noted: orders on PostgreSQL."), text("Target it."), text("Ok."), text("Pg."))
    assert theus(["-p", "we moved the orders database to PostgreSQL"], server, repo).returncode == 0
    resumed = theus(["-c", "-p", "which engine should the cart migration target?"], server, repo)
    assert resumed.returncode == 0, resumed.stderr
    block = reminder_of(server, 1)
    assert "Facts from this conversation" in block
    assert "orders database runs on PostgreSQL" in block
    fresh = theus(["-p", "which engine should the cart migration target?"], server, repo)
    assert fresh.returncode == 0, fresh.stderr
    assert "Facts from this conversation" not in reminder_of(server, 2)
    named = theus(["-p", "is PostgreSQL tuned for the cart?"], server, repo)
    assert named.returncode == 0, named.stderr
    assert "orders database runs on PostgreSQL" in reminder_of(server, 3)
