"""`theus status`: what Theus knows about a project and which layers are on."""

from __future__ import annotations

import argparse
from typing import Any

from theus.commands.common import add_path_argument, console, print_json, project_root


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="show the index and memory layers of a project")
    add_path_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from knowledge.project import Project
    from knowledge.status import gather

    project = Project(project_root(args.path))
    try:
        report = gather(project)
    finally:
        project.close()
    if args.json:
        print_json(report)
    else:
        _print(report)
    return 0


def _print(report: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for section, values in report.items():
        table.add_row(f"[bold]{section}[/]", "")
        for key, value in values.items():
            if isinstance(value, dict):
                value = ", ".join(f"{k}: {v}" for k, v in value.items()) or "none"
            elif isinstance(value, list):
                value = ", ".join(map(str, value)) or "none"
            table.add_row(f"  {key}", "—" if value is None else str(value))
    console().print(table)
