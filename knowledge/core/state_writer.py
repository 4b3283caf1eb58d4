"""Status counters' files written off the caller's thread.

A counter is bumped in a request's path (the injector on the event loop, a re-rank inside the
recall's deadline), and an atomic write with its two fsyncs took 4-15 ms here, up to tens
under load: inside a 150 ms time box. `write_soon` hands the state to one daemon thread that
writes the newest state of each file; `flush` writes what is still pending, at exit (atexit,
and `theus.service.process.exit_now`, which skips atexit).
"""

from __future__ import annotations

import atexit
import threading
from pathlib import Path
from typing import Any

from knowledge.core import atomic

_lock = threading.Condition()
_pending: dict[Path, dict[str, Any]] = {}
_writing = threading.Lock()  # one writer at a time: a newer state is never overwritten
_thread: threading.Thread | None = None


def write_soon(path: Path, state: dict[str, Any]) -> None:
    """`atomic.write_state(path, state)` on the writer thread; a newer state for the same
    file, given before it ran, replaces this one."""
    global _thread
    with _lock:
        _pending[path] = state
        if _thread is None:
            _thread = threading.Thread(target=_run, daemon=True, name="theus-state-writer")
            _thread.start()
            atexit.register(flush)
        _lock.notify()


def flush() -> None:
    """Write every pending state now (best effort, as `write_state` is)."""
    with _writing:
        with _lock:
            batch = dict(_pending)
            _pending.clear()
        for path, state in batch.items():
            atomic.write_state(path, state)


def _run() -> None:
    while True:
        with _lock:
            while not _pending:
                _lock.wait()
        flush()
