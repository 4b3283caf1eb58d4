"""`theus sessions`: the project's conversations, newest first (resume with -c or -r ID)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from theus.service.command_line import add_path_argument, command_root, err, out, print_json


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sessions",
        help="list the project's conversations",
        description="List saved conversations of PATH, newest first. Resume one "
        "with `theus -r ID` (or the latest with `theus -c`).",
    )
    add_path_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON array")
    p.add_argument(
        "--delete",
        metavar="ID",
        default=None,
        help="delete this session and its runs in the history (exit 3, changing "
        "nothing, when the vector store holding them cannot be reached)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from theus.sessions import SessionStore

    if args.delete:
        return _delete(command_root(args), args.delete)
    infos = SessionStore(command_root(args)).list()
    if args.json:
        print_json([i.as_dict() for i in infos])
        return 0
    if not infos:
        err("theus: no sessions in this project yet (start one with `theus` or `theus -p ...`)\n")
        return 0
    for info in infos:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
        out(f"{info.id}  {when}  {info.messages:>4} msgs  {info.title}\n")
    return 0


def _delete(root: Path, ref: str) -> int:
    """The session's runs first (strictly: the history's points, by id), then the session."""
    from knowledge.core import atomic
    from knowledge.core.paths import ProjectPaths
    from knowledge.run_history.layer import RunHistory
    from knowledge.vectors.port import VectorStoreUnavailable
    from theus.cli.commands.history import refuse_unavailable
    from theus.sessions import SessionNotFound, SessionStore

    try:
        session = SessionStore(root).open(ref)
    except SessionNotFound as exc:
        err(f"theus: {exc}\n")
        return 1
    history = RunHistory.for_project(ProjectPaths.for_root(root))
    try:
        runs = history.delete_session(session.id)
    except VectorStoreUnavailable as exc:
        return refuse_unavailable(exc, "nothing was deleted")
    finally:
        history.close()
    atomic.remove(session.path)
    out(f"deleted session {session.id} and {len(runs)} run{'' if len(runs) == 1 else 's'} of it\n")
    return 0
