"""`theus episodes [list|show ID|prune]`: what past sessions did, as kept in the memory folder.

Exit status: 0 ok, 1 when ID matches no episode, 2 for usage errors (an ambiguous ID too).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from theus.service.command_line import add_project_options, command_root, err, out, print_json
from theus.service.project import UsageError, looking_at

if TYPE_CHECKING:
    from knowledge.episodes import EpisodeStore


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "episodes",
        help="list or show the project's episodes (past session summaries)",
        description="Episodes are the summaries of compactions and session ends, kept as "
        "Markdown files. `list` (the default) shows them newest first; `show ID` prints one. "
        "ID is the episode's id, a unique prefix of it, or its number in the list (1 = newest).",
    )
    add_project_options(p, None)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    add_project_options(
        actions.add_parser("list", help="list episodes, newest first (default)"), argparse.SUPPRESS
    )
    show = actions.add_parser("show", help="print one episode")
    show.add_argument("id", metavar="ID")
    add_project_options(show, argparse.SUPPRESS)
    prune = actions.add_parser(
        "prune",
        help="remove episodes earlier versions kept that are untrue or repeated",
        description="Removes mechanical episodes of earlier versions (they said no model was "
        "available, whatever happened) and repeats of an episode (the oldest stays).",
    )
    prune.add_argument("--dry-run", action="store_true", help="list them, remove nothing")
    add_project_options(prune, argparse.SUPPRESS)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from knowledge.episodes import AmbiguousEpisode, EpisodeNotFound, EpisodeStore

    with looking_at(command_root(args)) as project:  # a project never seen has none
        store = EpisodeStore(project)
        if args.action == "show":
            try:
                episode = store.get(args.id)
            except EpisodeNotFound:
                err(f"theus: no episode matches {args.id!r} (see `theus episodes list`)\n")
                return 1
            except AmbiguousEpisode as exc:
                raise UsageError(str(exc)) from exc
            if args.json:
                print_json(episode.to_json())
            else:
                out(
                    f"{episode.id}  {episode.date}  {episode.type}  "
                    f"session {episode.session_id or '-'}\n"
                )
                if episode.files:
                    out("files: " + ", ".join(episode.files) + "\n")
                out("\n" + episode.text + "\n")
            return 0
        if args.action == "prune":
            return _prune(store, args)
        episodes, problems = store.list()
        for problem in problems:
            err(f"theus: warning: {problem}\n")
        if args.json:
            print_json([e.to_json(full=False) for e in episodes])
        elif not episodes:
            err("theus: no episodes yet (they are kept at each compaction and session end)\n")
        else:
            for number, e in enumerate(episodes, start=1):
                out(f"{number:>3}  {e.id}  {e.type:<11}  {e.title}\n")
        return 0


def _prune(store: EpisodeStore, args: argparse.Namespace) -> int:
    junk = store.prune(dry_run=args.dry_run)
    if args.json:
        print_json(
            {
                "removed": [] if args.dry_run else [e.id for e in junk],
                "would_remove": [e.id for e in junk] if args.dry_run else [],
            }
        )
        return 0
    verb = "would remove" if args.dry_run else "removed"
    for episode in junk:
        out(f"{verb} {episode.id}  {episode.title}\n")
    out(f"{verb} {len(junk)} episode{'s' if len(junk) != 1 else ''}\n")
    return 0
