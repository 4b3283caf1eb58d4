"""`theus dashboard`: the project graph in a browser, served on 127.0.0.1 with a per-run token."""

from __future__ import annotations

import argparse

from theus.service.command_line import add_path_argument, command_root, err, out
from theus.service.project import UsageError

DEFAULT_PORT = 7420


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "dashboard",
        help="serve the project graph in a browser (127.0.0.1 only)",
        description="Serve the project's knowledge graph, database tables and status on "
        "127.0.0.1. The printed link carries a one-time token; keep it private.",
    )
    add_path_argument(p)
    p.add_argument(
        "--port",
        type=int,
        default=None,
        metavar="N",
        help=f"port to listen on (default: {DEFAULT_PORT}, or a free one if taken)",
    )
    p.add_argument("--open", action="store_true", help="open the page in the default browser")
    p.add_argument(
        "--unsafe-host",
        default=None,
        metavar="HOST",
        help="listen on HOST instead of 127.0.0.1: anyone who can reach it and has "
        "the link can read the graph",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import contextlib
    import errno
    import threading
    import webbrowser

    from knowledge.index.project import Project
    from knowledge.memory.status import gather
    from knowledge.watch import maybe_start
    from knowledge.watch.watcher import Watcher
    from theus.dashboard.server import start_dashboard

    root = command_root(args)
    if args.port is not None and not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, not {args.port}")
    host = args.unsafe_host or "127.0.0.1"
    project = Project(root)
    ports = [args.port] if args.port is not None else [DEFAULT_PORT, 0]
    try:
        for port in ports:
            try:
                url, stop = start_dashboard(
                    project,
                    port=port,
                    host=host,
                    unsafe_host=args.unsafe_host is not None,
                    status_provider=lambda: gather(project),
                )
                break
            except OSError as exc:
                if port == ports[-1]:
                    hint = " (pick another with --port N)" if exc.errno == errno.EADDRINUSE else ""
                    raise UsageError(
                        f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}"
                    ) from None
        watching: list[Watcher | None] = []

        def follow() -> None:
            """The first index if there is none, then the watcher: the page follows edits,
            commits and branch switches as the app's dashboard does."""
            if not project.has_index:
                project.index()
            watching.append(maybe_start(project))

        if not project.has_index:  # serve at once; the page fills in as the index lands
            out("No index yet: indexing in the background, the page updates as it goes.\n")
        threading.Thread(target=follow, name="theus-follow", daemon=True).start()
        if args.unsafe_host is not None:
            err(
                f"theus: warning: listening on {host}; anyone who can reach it "
                "and has the link can read this project's graph\n"
            )
        out(f"Theus dashboard for {root}:\n  {url}\nPress Ctrl-C to stop.\n", flush=True)
        if args.open:
            webbrowser.open(url)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
        stop()
        for watcher in watching:
            if watcher is not None:
                watcher.stop()
    finally:
        project.close()
    return 0
