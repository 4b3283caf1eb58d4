"""`theus status`: what Theus knows about a project and which layers are on."""

from __future__ import annotations

import argparse

from theus.service.command_line import add_path_argument, command_root, console, print_json
from theus.service.status import project_status, sections


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("status", help="show the index and memory layers of a project")
    add_path_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = project_status(command_root(args))
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
