"""`theus facts [list|show SUBJECT|history SUBJECT|forget ID]`: what conversations told the
memory (entities, their facts and relations), current values and their history.

Exit status: 0 ok, 1 when SUBJECT or ID matches nothing, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from theus.service.command_line import add_project_options, command_root, err, out, print_json
from theus.service.project import looking_at

if TYPE_CHECKING:
    from knowledge.facts.records import FactView


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "facts",
        help="list, show or forget what conversations told the memory",
        description="Facts come from what you and the agent say in a session (extracted by "
        "the configured model; THEUS_NO_FACTS=1 turns it off). `list` (the default) shows "
        "current facts and relations; `history SUBJECT` shows superseded ones too; `forget` "
        "removes a record (ID) or everything about a subject.",
    )
    add_project_options(p, None)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    add_project_options(
        actions.add_parser("list", help="current facts (default)"), argparse.SUPPRESS
    )
    for name, what in (
        ("show", "the current facts of one subject"),
        ("history", "every fact of one subject, superseded ones included"),
    ):
        action = actions.add_parser(name, help=what)
        action.add_argument("subject", metavar="SUBJECT")
        add_project_options(action, argparse.SUPPRESS)
    forget = actions.add_parser("forget", help="remove a fact (ID) or all about a subject")
    forget.add_argument("ident", metavar="ID")
    add_project_options(forget, argparse.SUPPRESS)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from knowledge.facts.layer import FactsLayer

    with looking_at(command_root(args)) as project:  # a project never seen knows no facts
        layer = FactsLayer(project)
        if args.action == "forget":
            removed = layer.forget(args.ident)
            if args.json:
                print_json({"removed": removed})
            elif removed:
                out(f"forgot {removed} record{'s' if removed != 1 else ''}\n")
            if not removed:
                err(f"theus: nothing known as {args.ident!r} (see `theus facts`)\n")
                return 1
            return 0
        if args.action in ("show", "history"):
            views = layer.history(args.subject)
            if args.action == "show":
                views = [v for v in views if v.current]
            if not views:
                err(f"theus: nothing known about {args.subject!r} (see `theus facts`)\n")
                return 1
        else:
            views = layer.current()
        _print(views, args.json)
        return 0


def _print(views: list[FactView], as_json: bool) -> None:
    if as_json:
        print_json(
            [
                {
                    "id": v.id,
                    "subject": v.subject,
                    "kind": v.kind,
                    "text": v.text,
                    "source": v.source,
                    "layer": v.layer,
                    "current": v.current,
                    "valid_from": v.valid_from,
                    "valid_to": v.valid_to,
                    "superseded_by": v.superseded_by or None,
                }
                for v in views
            ]
        )
        return
    if not views:
        err("theus: no facts yet (they come from what is said in a session)\n")
    for v in views:
        until = "" if v.current else f"  (until {_day(v.valid_to)})"
        out(f"{v.id}  {v.subject}: {v.text}  [{v.layer.lower()}, {v.source}]{until}\n")


def _day(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp else "?"
