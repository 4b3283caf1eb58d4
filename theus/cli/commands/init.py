"""`theus init`: draft an AGENTS.md from the project's index, show it, and write it once
approved (`--yes`, or y at the question in a terminal). An existing file is never replaced."""

from __future__ import annotations

import argparse
import sys

from theus.service.command_line import add_path_argument, command_root
from theus.service.project import looking_at


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "init",
        help="draft an AGENTS.md for coding agents from the index, and write it once approved",
    )
    add_path_argument(p)
    p.add_argument("--print", dest="only_print", action="store_true", help="only show the draft")
    p.add_argument("--yes", action="store_true", help="write it without asking")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from knowledge.core import atomic
    from knowledge.memory.agents_draft import FILE_NAME, draft_from

    root = command_root(args)
    target = root / FILE_NAME
    if target.exists() and not args.only_print:
        sys.stderr.write(
            f"theus: {target} already exists: nothing written (theus init --print "
            "shows a draft to compare)\n"
        )
        return 1
    with looking_at(root) as project:
        text = draft_from(project)
    sys.stdout.write(text)
    if args.only_print:
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            sys.stderr.write(f"theus: {FILE_NAME} not written: pass --yes to write it\n")
            return 1
        sys.stdout.write(f"\nWrite this to {target}? [y/N] ")
        sys.stdout.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            sys.stderr.write(f"theus: {FILE_NAME} not written\n")
            return 1
    try:
        atomic.write_text(target, text)
    except OSError as exc:
        sys.stderr.write(f"theus: cannot write {target}: {exc.strerror or exc}\n")
        return 1
    sys.stdout.write(f"wrote {target}\n")
    return 0
