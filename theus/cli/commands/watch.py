"""`theus watch`: keep the project's graph in step with the disk, one line per update."""

from __future__ import annotations

import argparse
import signal
import time
from collections.abc import Iterable

from theus.service.command_line import add_path_argument, command_root, err, out


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "watch",
        help="keep the knowledge graph up to date while files change",
        description="Watch PATH (default: the current folder) in the foreground "
        "and re-index what changes, printing one line per update. Ctrl-C stops "
        "after a final save.",
    )
    add_path_argument(p)
    p.add_argument(
        "--polling",
        action="store_true",
        help="poll the disk instead of using native file events (network drives)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from knowledge.core.settings import is_off
    from knowledge.index.project import Project
    from knowledge.watch import status_section
    from knowledge.watch.watcher import Update, Watcher

    root = command_root(args)
    if is_off("watch"):
        err("theus: watching is switched off (THEUS_NO_WATCH=1); unset it to watch\n")
        return 1

    def show(update: Update) -> None:
        out(f"{time.strftime('%H:%M:%S')}  {update.line()}\n", flush=True)

    project = Project(root)
    other = status_section(project)["pid"]  # a live watcher's, from its state file
    if other is not None:
        project.close()
        err(
            f"theus: another watcher (pid {other}) already keeps {root} up to "
            f"date; stop it first (`kill {other}`) to watch here\n"
        )
        return 1
    watcher = Watcher(project, on_update=show, force_polling=args.polling)
    shown: set[str] = set()
    # `kill` (SIGTERM) stops as cleanly as Ctrl-C: a final save, then exit.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        if not project.has_index:
            out(f"Indexing {root} first…\n", flush=True)
        watcher.start_in_thread()
        while not watcher.wait_ready(0.2):
            pass
        out(
            f"Watching {root}: {len(watcher.watched)} folders, {watcher.mode} mode. "
            "Ctrl-C to stop.\n",
            flush=True,
        )
        while watcher.alive:
            _warn(watcher.warnings.values(), shown)
            watcher.wait_stopped(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()
        project.close()
        signal.signal(signal.SIGTERM, previous)
    _warn(watcher.warnings.values(), shown)
    if "store" in watcher.warnings:
        return 1
    out("Stopped; the graph is saved.\n", flush=True)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _warn(messages: Iterable[str], shown: set[str]) -> None:
    for message in list(messages):
        if message not in shown:
            shown.add(message)
            err(f"theus: {message}\n")
