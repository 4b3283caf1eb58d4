"""The facts layer through the agent: S1 on the request, S1.5 on the answer, asked of the
scripted server's structured-output conversation with the real openai client, applied to the
real graph; every failure of theirs leaves the turn as it was."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from knowledge.memory import open_memory
from tests.conftest import configure, texts_of
from tests.scripted_server import Reply, ScriptedServer, error, text
from tests.theus.conftest import model_settings
from tests.theus.test_headless import lines, theus


def extraction(**found: Any) -> Reply:
    empty: dict[str, list[Any]] = {"entities": [], "relations": [], "facts": [], "corrections": []}
    return text(json.dumps({**empty, **found}))


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
    assert result["usage"]["extraction_tokens"] > 0  # S1 and S1.5 count in the usage
    s1, s15 = server.structured_requests  # one call each, no more
    assert s1["response_format"]["json_schema"]["strict"] is True
    assert "we moved the orders database" in json.dumps(s1["messages"])
    assert "Noted: orders on PostgreSQL." in json.dumps(s15["messages"])
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
    server.structured.extend([reply, reply])
    server.add(text("The answer."))
    done = theus(["-p", "we use PostgreSQL"], server, repo)
    assert done.returncode == 0 and done.stdout == "The answer.\n"
    assert "fact extraction (S1) skipped" in done.stderr
    assert json.loads(theus(["facts", "--json"], None, repo).stdout) == []


def test_a_slow_extraction_is_dropped_at_its_deadline(server: ScriptedServer, repo: Path) -> None:
    slow = extraction(
        entities=[{"label": "PostgreSQL", "type": "Technology", "layer": "UNIVERSAL"}]
    )
    slow.delay_s = 60.0  # far past any machine's start-up time: waiting for it shows
    server.structured.extend([slow, slow])
    server.add(text("The answer."))
    start = time.monotonic()
    done = theus(["-p", "we use PostgreSQL"], server, repo, THEUS_FACTS_TIMEOUT="0.5")
    assert done.returncode == 0 and done.stdout == "The answer.\n"
    assert time.monotonic() - start < 30.0  # not the minute the extraction would take
    assert "no answer within 0.5s" in done.stderr


def test_the_kill_switch_makes_no_extraction_call(server: ScriptedServer, repo: Path) -> None:
    server.add(text("The answer."))
    done = theus(["-p", "we use PostgreSQL"], server, repo, THEUS_NO_FACTS="1")
    assert done.returncode == 0 and server.structured_requests == []


async def test_what_was_said_is_in_the_next_requests_block(
    server: ScriptedServer, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from theus.agent.setup import make_agent

    configure(monkeypatch, no_embeddings=True)
    configure(monkeypatch, no_watch=True)
    memory = open_memory(repo, index_if_missing=True)
    agent = make_agent(memory, model_settings(server.url), None)
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
        await agent.run_turn("I package the shop with Poetry")
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
    model's answers and its extractions come from the scripted server, S1 and S1.5 run as
    in a session; then every declared check runs on the memory's facts layer."""
    from tests.conftest import write_tree
    from tests.knowledge.test_facts_specs import CHECKS
    from theus.agent.setup import make_agent

    configure(monkeypatch, no_embeddings=True)
    configure(monkeypatch, no_watch=True)
    spec = json.loads(path.read_text(encoding="utf-8"))
    turns = spec["turns"]
    by_text = {t["text"]: t for t in turns}

    def extract(body: dict[str, Any]) -> Reply:  # what the message it is asked about says
        asked = json.dumps(body["messages"], ensure_ascii=False)
        found = [
            t for said, t in by_text.items() if json.dumps(said, ensure_ascii=False)[1:-1] in asked
        ]
        reply = extraction(**found[0]["extraction"]) if found else extraction()
        if found and found[0]["speaker"] == "user":
            reply.delay_s = 0.3  # S1 answers after S1.5 is asked: applied first all the same
        return reply

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
            assert layer is not None and agent.facts is not None and agent.facts.failed == 0
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
