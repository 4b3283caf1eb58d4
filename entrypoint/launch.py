"""The `theus` command's first frame. A Ctrl-C that lands while the command's modules are
still being imported is an interrupt, as it is later on: one line and exit 130, not a
traceback."""

from __future__ import annotations

from typing import NoReturn

from theus.service.interrupts import interrupted, listen, say_interrupted


def run() -> NoReturn:
    listen()
    try:
        from entrypoint.cli import run as command
    except (KeyboardInterrupt, Exception) as exc:
        if not interrupted(exc):
            raise
        raise SystemExit(say_interrupted()) from None
    command()
