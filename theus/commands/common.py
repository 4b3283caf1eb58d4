"""What every command shares: resolving the project, one-line usage errors, JSON output."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


def project_root(arg: str | None) -> Path:
    path = Path(arg or ".").expanduser()
    if not path.exists():
        raise UsageError(f"no such folder: {path} (give the project folder, e.g. `theus index .`)")
    if not path.is_dir():
        raise UsageError(f"not a folder: {path} (give the project folder, not a file)")
    return path.resolve()


def print_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")


def add_path_argument(parser: Any) -> None:
    # SUPPRESS: without PATH the global `--path` (default ".") stands, instead of "."
    # silently overriding `theus --path X status`.
    parser.add_argument("path", nargs="?", default=argparse.SUPPRESS, metavar="PATH",
                        help="project folder (default: --path, else the current folder)")


def add_project_options(parser: Any, default: Any) -> None:
    """`--project PATH` and `--json` for a command with actions (`theus memory add …`).

    Added to the command and to each action, so the flags may come after the action;
    actions pass `argparse.SUPPRESS` as default so they keep the command's value.
    """
    parser.add_argument("--project", metavar="PATH", default=default,
                        help="project folder (default: current folder)")
    parser.add_argument("--json", action="store_true",
                        default=False if default is None else default, help="print JSON")


def to_devnull(stream: Any) -> None:
    """Point `stream`'s file descriptor at /dev/null: its reader went away (`| head`), and the
    flushes still to come (ours, the interpreter's at exit) must not fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def console(**options: Any) -> Any:
    """A rich Console for a command's output; a closed pipe raises BrokenPipeError (which
    `entrypoint.cli.main` turns into a quiet exit 0) instead of rich's own exit 1."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError

    return _Console(**options)
