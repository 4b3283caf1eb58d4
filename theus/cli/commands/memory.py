"""`theus memory [list|add TEXT|edit KEY TEXT|rm KEY]`: the project's memories.

Every call first syncs MEMORY.md into the graph (hand edits are the normal case). KEY is a
memory key (`mem:…`) or a unique prefix of it, with or without `mem:`.
Exit status: 0 ok, 1 when KEY matches no memory, 2 for usage errors (an ambiguous KEY too).
"""

from __future__ import annotations

import argparse
from typing import Any

from theus.service.command_line import add_project_options, command_root, err, out, print_json
from theus.service.project import UsageError, has_data, looking_at


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "memory",
        help="list, add, edit or remove the project's memories",
        description="Memories live in MEMORY.md (one per line, or a pointer to a topic file) "
        "in the project's memory folder, and as memory nodes in its graph. `list` is the "
        "default. Text starting with '-' goes after `--`.",
    )
    add_project_options(p, None)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="list memories (default)")
    add_project_options(listing, argparse.SUPPRESS)
    add = actions.add_parser("add", help="save a memory: a topic file and its MEMORY.md line")
    add.add_argument("text", nargs="+", metavar="TEXT")
    edit = actions.add_parser("edit", help="replace a memory's text")
    edit.add_argument("key", metavar="KEY")
    edit.add_argument("text", nargs="+", metavar="TEXT")
    rm = actions.add_parser("rm", help="remove a memory")
    rm.add_argument("key", metavar="KEY")
    for child in (add, edit, rm):
        add_project_options(child, argparse.SUPPRESS)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from knowledge.core.store import StoreError
    from knowledge.index.project import Project

    root = command_root(args)
    _check_text(args)
    if args.action != "add" and not has_data(root):
        with looking_at(root) as empty:  # a project never seen has no memories to change
            return _act(empty, args)
    project = Project(root)
    try:
        return _act(project, args)
    except (OSError, StoreError) as exc:  # unwritable memory folder or store: say so, no trace
        err(f"theus: could not change the project's memory: {exc}\n")
        return 1
    finally:
        project.close()


def _act(project: Any, args: argparse.Namespace) -> int:
    from knowledge import memdir

    action = args.action or "list"
    report = memdir.sync(project)
    shown = set(report.warnings)
    _warn(report.warnings)
    if action == "list":
        nodes = memdir.memories(project)
        if args.json:
            print_json([_node_json(n) for n in nodes])
        elif not nodes:
            err("theus: no memories yet (add one with `theus memory add TEXT`)\n")
        for node in [] if args.json else nodes:
            out(f"{node.key[:16]}  {node.source:<6}  {node.label}\n")
        return 0
    if action == "add":
        change = memdir.add_memory(project, " ".join(args.text))
        return _done(change, "added" if change.created else "already known", args.json, shown)
    try:
        key = memdir.resolve_key(project, args.key)
    except memdir.AmbiguousKey as exc:
        raise UsageError(str(exc)) from exc
    except memdir.MemoryNotFound:
        err(f"theus: no memory matches {args.key!r} (see `theus memory list`)\n")
        return 1
    if action == "edit":
        change = memdir.edit_memory(project, key, " ".join(args.text))
        return _done(change, "edited", args.json, shown)
    return _done(memdir.delete_memory(project, key), "removed", args.json, shown)


def _check_text(args: argparse.Namespace) -> None:
    if getattr(args, "text", None) is not None and not " ".join(args.text).strip():
        raise UsageError(f"`theus memory {args.action}` needs the memory's TEXT")


def _done(change: Any, verb: str, as_json: bool, shown: set[str]) -> int:
    if not change.durable:  # neither MEMORY.md nor the store took it: nothing acknowledged
        reason = change.warnings[-1] if change.warnings else "the disk refused it"
        err(f"theus: the memory was not saved: {reason}\n")
        return 1
    _warn([w for w in change.warnings if w not in shown])
    if as_json:
        print_json(
            {
                "key": change.key,
                "topic": change.topic or None,
                "result": verb,
                "warnings": change.warnings,
            }
        )
    else:
        where = f" ({change.topic})" if change.topic else ""
        out(f"{verb} {change.key}{where}\n")
    return 0


def _node_json(node: Any) -> dict[str, Any]:
    return {
        "key": node.key,
        "source": node.source,
        "title": node.label,
        "text": node.data.get("text", node.summary),
        "topic": node.data.get("topic"),
    }


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        err(f"theus: warning: {warning}\n")
