"""The `theus` command: memory subcommands, headless `-p`, or the chat app with no arguments."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from theus.printable import printable_last_resort

if TYPE_CHECKING:
    from knowledge.index.project import Project
from entrypoint.settings import apply as apply_settings
from knowledge.core.errors import TheusError
from theus.service.interrupts import interrupted, say_interrupted
from theus.service.process import exit_now, to_devnull
from theus.service.project import UsageError

# Each command and the module that registers it (`register(subparsers)`): the memory
# commands are the CLI front end's, `dashboard` and `mcp` start the other two front ends.
COMMANDS = {
    "index": "theus.cli.commands.index",
    "status": "theus.cli.commands.status",
    "recall": "theus.cli.commands.recall",
    "watch": "theus.cli.commands.watch",
    "dashboard": "theus.dashboard.command",
    "episodes": "theus.cli.commands.episodes",
    "memory": "theus.cli.commands.memory",
    "facts": "theus.cli.commands.facts",
    "sessions": "theus.cli.commands.sessions",
    "login": "theus.cli.commands.login",
    "mcp": "theus.mcp_server.command",
    "history": "theus.cli.commands.history",
    "doctor": "theus.cli.commands.doctor",
    "init": "theus.cli.commands.init",
}
ONE_PIECE = (
    "the prompt goes in one piece after -p: put the flags before -p or after the "
    "whole prompt, or quote it"
)


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line, with where to look, and exits 2."""

    headless = False  # the command line has -p: a stray word is part of a prompt, not a command

    def error(self, message: str) -> None:  # type: ignore[override]
        if message.startswith("argument COMMAND: invalid choice") and self.headless:
            # `theus -p fix --max-turns 3 the tests`: words after a later flag are no command.
            message = ONE_PIECE
        sys.stderr.write(f"{self.prog}: {message} (see `{self.prog} --help`)\n")
        raise SystemExit(2)


class _NoCommand(TheusError):
    """The probe parse found no command it could trust (a bad flag, `--help`)."""


class _Probe(Parser):
    def error(self, message: str) -> NoReturn:
        raise _NoCommand(message)


def build_parser(words: Sequence[str] | None = None) -> Parser:
    """The whole command line. Given the `words`, and when they name a command, only that
    command's module is imported: a one-shot `theus recall` need not pay for the other
    twelve (the MCP server, login's terminal handling)."""
    parser = _with_top_level_flags(
        Parser(
            prog="theus",
            description="A coding agent with a memory of your project. With no arguments, opens "
            "the chat app in the current folder.",
        )
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    if words is not None and _headless(words):
        # A run with -p uses no command: each is only a name here, so that a stray one is
        # told apart (ONE_PIECE) without importing every command's module first.
        for name in COMMANDS:
            sub.add_parser(name).add_argument("rest", nargs=argparse.REMAINDER)
        return parser
    named = _command_named(words) if words is not None else None
    for name in (named,) if named else COMMANDS:
        importlib.import_module(COMMANDS[name]).register(sub)
    return parser


def _command_named(words: Sequence[str]) -> str | None:
    """The command `words` run, read by the same top-level flags the real parser has; None
    for a prompt (-p), the app, the top-level `--help` or a word that is no command."""
    if _headless(words):
        return None
    probe = _with_top_level_flags(_Probe(add_help=False))
    probe.add_argument("command", nargs="?")
    try:
        found, _ = probe.parse_known_args(words)
    except _NoCommand:
        return None
    if found.command not in COMMANDS:
        return None
    before = words[: words.index(found.command)]
    return None if "-h" in before or "--help" in before else found.command  # the top's help


def _opening_request(words: list[str]) -> tuple[list[str], list[str]]:
    """`theus "where are the tests"` opens the app with that first request, as `claude` and
    `codex` do: the first word that is neither a flag, a flag's value nor a command, and the
    words after it up to the next flag (as after -p), split off. -p, or a command's name
    first, leaves the words as they are."""
    if _headless(words):
        return words, []
    takes = {
        option: action.nargs
        for action in _with_top_level_flags(_Probe(add_help=False))._actions
        for option in action.option_strings
    }
    at = 0
    while at < len(words):
        word = words[at]
        if not word.startswith("-"):
            break
        nargs = takes.get(word, 0)
        at += (
            2
            if nargs is None
            or (nargs == "?" and at + 1 < len(words) and not words[at + 1].startswith("-"))
            else 1
        )
    if at >= len(words) or words[at] in COMMANDS:
        return words, []
    end = next((i for i in range(at, len(words)) if words[i].startswith("-")), len(words))
    return words[:at] + words[end:], words[at:end]


def _headless(words: Sequence[str]) -> bool:
    return any(word in ("-p", "--print") for word in words)


def _with_top_level_flags(parser: Parser) -> Parser:
    # The words after -p, up to the next flag, are the prompt: `theus -p where are the tests`.
    parser.add_argument(
        "-p",
        "--print",
        dest="prompt",
        nargs="*",
        default=None,
        metavar="PROMPT",
        help="run headless: answer PROMPT (the words up to the next flag; "
        "piped stdin is added to it) and exit",
    )
    parser.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default="text",
        help="headless output format (default: text)",
    )
    parser.add_argument(
        "--input-format",
        choices=("text", "stream-json"),
        default="text",
        help="headless: stream-json reads Claude Code's user messages from "
        "stdin, one per line, each a turn (with --output-format stream-json)",
    )
    parser.add_argument(
        "--max-turns",
        type=int,
        default=None,
        metavar="N",
        help="headless: stop after N model turns",
    )
    resume = parser.add_mutually_exclusive_group()
    resume.add_argument(
        "-c",
        "--continue",
        dest="continue_last",
        action="store_true",
        help="resume the most recent session",
    )
    resume.add_argument(
        "-r",
        "--resume",
        metavar="ID",
        nargs="?",
        const="",
        default=None,
        help="resume the session with this id (a unique prefix will do); "
        "with no id, the app lists the sessions to pick from",
    )
    parser.add_argument(
        "--allow-edits", action="store_true", help="headless: allow file edits and writes"
    )
    parser.add_argument(
        "--allow-shell",
        action="store_true",
        help="headless: allow shell commands (sandboxed where bubblewrap is)",
    )
    parser.add_argument(
        "--allow-unsandboxed-shell",
        action="store_true",
        help="headless, with --allow-shell: run commands even where there is "
        "no sandbox (bubblewrap missing), with your permissions",
    )
    parser.add_argument(
        "--allow-config-edits",
        action="store_true",
        help="headless, with --allow-edits: also write files that run code "
        "(CI, hooks, Makefile, conftest.py, agent instructions)",
    )
    parser.add_argument(
        "--allow-mcp",
        action="store_true",
        help="headless: start the configured MCP servers and allow their tools",
    )
    parser.add_argument(
        "--allow-mcp-tool",
        action="append",
        default=None,
        metavar="SERVER__TOOL",
        help="headless: allow this MCP tool (SERVER__* for all of a server's; "
        "repeatable); only the servers named are started",
    )
    # Claude Code's names for the same decisions (theus.tool_rules), so its scripts run as
    # they are; the --allow-* flags stay.
    parser.add_argument(
        "--allowedTools",
        "--allowed-tools",
        dest="allowed_tools",
        nargs="+",
        action="extend",
        default=None,
        metavar="RULE",
        help="headless: approve these tools or rules, as in Claude Code "
        "(Bash, Bash(git diff:*), Edit(src/**), mcp__SERVER__TOOL)",
    )
    parser.add_argument(
        "--disallowedTools",
        "--disallowed-tools",
        dest="disallowed_tools",
        nargs="+",
        action="extend",
        default=None,
        metavar="RULE",
        help="headless: take these tools away (Task, Bash) or refuse what "
        "these rules match (Bash(rm:*), Edit(.env))",
    )
    parser.add_argument(
        "--permission-mode",
        default=None,
        metavar="MODE",
        help="headless: default, acceptEdits (approves edits), "
        "bypassPermissions (edits and commands) or plan (only the tools "
        "that read)",
    )
    parser.add_argument(
        "--mcp-config",
        nargs="+",
        action="extend",
        default=None,
        metavar="FILE",
        help="headless: MCP servers from these JSON files "
        "(.mcp.json's format), with your own file's standing; they start "
        "when allowed (--allow-mcp, --allow-mcp-tool, mcp__ rules)",
    )
    parser.add_argument(
        "--append-system-prompt",
        default=None,
        metavar="TEXT",
        help="headless: add TEXT to the end of this run's system prompt",
    )
    parser.add_argument(
        "--dangerously-skip-permissions",
        action="store_true",
        help="headless: as --permission-mode bypassPermissions (Claude Code's "
        "name; protected files stay refused, the shell sandboxed)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="accepted for Claude Code's scripts (stream-json already has every event)",
    )
    parser.add_argument("--model", default=None, help="model name (overrides THEUS_MODEL)")
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    parser.add_argument(
        "--path",
        default=".",
        help="project folder, for the app, -p and every command (also after "
        "the command); default: the current folder",
    )
    return parser


class _Version(argparse.Action):
    """`--version`: read from the installed package's metadata when asked, not at start."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> NoReturn:
        from importlib.metadata import version

        sys.stdout.write(f"theus {version('theus')}\n")
        raise SystemExit(0)


def serve_dashboard(
    project: Project, status: Callable[[], dict[str, Any]]
) -> tuple[str, Callable[[], None]]:
    """The app's `/dashboard`: the dashboard front end over the app's project, imported when
    first asked for."""
    from theus.dashboard.server import start_dashboard

    return start_dashboard(project, status_provider=status)


def run() -> NoReturn:
    """The `theus` command: `main`, then a quick exit (`exit_now`) once it returned a code.
    An exception or SystemExit (argparse's) leaves the usual way."""
    exit_now(main())


def _on_a_terminal() -> bool:
    """Whether the app can draw and read keys: it reads stdin and draws on stderr (Textual)."""
    return all(stream is not None and stream.isatty() for stream in (sys.stdin, sys.__stderr__))


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _command(sys.argv[1:] if argv is None else list(argv))
    except UsageError as exc:
        sys.stderr.write(f"theus: {exc}\n")
        return 2
    except BrokenPipeError:
        return _reader_went_away()
    except (KeyboardInterrupt, Exception) as exc:
        if not interrupted(exc):
            raise
        return say_interrupted()


def _command(words: list[str]) -> int:
    words, request = _opening_request(words)
    parser = build_parser(words)
    parser.headless = _headless(words)
    args = parser.parse_args(words)
    args.request = request
    if args.command and args.prompt is not None:  # `theus -p --max-turns 2 status`
        parser.error(ONE_PIECE)
    printable_last_resort()  # a command's warnings (file names, server errors) on stderr
    apply_settings(flags(args), os.environ)
    if args.command:
        return int(args.func(args) or 0)
    if args.prompt is not None:
        from theus.cli.headless import run_headless

        return run_headless(args)
    from theus.service.project import project_root

    project_root(args.path)
    if not _on_a_terminal():
        raise UsageError(
            "the chat app needs a terminal (a script or pipe has none); "
            'for one request without it use theus -p "..."'
        )
    from tui.app import run_app

    run_app(args, dashboard=serve_dashboard)


def flags(args: argparse.Namespace) -> dict[str, object]:
    """The settings the command line gives (None: not given)."""
    return {"model": getattr(args, "model", None), "max_turns": getattr(args, "max_turns", None)}


def _reader_went_away() -> int:
    """The reader of our output stopped (`theus sessions | head`): exit 0 quietly, as
    `git log | head` does."""
    to_devnull(sys.stdout)
    return 0
