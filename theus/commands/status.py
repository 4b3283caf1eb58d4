"""`theus status`: what Theus knows about a project and which layers are on."""

from __future__ import annotations

import argparse
from typing import Any

from theus.commands.common import (
    add_path_argument,
    command_root,
    console,
    has_data,
    looking_at,
    print_json,
)

# The index section's `counts` holds these too; the JSON keeps both, the table shows each once.
COUNTED = ("files", "symbols", "edges")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="show the index and memory layers of a project")
    add_path_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from knowledge.core.paths import ProjectPaths
    from knowledge.memory.status import gather

    root = command_root(args)
    seen = has_data(root)
    with looking_at(root) as project:
        report = gather(project)
        scratch = str(project.paths.home)
    if not seen:  # read from a throwaway folder: show where the data will live
        report = _moved(report, scratch, str(ProjectPaths.for_root(root).home))
    if args.json:
        print_json(report)
    else:
        _print(sections(report))
    return 0


def _print(report: dict[str, list[tuple[str, str]]]) -> None:
    from rich.table import Table

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for section, values in report.items():
        table.add_row(f"[bold]{section}[/]", "")
        for key, value in values:
            table.add_row(f"  {key}", value)
    console().print(table)


def sections(report: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Each section of `report` as (key, value as one line of text) rows, for `theus status`
    and the app's `/status`."""
    out: dict[str, list[tuple[str, str]]] = {}
    for section, values in report.items():
        rows = out.setdefault(section, [])
        for key, value in values.items():
            if section == "index" and key in COUNTED:
                continue
            if isinstance(value, dict):
                value = ", ".join(f"{k}: {v}" for k, v in value.items()) or "none"
            elif isinstance(value, list):
                value = ", ".join(map(str, value)) or "none"
            rows.append((key, "—" if value is None else str(value)))
    return out


def _moved(value: Any, old: str, new: str) -> Any:
    """`value` with every path under `old` (strings, nested in dicts and lists) under `new`."""
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    if isinstance(value, str) and value.startswith(old):
        return new + value[len(old) :]
    return value
