"""Ctrl-C while a command starts. Python raises KeyboardInterrupt wherever the main thread
is, and two places lose it: C code that turns it into another error (numpy's import says
"PyCapsule_Import could not import module datetime"), and a finaliser, where it is printed
and swallowed. So the first frame `listen`s: a Ctrl-C still raises, and is also remembered,
for the command to end as interrupted (exit 130) whatever became of the exception."""

from __future__ import annotations

import signal
import sys
from types import FrameType

INTERRUPTED = 130

_pressed = False


def listen() -> None:
    """Remember every Ctrl-C from now on (it still raises KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, _on_sigint)


def pressed() -> bool:
    """Whether Ctrl-C was pressed while `listen` was on."""
    return _pressed


def hand_over() -> None:
    """Before an event loop starts: Python's own handler again, since asyncio handles Ctrl-C
    itself (it cancels the main task) only over that one. A Ctrl-C that was lost on the
    way here is raised again now, before any work starts."""
    if signal.getsignal(signal.SIGINT) is _on_sigint:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if _pressed:
        raise KeyboardInterrupt


def interrupted(exc: BaseException) -> bool:
    """Whether `exc` ends the command as a Ctrl-C: a KeyboardInterrupt, one wrapped in the
    RuntimeError that Python 3.11 raises when it lands inside a class body's `__set_name__`
    (an import, say), or any error raised after a Ctrl-C was seen."""
    return (
        isinstance(exc, KeyboardInterrupt)
        or (isinstance(exc, RuntimeError) and isinstance(exc.__cause__, KeyboardInterrupt))
        or (_pressed and isinstance(exc, Exception))
    )


def say_interrupted() -> int:
    sys.stderr.write("theus: interrupted\n")
    return INTERRUPTED


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    global _pressed
    _pressed = True
    signal.default_int_handler(signum, frame)
