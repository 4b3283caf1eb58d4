"""What every command-line front end shares (the memory commands, `theus dashboard`, `theus
mcp`): the project folder a command was given, and output.

A command prints through `out`, `err`, `print_json` and `console` only: file names, memories,
episodes and sessions may carry escape sequences (`theus.printable`), and these are the one
place that drops them (JSON escapes them)."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from theus.printable import escape_controls, printable
from theus.service.project import project_root

if TYPE_CHECKING:
    pass


def command_root(args: argparse.Namespace) -> Path:
    """The project folder a command was given: `--path` (or `--project`, or a positional PATH)
    after the command, else the global `--path` before it, else the current folder. Every
    command that works on a project resolves it with this."""
    return project_root(getattr(args, "project", None) or getattr(args, "path", None))


def out(text: str, *, flush: bool = False) -> None:
    """Text for a person, on stdout."""
    sys.stdout.write(printable(text))
    if flush:
        sys.stdout.flush()


def err(text: str) -> None:
    """A message for a person, on stderr (`theus: …` lines)."""
    sys.stderr.write(printable(text))


class Printed(io.TextIOBase):
    """stdout through `out`, for code that prints to a stream it is given (`theus doctor`)."""

    def write(self, text: str) -> int:
        out(text)
        return len(text)

    def flush(self) -> None:
        sys.stdout.flush()


def print_json(payload: Any) -> None:
    sys.stdout.write(escape_controls(json.dumps(payload, ensure_ascii=False)) + "\n")


def add_path_option(parser: Any, *, dest: str = "path", default: Any = argparse.SUPPRESS) -> None:
    """`--path PATH`, the one way every command takes the project folder (before the command
    too: `theus --path X status`); `--project` is its older spelling. Resolve it with
    `command_root(args)`. SUPPRESS: without the flag the global `--path` stands, instead of a
    default silently overriding it."""
    parser.add_argument(
        "--path",
        "--project",
        dest=dest,
        metavar="PATH",
        default=default,
        help="project folder (default: the global --path, else the current folder)",
    )


def add_path_argument(parser: Any) -> None:
    """`--path PATH`, and the positional PATH commands took first (`theus index .`)."""
    parser.add_argument(
        "path",
        nargs="?",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="project folder, as --path",
    )
    add_path_option(parser)


def add_project_options(parser: Any, default: Any) -> None:
    """`--path PATH` (alias `--project`) and `--json` for a command with actions (`theus memory
    add …`).

    Added to the command and to each action, so the flags may come after the action;
    actions pass `argparse.SUPPRESS` as default so they keep the command's value.
    """
    add_path_option(parser, dest="project", default=default)
    parser.add_argument(
        "--json",
        action="store_true",
        default=False if default is None else default,
        help="print JSON",
    )


def console(**options: Any) -> Any:
    """A rich Console for a command's output, whose text goes through `printable` (rich's own
    styles and controls are added after); a closed pipe raises BrokenPipeError (which
    `entrypoint.cli.main` turns into a quiet exit 0) instead of rich's own exit 1."""
    from rich.console import Console
    from rich.segment import Segment

    class _Console(Console):
        def render(self, renderable: Any, options: Any = None) -> Any:
            for segment in super().render(renderable, options):
                if segment.control or segment.text.isprintable():
                    yield segment
                else:
                    yield Segment(printable(segment.text), segment.style)

        def on_broken_pipe(self) -> None:
            raise BrokenPipeError

    return _Console(**options)
