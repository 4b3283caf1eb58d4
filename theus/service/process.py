"""How a Theus process ends: quickly once its durable work is done, and quietly when its
reader went away."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, NoReturn


def exit_now(code: int) -> NoReturn:
    """End the process without the interpreter's teardown: a final collection and every
    module's and native library's destructors took ~0.3 s after `theus -p` had answered.
    Only for a process whose durable work is done (stores closed, saves atomic; our threads
    are daemons): flush logging and the standard streams, then leave. A reader that went away
    costs the flush nothing (`| head`)."""
    import logging

    from knowledge.core import state_writer

    state_writer.flush()  # the status counters still being written
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
