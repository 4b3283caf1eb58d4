"""`theus history [list|show|invalidate|restore|delete|settings]`: the project's past runs, the
few-shot examples similar requests get.

Exit status: 0 ok, 1 when ID matches no run, 2 for usage errors (an ambiguous ID too), 3 when
the vector store holding the run cannot be reached: a change to what is valid is made in the
store and the local record together, or not at all.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from theus.service.command_line import add_project_options, command_root, err, out, print_json
from theus.service.project import UsageError

if TYPE_CHECKING:
    from knowledge.run_history.layer import RunHistory
    from knowledge.run_history.record import RunRecord

STORE_UNAVAILABLE = 3


def refuse_unavailable(exc: Exception, nothing: str = "nothing was changed") -> int:
    """The one line for a consistency operation the vector store could not take, and its exit
    status."""
    err(f"theus: {exc}; {nothing} (try again when the vector store is reachable)\n")
    return STORE_UNAVAILABLE


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "history",
        help="list, show, invalidate or delete past runs (few-shot examples)",
        description="Every finished request is kept as a run: what was asked and what was "
        "done. Similar later requests in this project get up to LIMIT of them as examples. "
        "`list` (the default) shows them newest first. ID is a run id or a unique prefix of "
        "it (4 characters or more). Exit 3 when the vector store holding a run cannot be "
        "reached (nothing is changed then).",
    )
    add_project_options(p, None)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    add_project_options(
        actions.add_parser("list", help="list runs, newest first (default)"), argparse.SUPPRESS
    )
    for name, text in (
        ("show", "print one run"),
        ("invalidate", "never use this run as an example again"),
        ("restore", "undo `invalidate`"),
        ("delete", "remove the run from the store and the record"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("id", metavar="ID")
        add_project_options(action, argparse.SUPPRESS)
    chosen = actions.add_parser(
        "settings",
        help="show or change this project's example settings",
        description="With no option, prints them. Defaults: on, limit 3, threshold 0.85 "
        "(the least similarity a past run needs to be an example).",
    )
    switch = chosen.add_mutually_exclusive_group()
    switch.add_argument(
        "--on",
        dest="enabled",
        action="store_const",
        const=True,
        default=None,
        help="look up examples at the start of each request (default)",
    )
    switch.add_argument(
        "--off",
        dest="enabled",
        action="store_const",
        const=False,
        help="no examples for this project (runs are still recorded)",
    )
    chosen.add_argument(
        "--limit", type=int, default=None, metavar="N", help="at most N examples per request (1-20)"
    )
    chosen.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="X",
        help="least similarity of an example, above 0 and at most 1",
    )
    add_project_options(chosen, argparse.SUPPRESS)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from knowledge.core.paths import ProjectPaths
    from knowledge.run_history.journal import AmbiguousRun, NoSuchRun
    from knowledge.run_history.layer import RunHistory
    from knowledge.vectors.port import VectorStoreUnavailable

    root = command_root(args)
    history = RunHistory.for_project(ProjectPaths.for_root(root))
    try:
        if args.action == "settings":
            return _settings(history, args)
        if args.action in (None, "list"):
            return _list(history, args.json)
        try:
            return _act(history, args)
        except NoSuchRun:
            err(f"theus: no run matches {args.id!r} (see `theus history list`)\n")
            return 1
        except AmbiguousRun as exc:
            raise UsageError(str(exc)) from exc
        except VectorStoreUnavailable as exc:
            return refuse_unavailable(exc)
    finally:
        history.close()


def _act(history: RunHistory, args: argparse.Namespace) -> int:
    if args.action == "show":
        record = history.journal.find(args.id)
        if args.json:
            print_json(record.to_json())
        else:
            out(_details(record))
        return 0
    if args.action == "delete":
        record = history.delete(args.id)
        verb = "deleted"
    else:
        record = history.set_invalid(args.id, args.action == "invalidate")
        verb = "invalidated" if record.invalid else "restored"
    if args.json:
        print_json({"id": record.id, "action": verb})
    else:
        out(f"{verb} run {record.id}\n")
    return 0


def _list(history: RunHistory, as_json: bool) -> int:
    records = history.journal.records()
    if as_json:
        print_json([r.to_json() for r in records])
        return 0
    if not records:
        err("theus: no runs recorded in this project yet\n")
        return 0
    for record in records:
        out(
            f"{record.id[:8]}  {_when(record.created)}  {_state(record):<11}  "
            f"{record.request.splitlines()[0][:90] if record.request else ''}\n"
        )
    return 0


def _settings(history: RunHistory, args: argparse.Namespace) -> int:
    from dataclasses import replace

    from knowledge.run_history import settings as settings_file

    current = history.settings
    changes = {
        k: v
        for k, v in (
            ("enabled", args.enabled),
            ("limit", args.limit),
            ("threshold", args.threshold),
        )
        if v is not None
    }
    if changes:
        try:
            current = replace(current, **changes).check()
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        try:
            settings_file.save(history.home, current)
        except OSError as exc:
            err(f"theus: settings not saved: {exc.strerror or exc}\n")
            return 1
    if args.json:
        print_json(
            {"enabled": current.enabled, "limit": current.limit, "threshold": current.threshold}
        )
    else:
        out(
            f"examples: {'on' if current.enabled else 'off'}, limit "
            f"{current.limit}, threshold {current.threshold:g}\n"
        )
    return 0


def _state(record: RunRecord) -> str:
    if record.invalid:
        return "invalid"
    return "stored" if record.stored else "local only"


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def _details(record: RunRecord) -> str:
    lines = [
        f"run {record.id}  {_when(record.created)}  {_state(record)}",
        f"session {record.session or '-'}  model {record.model or '-'}"
        + (f"  judge score {record.score:g}" if record.score is not None else ""),
        "",
        "Request:",
        record.request,
        "",
        "Done:",
        record.done,
        "",
    ]
    return "\n".join(lines)
