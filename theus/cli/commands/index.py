"""`theus index`: build or refresh the project's knowledge graph."""

from __future__ import annotations

import argparse
import gc
import sys
from typing import TYPE_CHECKING

from theus.service.command_line import add_path_argument, command_root, err, out, print_json

if TYPE_CHECKING:
    from pathlib import Path

    from knowledge.index.project import IndexReport, Project
    from knowledge.recall.saved import FirstBase


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "index",
        help="index a project into its knowledge graph",
        description="Index PATH (default: the current folder). Unchanged files "
        "are skipped; the graph is kept in the Theus data dir.",
    )
    add_path_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-embed", action="store_true", help="skip computing embeddings")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from knowledge.core.store import StoreError

    root = command_root(args)
    try:
        done = _index(root, args) or _index(root, args)  # a read after the index met damage
    except StoreError as exc:
        err(f"theus: {exc}; the previous index is unchanged\n")
        return 1
    if done is None:
        err(
            f"theus: the index of {root} did not read back after a rebuild; see the "
            "warnings above (the disk may be failing)\n"
        )
        return 1
    project, report, embedded, embed_seconds = done
    if project.store.recovered_from:  # found at open, by the index's check or a later read
        err(
            f"theus: the index was unreadable; kept it at "
            f"{project.store.recovered_from} and rebuilt it\n"
        )
    if args.json:
        print_json(
            {**report.to_json(), "embedded": embedded, "embed_seconds": round(embed_seconds, 3)}
        )
    else:
        skipped = ", ".join(f"{n} {r}" for r, n in sorted(report.skipped.items())) or "none"
        out(
            f"Indexed {report.files} files, {report.symbols} symbols, {report.edges} edges "
            f"in {report.seconds:.2f}s ({report.parsed} parsed; skipped: {skipped}); "
            f"embedded {embedded} in {embed_seconds:.2f}s\n"
        )
    return 0


def _index(root: Path, args: argparse.Namespace) -> tuple[Project, IndexReport, int, float] | None:
    """Index, embed and snapshot; None when a read after the index met damage and the store
    was set aside (it reads as never indexed then): never a success over an empty store."""
    from knowledge.core.store import StoreCorrupt
    from knowledge.index.project import Project
    from knowledge.recall.content import frozen_texts
    from knowledge.recall.saved import FirstBase

    project = Project(root)
    project.count_texts = frozen_texts  # for the snapshot below: counted where they are read
    first = FirstBase(project)  # a new store's first snapshot, made while the graph saves
    project.nodes_made = first.start
    show_progress = not args.json and sys.stderr.isatty()
    # A one-shot process whose heap only grows while it indexes (nodes, postings): each of
    # the cyclic collector's passes walks all of it, a third of a cold index's time, to free
    # nearly nothing. It runs again once the graph is saved and its snapshot written.
    gc.disable()
    try:
        report = _run_index(project, show_progress)
        _link_episodes(project)
        embedded, embed_seconds = (0, 0.0) if args.no_embed else _embed(project, show_progress)
        _snapshot(project, first)
    except StoreCorrupt:
        return None
    finally:
        first.close()
        gc.enable()
        project.close()
    return (project, report, embedded, embed_seconds) if project.has_index else None


def _link_episodes(project: Project) -> None:
    """Episodes written by one-shot runs (files only) join the graph, before its snapshot."""
    from knowledge.episodes import EpisodeStore

    episodes = EpisodeStore(project)
    if not episodes.saved_in_step():
        episodes.load()


def _snapshot(project: Project, first: FirstBase) -> None:
    """The scoring index a one-shot `theus recall` loads, when the index moved since the last
    one (fails open: recall builds it then)."""
    from knowledge.recall import saved

    saved.current(project, first)


def _embed(project: Project, show_progress: bool) -> tuple[int, float]:
    """The semantic layer's pass over new or changed nodes; fails open (status shows why)."""
    from knowledge.embed.layer import SemanticLayer

    layer = SemanticLayer(project, threads=None)  # foreground: every core
    if layer.killed:
        return 0, 0.0
    try:
        if not show_progress:
            report = layer.embed_all()
        else:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            with Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                transient=True,
            ) as bar:
                task = bar.add_task("Embedding", total=None)
                report = layer.embed_all(
                    progress=lambda done, total: bar.update(
                        task, completed=done, total=total or None
                    )
                )
    finally:
        layer.stop()
    if report is None:
        if layer.selection is not None and layer.selection.embedder is not None:
            err(f"theus: embeddings skipped ({layer.load_error}); recall works without them\n")
        return 0, 0.0
    if report.failed:
        err(
            f"theus: embeddings incomplete ({report.failed} failed: "
            f"{report.errors[-1]}); recall works without them\n"
        )
    return report.embedded, report.seconds


def _run_index(project: Project, show_progress: bool) -> IndexReport:
    if not show_progress:
        return project.index()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    ) as bar:
        task = bar.add_task("Indexing", total=None)
        return project.index(
            progress=lambda done, total: bar.update(task, completed=done, total=total or None)
        )
