"""The `theus` command: memory subcommands, headless `-p`, or the chat app with no arguments."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from theus.commands.common import UsageError, to_devnull

# Each name is a module in theus.commands exposing `register(subparsers)`.
COMMANDS = (
    "index", "status", "recall", "watch", "dashboard", "episodes", "memory", "facts", "sessions",
    "login",
)


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line, with where to look, and exits 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: {message} (see `{self.prog} --help`)\n")
        raise SystemExit(2)


def build_parser() -> Parser:
    parser = Parser(
        prog="theus",
        description="A coding agent with a memory of your project. With no arguments, opens "
        "the chat app in the current folder.",
    )
    parser.add_argument("-p", "--print", dest="prompt", nargs="?", const="-", default=None,
                        metavar="PROMPT",
                        help="run headless: answer PROMPT (or stdin) and exit")
    parser.add_argument("--output-format", choices=("text", "json", "stream-json"),
                        default="text", help="headless output format (default: text)")
    parser.add_argument("--max-turns", type=int, default=None, metavar="N",
                        help="headless: stop after N model turns")
    parser.add_argument("-c", "--continue", dest="continue_last", action="store_true",
                        help="resume the most recent session")
    parser.add_argument("-r", "--resume", metavar="ID", default=None,
                        help="resume the session with this id")
    parser.add_argument("--allow-edits", action="store_true",
                        help="headless: allow file edits and writes")
    parser.add_argument("--allow-shell", action="store_true",
                        help="headless: allow shell commands (sandboxed where bubblewrap is)")
    parser.add_argument("--allow-config-edits", action="store_true",
                        help="headless, with --allow-edits: also write files that run code "
                        "(CI, hooks, Makefile, conftest.py, agent instructions)")
    parser.add_argument("--model", default=None, help="model name (overrides THEUS_MODEL)")
    parser.add_argument("--path", default=".", help="project root (default: current folder)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"theus.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"theus.commands.{name}":
                raise
            continue  # command not built yet
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command:
            return int(args.func(args) or 0)
        if args.prompt is not None:
            from theus.headless import run_headless

            return run_headless(args)
        from theus.commands.common import project_root

        project_root(args.path)
        from tui.app import run_app

        run_app(args)
    except UsageError as exc:
        sys.stderr.write(f"theus: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("theus: interrupted\n")
        return 130
    except BrokenPipeError:
        return _reader_went_away()
    except RuntimeError as exc:
        # Python 3.11 wraps a Ctrl-C that lands inside a class body's __set_name__ (an import
        # of rich.table, say) in a RuntimeError: still an interrupt, not a crash.
        if isinstance(exc.__cause__, KeyboardInterrupt):
            sys.stderr.write("theus: interrupted\n")
            return 130
        raise


def _reader_went_away() -> int:
    """The reader of our output stopped (`theus sessions | head`): exit 0 quietly, as
    `git log | head` does."""
    to_devnull(sys.stdout)
    return 0

