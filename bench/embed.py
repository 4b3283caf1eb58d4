"""Local embedder throughput: median ms per short query and snippets/s for batches.

    python bench/embed.py [--threads N] [--runs R]

Queries are embedded one at a time (the recall path); snippets in batches of code-sized texts
(the background indexing path, where threads=1 is what Theus uses).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import tokenizers

from entrypoint.settings import apply as apply_settings
from knowledge.embed.local import LocalEmbedder, default_tokenizer_path

QUERIES = [
    "how are tools registered",
    "where is the cart total computed",
    "retry logic for the http client",
    "what happens when the session expires",
    "parse the config file",
]

# What the index embeds per node: a signature line plus a one-line summary (~40 word pieces)...
SHORT_SNIPPET = (
    "src/app/{name}.py: def {name}(registry, item) -> Result — registers item; imports models.py"
)
# ...and a whole small function (~100 word pieces), the expensive end.
LONG_SNIPPET = (
    "def {name}(registry: Registry, item: Item, *, strict: bool = False) -> Result:\n"
    '    """Register {name} with the registry; raises DuplicateError when strict."""\n'
    "    if strict and item.key in registry:\n"
    "        raise DuplicateError(item.key)\n"
    "    registry[item.key] = item\n"
    "    return Result(ok=True, key=item.key, total=sum(p.price for p in item.parts))\n"
)


def bench_queries(embedder: LocalEmbedder, runs: int) -> float:
    timings = []
    for _ in range(runs):
        for query in QUERIES:
            started = time.perf_counter()
            embedder.embed([query])
            timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def bench_snippets(embedder: LocalEmbedder, template: str, runs: int, count: int) -> float:
    snippets = [template.format(name=f"handler_{i}") for i in range(count)]
    rates = []
    for _ in range(runs):
        started = time.perf_counter()
        embedder.embed(snippets)
        rates.append(count / (time.perf_counter() - started))
    return statistics.median(rates)


def main() -> None:
    apply_settings({}, os.environ)  # as `theus` does at start
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--snippets", type=int, default=128)
    args = parser.parse_args()
    tokenizer = tokenizers.Tokenizer.from_file(str(default_tokenizer_path()))
    tokenizer.no_padding()  # the shipped file pads to 128
    for name, template in (("short", SHORT_SNIPPET), ("long", LONG_SNIPPET)):
        tokens = len(tokenizer.encode(template.format(name="handler_0")).ids)
        print(f"{name} snippet: {tokens} word pieces")
    print(f"medians of {args.runs} runs; batches of {args.snippets} snippets")

    for threads in (1, None):
        embedder = LocalEmbedder(threads=threads)
        started = time.perf_counter()
        embedder.load()
        load_ms = (time.perf_counter() - started) * 1000
        embedder.embed(QUERIES)  # warm-up: first runs allocate arenas
        query_ms = bench_queries(embedder, args.runs * 10)
        short = bench_snippets(embedder, SHORT_SNIPPET, args.runs, args.snippets)
        long = bench_snippets(embedder, LONG_SNIPPET, args.runs, args.snippets)
        label = "threads=1" if threads == 1 else "threads=all"
        print(
            f"{label:12} load {load_ms:4.0f} ms | query {query_ms:5.2f} ms | "
            f"short snippets {short:5.1f}/s | long snippets {long:5.1f}/s"
        )


if __name__ == "__main__":
    main()
