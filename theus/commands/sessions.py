"""`theus sessions`: the project's conversations, newest first (resume with -c or -r ID)."""

from __future__ import annotations

import argparse
import sys
import time

from theus.commands.common import add_path_argument, print_json, project_root


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sessions", help="list the project's conversations",
                       description="List saved conversations of PATH, newest first. Resume one "
                       "with `theus -r ID` (or the latest with `theus -c`).")
    add_path_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON array")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from theus.sessions import SessionStore

    infos = SessionStore(project_root(args.path)).list()
    if args.json:
        print_json([i.as_dict() for i in infos])
        return 0
    if not infos:
        sys.stderr.write("theus: no sessions in this project yet (start one with `theus` or "
                         "`theus -p ...`)\n")
        return 0
    for info in infos:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
        sys.stdout.write(f"{info.id}  {when}  {info.messages:>4} msgs  {info.title}\n")
    return 0
