"""What the facts layer costs per turn (a benchmark, not a test).

    python bench/facts.py [--runs 5]
    python bench/facts.py --session

Plays the graph-quality scenarios of `tests/knowledge/facts_specs/` (their turns and the
extractions a model would return) through a real project and `FactsLayer`, and prints per
turn: the extraction request's tokens (prompt + schema, by the token counter `theus recall`
reports; the model's answer adds its own), the time to apply an extraction (graph, dedup,
corrections, save) and to build the block's facts lines. Model time is not in these figures:
it is whatever the configured server takes for one short structured call.

`--session` plays scripted sessions instead (a coding session with a few facts and a
correction among its requests, and the specs' conversations) through the real agent against
the scripted server, and prints per turn the extraction requests it made and their prompt
tokens (same counter), with each session's totals. It uses only what every version of the
agent has, and measures the agent it imports: run it with `PYTHONPATH=.` from a checkout to
measure that checkout (one of an earlier commit gives the figures before a change).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from entrypoint.settings import apply as apply_settings
from knowledge.core.token_count import count_tokens
from knowledge.facts.extraction import EXTRACTION_SCHEMA, extraction_prompt, parse_extraction
from knowledge.facts.layer import FactsLayer
from tests.conftest import indexed_project

SPECS = Path(__file__).resolve().parent.parent / "tests" / "knowledge" / "facts_specs"
# (request, answer): coding requests, small talk, facts and a correction, as a session goes.
CODING_SESSION = [
    ("we use PostgreSQL for the orders database", "Noted: orders on PostgreSQL."),
    ("fix the typo in the README", "Fixed the typo in README.md."),
    ("add a test for the parser", "Added tests/test_parser.py with two cases."),
    ("why does the build fail on python 3.12?", "distutils was removed in 3.12."),
    ("rename Cart.total to Cart.sum everywhere", "Renamed it in cart.py and two callers."),
    ("thanks!", "You're welcome."),
    ("I prefer short answers", "Understood."),
    ("where is the config loaded?", "In config.py, load_config()."),
    ("actually it's MySQL, not PostgreSQL", "Got it: orders on MySQL."),
    ("run the tests", "All 42 tests pass."),
    ("remember that staging is staging.acme.dev", "I'll keep that in mind."),
    ("make the error message clearer", "Reworded the message in errors.py."),
]


def play(spec: dict[str, Any], workdir: Path) -> list[tuple[int | None, float, float]]:
    """(request tokens, apply ms, block ms) for each turn of one scenario; the tokens of the
    one request asked of a user's turn and the reply after it (None for the reply)."""
    project = indexed_project(workdir, spec.get("files") or {"README.md": "# empty\n"})
    layer = FactsLayer(project)
    out: list[tuple[int | None, float, float]] = []
    turns = spec["turns"]
    try:
        for i, turn in enumerate(turns):
            layer.cycle()
            tokens = None
            if turn["speaker"] == "user":
                after = turns[i + 1] if i + 1 < len(turns) else None
                answer = after["text"] if after and after["speaker"] == "assistant" else ""
                tokens = prompt_tokens(
                    extraction_prompt(turn["text"], answer, layer.known_labels())
                )
            extraction = parse_extraction(json.dumps(turn["extraction"]))
            start = time.perf_counter()
            layer.apply(extraction, turn["text"], turn["speaker"])
            applied = time.perf_counter()
            layer.block_lines(turn["text"])
            out.append((tokens, (applied - start) * 1000, (time.perf_counter() - applied) * 1000))
    finally:
        project.close()
    return out


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """An extraction request's prompt tokens: its messages and its schema."""
    return count_tokens(json.dumps(EXTRACTION_SCHEMA)) + sum(
        count_tokens(str(m["content"])) + 4 for m in messages
    )


def sessions() -> list[tuple[str, list[tuple[str, str]], dict[str, Any]]]:
    """(name, [(request, answer)], what a model extracts from each text said)."""
    played: list[tuple[str, list[tuple[str, str]], dict[str, Any]]] = [
        ("coding session", CODING_SESSION, {})
    ]
    for path in sorted(SPECS.glob("*.json")):
        spec = json.loads(path.read_text(encoding="utf-8"))
        turns, exchanges = spec["turns"], []
        for i, turn in enumerate(turns):
            if turn["speaker"] == "user":
                after = turns[i + 1] if i + 1 < len(turns) else None
                answer = after["text"] if after and after["speaker"] == "assistant" else "Noted."
                exchanges.append((turn["text"], answer))
        played.append((spec["name"], exchanges, {t["text"]: t["extraction"] for t in turns}))
    return played


async def play_session(
    exchanges: list[tuple[str, str]], extractions: dict[str, Any], workdir: Path
) -> list[tuple[int, int]]:
    """(extraction requests, their prompt tokens) for each turn, through the real agent."""
    from knowledge.memory import open_memory
    from tests.conftest import write_tree
    from tests.scripted_server import Reply, ScriptedServer, text
    from tests.theus.conftest import model_settings
    from theus.agent.setup import make_agent

    def extract(body: dict[str, Any]) -> Reply:  # what the texts it is asked about say
        asked = json.dumps(body["messages"], ensure_ascii=False)
        merged: dict[str, list[Any]] = {
            "entities": [],
            "relations": [],
            "facts": [],
            "corrections": [],
        }
        for said, found in extractions.items():
            if json.dumps(said, ensure_ascii=False)[1:-1] in asked:
                for name, items in found.items():
                    merged[name].extend(items)
        return Reply(text=json.dumps(merged), repeat=True)

    root = write_tree(workdir, {"README.md": "# shop\n", "cart.py": "class Cart: ...\n"})
    memory = open_memory(root, index_if_missing=True)
    out = []
    with ScriptedServer() as server:
        server.structured.append(extract)
        agent = make_agent(memory, model_settings(server.url), None)
        try:
            for request, answer in exchanges:
                seen = len(server.structured_requests)
                server.add(text(answer))
                await agent.run_turn(request)
                assert agent.facts is not None
                await agent.facts.settle()
                asked = server.structured_requests[seen:]
                out.append((len(asked), sum(prompt_tokens(b["messages"]) for b in asked)))
        finally:
            memory.close()
            await agent.model.close()
    return out


def main_session() -> int:
    for name, exchanges, extractions in sessions():
        workdir = Path(tempfile.mkdtemp(prefix="theus-facts-session-")) / "repo"
        figures = asyncio.run(play_session(exchanges, extractions, workdir))
        print(f"# {name}: {len(exchanges)} turns")
        for (request, _), (calls, tokens) in zip(exchanges, figures, strict=True):
            print(f"  {calls} requests {tokens:6d} tokens   {request[:60]}")
        calls = sum(c for c, _ in figures)
        tokens = sum(t for _, t in figures)
        print(f"  total: {calls} extraction requests, {tokens} prompt tokens")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--session", action="store_true", help="scripted sessions, per turn")
    args = parser.parse_args()
    os.environ.setdefault("THEUS_HOME", tempfile.mkdtemp(prefix="theus-bench-facts-"))
    if args.session:
        os.environ.update({"THEUS_NO_EMBEDDINGS": "1", "THEUS_NO_WATCH": "1"})
    apply_settings({}, os.environ)
    if args.session:
        return main_session()
    for path in sorted(SPECS.glob("*.json")):
        spec = json.loads(path.read_text(encoding="utf-8"))
        figures = [
            play(spec, Path(tempfile.mkdtemp(prefix="theus-facts-")) / "repo")
            for _ in range(args.runs)
        ]
        tokens = [t for t, _, _ in figures[0] if t is not None]
        applies = [a for run in figures for _, a, _ in run]
        blocks = [b for run in figures for _, _, b in run]
        print(f"# {spec['name']}: {len(figures[0])} turns, {args.runs} runs")
        print(
            f"  request tokens per exchange median {statistics.median(tokens):6.0f}   "
            f"max {max(tokens):6.0f}"
        )
        print(
            f"  apply per turn              median {statistics.median(applies):6.1f} ms   "
            f"max {max(applies):6.1f} ms"
        )
        print(
            f"  block lines per turn        median {statistics.median(blocks):6.2f} ms   "
            f"max {max(blocks):6.2f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
