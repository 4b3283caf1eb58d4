"""`theus recall`: what the project's graph knows about a request, and the block it would inject."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from theus.service.command_line import add_path_option, command_root, err, print_json
from theus.service.command_line import console as console_for
from theus.service.project import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from knowledge.memory.context import ContextBlock
    from knowledge.recall.recaller import Recall

WARM_BUDGET_S = 2.0  # reading file contents for the content index, once per CLI call


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "recall",
        help="recall the files and symbols related to a request",
        description="Rank the project's files, symbols and memories for QUERY and show the "
        "context block Theus would inject before a model call. Indexes the project first if "
        "it has no index yet.",
    )
    p.add_argument("query", nargs="*", metavar="QUERY", help="the request (quotes optional)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--top", type=int, default=10, metavar="K", help="results to show (10)")
    add_path_option(p)
    p.add_argument(
        "--under",
        default=None,
        metavar="PREFIX",
        help="only results whose repo-relative path starts with PREFIX",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    query = " ".join(args.query).strip()
    if not query:
        raise UsageError('recall needs a query, e.g. `theus recall "where is the cart total"`')
    if args.top < 1:
        raise UsageError(f"--top must be at least 1, got {args.top}")
    root = command_root(args)
    from knowledge.core.store import StoreCorrupt

    try:
        context = _recall(root, query, args)
    except StoreCorrupt:  # the store set the damage aside (and said so): recall from a new index
        context = _recall(root, query, args)
    result, block, tokens = context.recall, context.block, context.tokens
    result.hits = result.hits[: args.top]
    if args.json:
        print_json(
            {
                "query": query,
                "took_ms": result.took_ms,
                "best_score": result.best_score,
                "files": result.files,
                "definitions": [d.as_json() for d in result.definitions],
                "results": [h.as_json() for h in result.hits],
                "context": block,
                "injected_tokens": tokens,
                "notes": result.notes,
            }
        )
        return 0
    _print_plain(result, block, tokens)
    return 0


def _recall(root: Path, query: str, args: argparse.Namespace) -> ContextBlock:
    from knowledge.memory import Memory
    from knowledge.memory.context import INJECT_TOP, build_context

    # One-shot: the saved scoring index, the model loading while it opens, no watcher.
    memory = Memory(root, one_shot=True, index_if_missing=True, watch=False)
    memory.on_indexing = lambda: err(f"theus: no index for {root} yet; indexing it first\n")
    try:
        memory.open()
        if memory.index_error:
            err(f"theus: {memory.index_error}; recalling from the unsaved index\n")
        recaller = memory.recaller()
        recaller.warm(WARM_BUDGET_S)
        # The block is built exactly as the agent builds it; the list shows the first --top
        # hits of the same ranking, and `files` at least --top distinct files.
        context = build_context(recaller, query, path_prefix=args.under)
        if args.top > INJECT_TOP:
            wider = recaller.recall(query, top=args.top, path_prefix=args.under)
            context.recall.hits, context.recall.files = wider.hits, wider.files
    finally:
        memory.close()
    return context


def _print_plain(result: Recall, block: str, tokens: int) -> None:
    from rich.table import Table
    from rich.text import Text

    from knowledge.recall.recaller import THRESHOLD

    console = console_for(highlight=False)
    if not result.hits:
        console.print(f"Nothing recalled for {result.query!r} ({result.took_ms:.1f} ms).")
        return
    table = Table(
        title=f"Recall for {result.query!r} — {result.took_ms:.1f} ms",
        title_justify="left",
        expand=False,
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("layer", no_wrap=True)
    table.add_column("where", no_wrap=True, overflow="ellipsis", max_width=40)
    table.add_column("name / why", overflow="fold")
    for i, hit in enumerate(result.hits, 1):
        where = f"{hit.path}:{hit.line}" if hit.path and hit.line else hit.path or hit.kind
        name = Text(hit.name)
        name.append("\n" + hit.why, style="dim")
        table.add_row(str(i), f"{hit.score:.2f}", hit.layer, Text(where), name)
    console.print(table)
    if block:
        console.print(f"\nContext block ({tokens} tokens):", style="bold")
        console.print(block, markup=False)
    else:
        console.print(
            f"\nNo context block: best score {result.best_score:.2f} is below {THRESHOLD}."
        )
    for note in result.notes:
        console.print(f"note: {note}", markup=False)
