"""The token ledger of `theus -p --output-format json` (`usage.ledger`): real processes, the
real openai client, the scripted server, whose usage counts each prompt exactly with the
tokenizer the estimator stands for (`prompt_count`). Its parts add up to what the server
counted, turn by turn; the block's parts are the <system-reminder> text the server received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from knowledge.core.token_count import count_tokens
from tests.conftest import texts_of
from tests.scripted_server import ScriptedServer, prompt_count, text, tool
from tests.theus.test_headless import index, lines, theus
from theus.agent.injection import REMINDER_TAIL
from theus.agent.loop import INSTRUCTIONS_HEAD
from theus.protocol import LEDGER_PARTS

EXAMPLES_HEAD = "> Similar past runs in this project"
# The local embedder on (the run history finds examples with it), in a time box no loaded
# machine misses (the model loads per process).
EMBEDDING = {"THEUS_NO_EMBEDDINGS": "", "THEUS_RECALL_DEADLINE_MS": "30000"}


def run(server: ScriptedServer, repo: Path, words: list[str], **env: str) -> dict[str, Any]:
    """One turn (`-p`, or `-c -p` to continue the last session): its result event."""
    done = theus([*words, "--output-format", "json", "--allow-edits"], server, repo, **env)
    assert done.returncode == 0, done.stderr
    (result,) = lines(done.stdout)
    return result


def reminders(body: dict[str, Any]) -> list[str]:
    """The <system-reminder> texts a request carried."""
    return [
        part
        for message in body["messages"]
        for part in texts_of(message)
        if part.startswith("<system-reminder>")
    ]


def sent(ledger: dict[str, int]) -> int:
    """The request's parts; the extraction calls are beside them."""
    assert set(ledger) == {*LEDGER_PARTS, "extraction"}
    return sum(ledger[part] for part in LEDGER_PARTS)


def test_the_ledger_adds_up_to_the_servers_count_turn_by_turn(
    server: ScriptedServer, repo: Path
) -> None:
    index(repo)
    (repo / "AGENTS.md").write_text("Run the tests with pytest before saying done.\n")
    turns = [
        (["-p", "where is the cart total computed?"], 2),
        (["-c", "-p", "and how is the price of an item found?"], 3),
        (["-c", "-p", "thanks!"], 1),
        (["-c", "-p", "add a docstring to Cart"], 2),
    ]
    server.add(tool("read", {"path": "cart.py"}), text("In cart.py: Cart.total sums prices."))
    server.add(
        tool("grep", {"pattern": "def price_of"}),
        tool("read", {"path": "pricing.py"}),
        text("pricing.price_of reads item['price']."),
    )
    server.add(text("You're welcome."))
    server.add(
        tool(
            "edit",
            {"path": "cart.py", "old_string": "class Cart:", "new_string": "class Cart:  # a cart"},
        ),
        text("Done."),
    )
    seen = 0
    for words, calls in turns:
        result = run(server, repo, words)
        bodies = server.requests[seen : seen + calls]
        seen += calls
        assert len(bodies) == calls and result["usage"]["model_calls"] == calls
        ledger = result["usage"]["ledger"]
        counted = sum(prompt_count(body) for body in bodies)
        assert result["usage"]["prompt_tokens"] == counted
        assert abs(sent(ledger) - counted) <= 0.02 * counted, (ledger, counted)
        # What each part is: the server's own view of the same requests.
        in_blocks = sum(count_tokens(r) for body in bodies for r in reminders(body))
        assert ledger["block"] + ledger["examples"] == in_blocks
        system_text = bodies[0]["messages"][0]["content"]
        assert "Run the tests with pytest" in system_text.partition(INSTRUCTIONS_HEAD)[2]
        assert ledger["instructions"] == calls * count_tokens(
            system_text[system_text.index(INSTRUCTIONS_HEAD) :]
        )
        tool_results = [m for body in bodies for m in body["messages"] if m["role"] == "tool"]
        assert ledger["tool_results"] == sum(count_tokens(m["content"]) for m in tool_results)
        assert ledger["request"] == calls * count_tokens(words[-1])
        assert ledger["system"] > 0 and ledger["tool_schemas"] > 0 and ledger["framing"] > 0
    assert reminders(server.requests[0])  # the first turn carried a block
    assert "# a cart" in (repo / "cart.py").read_text()
    # Small talk adds none; the earlier ones are sent again, and counted again.
    assert reminders(server.requests[5]) == reminders(server.requests[4])


def test_the_examples_are_counted_apart_from_the_rest_of_the_block(
    server: ScriptedServer, repo: Path
) -> None:
    index(repo)
    server.add(text("Added --quiet to the export command."))
    run(server, repo, ["-p", "add a --quiet flag to the cart's export command"], **EMBEDDING)
    server.add(text("Added --verbose."))
    result = run(
        server, repo, ["-p", "add a --verbose flag to the cart's export command"], **EMBEDDING
    )
    (reminder,) = reminders(server.requests[1])
    examples = reminder[reminder.index(EXAMPLES_HEAD) : -len(REMINDER_TAIL)]
    ledger = result["usage"]["ledger"]
    assert ledger["examples"] == count_tokens(examples) > 0
    assert ledger["block"] == count_tokens(reminder) - ledger["examples"] > 0
    assert sent(ledger) == prompt_count(server.requests[1])


def test_with_the_memory_off_the_block_and_examples_are_zero(
    server: ScriptedServer, repo: Path
) -> None:
    index(repo)
    off = {"THEUS_NO_KNOWLEDGE_INJECT": "1", "THEUS_NO_HISTORY": "1", "THEUS_NO_FACTS": "1"}
    server.add(text("Added --quiet."))
    run(server, repo, ["-p", "add a --quiet flag to the cart's export command"], **off)
    server.add(tool("read", {"path": "cart.py"}), text("Added --verbose."))
    result = run(server, repo, ["-p", "add a --verbose flag to the cart's export command"], **off)
    ledger = result["usage"]["ledger"]
    assert ledger["block"] == ledger["examples"] == ledger["extraction"] == 0
    assert ledger["tool_results"] > 0
    assert all(reminders(body) == [] for body in server.requests)
    assert sent(ledger) == result["usage"]["prompt_tokens"]


def test_extraction_is_reported_beside_the_request(server: ScriptedServer, repo: Path) -> None:
    server.add(text("Noted."))
    result = run(server, repo, ["-p", "we use PostgreSQL for the orders"])
    ledger = result["usage"]["ledger"]
    assert server.structured_requests  # the facts layer asked the model
    assert ledger["extraction"] == result["usage"]["extraction_tokens"] > 0
    assert sent(ledger) == result["usage"]["prompt_tokens"] == prompt_count(server.requests[0])


def test_stream_json_results_carry_the_ledger(server: ScriptedServer, repo: Path) -> None:
    server.add(tool("read", {"path": "cart.py"}), text("It sums prices."), text("Welcome."))
    asks = [
        '{"type": "user", "message": {"role": "user", "content": "what does the cart do?"}}',
        '{"type": "user", "message": {"role": "user", "content": "thanks!"}}',
    ]
    done = theus(
        ["-p", "--input-format", "stream-json", "--output-format", "stream-json"],
        server,
        repo,
        stdin="\n".join(asks) + "\n",
    )
    assert done.returncode == 0, done.stderr
    results = [event for event in lines(done.stdout) if event["type"] == "result"]
    assert len(results) == 2
    for result, calls in zip(results, (2, 3), strict=True):  # the run's usage so far
        usage = result["usage"]
        assert sent(usage["ledger"]) == usage["prompt_tokens"]
        assert usage["prompt_tokens"] == sum(prompt_count(b) for b in server.requests[:calls])
