"""What the facts layer costs per turn (a benchmark, not a test).

    python bench/facts.py [--runs 5]

Plays the graph-quality scenarios of `tests/knowledge/facts_specs/` (their turns and the
extractions a model would return) through a real project and `FactsLayer`, and prints per
turn: the extraction request's tokens (prompt + schema, by the token counter `theus recall`
reports; the model's answer adds its own), the time to apply an extraction (graph, dedup,
corrections, save) and to build the block's facts lines. Model time is not in these figures:
it is whatever the configured server takes for one short structured call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from entrypoint.settings import apply as apply_settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from knowledge.core.token_count import count_tokens
from knowledge.facts import EXTRACTION_SCHEMA, FactsLayer, extraction_prompt, parse_extraction
from tests.conftest import indexed_project

SPECS = Path(__file__).resolve().parent.parent / "tests" / "knowledge" / "facts_specs"


def play(spec: dict[str, Any], workdir: Path) -> list[tuple[int, float, float]]:
    """(request tokens, apply ms, block ms) for each turn of one scenario."""
    project = indexed_project(workdir, spec.get("files") or {"README.md": "# empty\n"})
    layer = FactsLayer(project)
    schema_tokens = count_tokens(json.dumps(EXTRACTION_SCHEMA))
    out = []
    try:
        for turn in spec["turns"]:
            layer.cycle()
            messages = extraction_prompt(turn["speaker"], turn["text"], layer.known_labels())
            tokens = schema_tokens + sum(count_tokens(m["content"]) + 4 for m in messages)
            extraction = parse_extraction(json.dumps(turn["extraction"]))
            start = time.perf_counter()
            layer.apply(extraction, turn["text"], turn["speaker"])
            applied = time.perf_counter()
            layer.block_lines(turn["text"])
            out.append((tokens, (applied - start) * 1000, (time.perf_counter() - applied) * 1000))
    finally:
        project.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("THEUS_HOME", tempfile.mkdtemp(prefix="theus-bench-facts-"))
    apply_settings({}, os.environ)
    for path in sorted(SPECS.glob("*.json")):
        spec = json.loads(path.read_text(encoding="utf-8"))
        figures = [
            play(spec, Path(tempfile.mkdtemp(prefix="theus-facts-")) / "repo")
            for _ in range(args.runs)
        ]
        tokens = [t for t, _, _ in figures[0]]
        applies = [a for run in figures for _, a, _ in run]
        blocks = [b for run in figures for _, _, b in run]
        print(f"# {spec['name']}: {len(tokens)} turns, {args.runs} runs")
        print(
            f"  request tokens per turn   median {statistics.median(tokens):6.0f}   "
            f"max {max(tokens):6.0f}"
        )
        print(
            f"  apply per turn            median {statistics.median(applies):6.1f} ms   "
            f"max {max(applies):6.1f} ms"
        )
        print(
            f"  block lines per turn      median {statistics.median(blocks):6.2f} ms   "
            f"max {max(blocks):6.2f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
