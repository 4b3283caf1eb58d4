"""Worker processes for the memory's per-file work (parsing, reading files for recall).

One way to start them, so every pool dies with the process that asked for it and starts the
cheapest way the process allows. Multiprocessing is imported when a pool starts: it costs
a one-shot that only reads about 25 ms.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import multiprocessing.context
    from concurrent.futures import ProcessPoolExecutor

POOL_THRESHOLD = 200  # below this many files, a process pool costs more than it saves
_PR_SET_PDEATHSIG = 1
_SHARED: list[Any] = [None]  # in a worker: what `pool` was given as `shared`


def pool(workers: int, preload: list[str], shared: Any = None) -> ProcessPoolExecutor:
    """A pool of `workers` processes; `preload`: the modules a fork server imports once for
    every worker (used when threads already run, see `_context`). `shared`: data every
    worker reads (`shared()`), handed over as the worker starts: a forked worker reads it in
    the memory it shares with this process, where a task's arguments are pickled and sent
    (40k graph nodes: 0.4 s on each side)."""
    from concurrent.futures import ProcessPoolExecutor

    ctx = _context(preload)
    parent = os.getpid() if ctx.get_start_method() == "fork" else 0
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=ctx,
        initializer=_worker_start,
        initargs=(parent, shared),
    )


def shared() -> Any:
    """In a worker, the `shared` data its pool was made with."""
    return _SHARED[0]


def _context(preload: list[str]) -> multiprocessing.context.BaseContext:
    """fork is cheapest but unsafe once other threads run (the watcher, the app); then a fork
    server, started once with `preload` imported, forks workers without importing it again."""
    import multiprocessing

    if threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(preload)
    return ctx


def _worker_start(parent: int, data: Any) -> None:
    """Pool workers never outlive the process that started them (a `kill -9` of `theus
    index`): the kernel kills a worker when the process that forked it dies (Linux's
    PR_SET_PDEATHSIG; for a fork server, which itself exits with that process, that is the
    server), and a forked worker whose parent is already gone exits at once. A worker makes
    no cycles worth collecting (syntax trees, a file's words, dropped file by file): the
    cyclic collector's passes over each file's syntax tree were 16% of a parse."""
    _SHARED[0] = data
    gc.disable()
    with contextlib.suppress(Exception):  # not Linux: the pool's own checks remain
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent and os.getppid() != parent:
        os._exit(0)
