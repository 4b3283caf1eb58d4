"""What every command shares: resolving the project, one-line usage errors, and output.

A command prints through `out`, `err`, `print_json` and `console` only: file names, memories,
episodes and sessions may carry escape sequences (`theus.printable`), and these are the one
place that drops them (JSON escapes them)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from theus.printable import escape_controls, printable

if TYPE_CHECKING:
    from knowledge.index.project import Project


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


def project_root(arg: str | None) -> Path:
    path = Path(arg or ".").expanduser()
    if not path.exists():
        raise UsageError(f"no such folder: {path} (give the project folder, e.g. `theus index .`)")
    if not path.is_dir():
        raise UsageError(f"not a folder: {path} (give the project folder, not a file)")
    try:  # unreadable, it would index as an empty project
        with os.scandir(path):
            pass
    except OSError as exc:
        raise UsageError(
            f"cannot read the folder {path}: {exc.strerror or exc} (check its permissions)"
        ) from None
    return path.resolve()


def command_root(args: argparse.Namespace) -> Path:
    """The project folder a command was given: `--path` (or `--project`, or a positional PATH)
    after the command, else the global `--path` before it, else the current folder. Every
    command that works on a project resolves it with this."""
    return project_root(getattr(args, "project", None) or getattr(args, "path", None))


def has_data(root: Path) -> bool:
    """Whether Theus keeps anything for this project yet (its data folder exists)."""
    from knowledge.core.paths import ProjectPaths

    return ProjectPaths.for_root(root).home.exists()


@contextlib.contextmanager
def looking_at(root: Path) -> Iterator[Project]:
    """The project, for a command that only reads it. A project Theus never saw is opened over
    a throwaway data folder: it reads as empty, and looking creates nothing on disk."""
    import tempfile

    from knowledge.core.paths import ProjectPaths
    from knowledge.index.project import Project

    with contextlib.ExitStack() as stack:
        paths = ProjectPaths.for_root(root)
        if not paths.home.exists():
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="theus-"))
            paths = ProjectPaths(paths.root, Path(scratch))
        project = Project(root, paths)
        try:
            yield project
        finally:
            project.close()


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


def exit_now(code: int) -> NoReturn:
    """End the process without the interpreter's teardown: a final collection and every
    module's and native library's destructors took ~0.3 s after `theus -p` had answered.
    Only for a process whose durable work is done (stores closed, saves atomic; our threads
    are daemons): flush logging and the standard streams, then leave. A reader that went away
    costs the flush nothing (`| head`)."""
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def to_devnull(stream: Any) -> None:
    """Point `stream`'s file descriptor at /dev/null: its reader went away (`| head`), and the
    flushes still to come (ours, the interpreter's at exit) must not fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


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
