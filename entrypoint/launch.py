"""The `theus` command's first frame. A Ctrl-C that lands while the command's modules are
still being imported is an interrupt, as it is later on: one line and exit 130, not a
traceback."""

from __future__ import annotations

import sys
from typing import NoReturn

INTERRUPTED = 130


def interrupted(exc: BaseException) -> bool:
    """Whether `exc` is a Ctrl-C: itself, or wrapped in the RuntimeError that Python 3.11
    raises when it lands inside a class body's `__set_name__` (an import, say)."""
    return isinstance(exc, KeyboardInterrupt) or (
        isinstance(exc, RuntimeError) and isinstance(exc.__cause__, KeyboardInterrupt)
    )


def say_interrupted() -> int:
    sys.stderr.write("theus: interrupted\n")
    return INTERRUPTED


def run() -> NoReturn:
    try:
        from entrypoint.cli import run as command
    except (KeyboardInterrupt, RuntimeError) as exc:
        if not interrupted(exc):
            raise
        raise SystemExit(say_interrupted()) from None
    command()
