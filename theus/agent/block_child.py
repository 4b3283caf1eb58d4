"""`theus -p`'s first block, built in a forked child on the other core.

A one-shot run knows its first request at start. Built on a thread, its block (the memory's
imports, the scoring snapshot, the embedding model's load and run) shared one interpreter
with the model client's imports, which the first request waits for: on a 42k-node project
the request left at 2.05x the bare SDK's time. A child forked before any thread exists
builds it beside them instead, and sends it back through a pipe; the parent opens its own
memory only once the model is answering (`theus.agent.setup`).

The child ends on its own: when its block is sent, at its deadline (an alarm), or with the
parent's Ctrl-C (it takes the default action, quietly). It never writes to the standard
streams' buffers it inherited, and leaves with `os._exit`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from knowledge.memory.block import Block
    from knowledge.run_history.layer import KnownVector

log = logging.getLogger(__name__)

# How long a one-shot run's first request waits for the graph to load, before its deadline.
ONE_SHOT_GRAPH_WAIT_S = 3.0
# The child's life at most, seconds: past the longest wait for its block (the graph's, then
# a deadline of about a second).
_LIMIT_S = 6


@dataclass(frozen=True)
class ChildBlock:
    """What the child sends: the block, and the request's embedding it made for the block's
    examples (this process records the run with it, before its own model is loaded). The
    embedding stays pickled until `known_vector`: unpickling it loads numpy, which the first
    request does not wait for."""

    block: Future[Block]
    vector: Future[bytes | None]

    def known_vector(self) -> KnownVector | None:
        """The request's embedding, if the child sent one. Waits for the child: a parent that
        reached its answer first (the child on a busy core) would record the run without it,
        and the run would never be an example. The wait is bounded by the child's life."""
        try:
            data = self.vector.result(timeout=_LIMIT_S)
        except TimeoutError:
            return None
        # Our own child's pickle, through our own pipe.
        return cast("KnownVector", pickle.loads(data)) if data else None


def fork_block(root: Path, request: str, messages: list[Any]) -> ChildBlock | None:
    """The first request's block, on its way from a forked child; None where no child is
    forked: injection off, no `fork`, a thread already running (a fork copies none of them,
    whatever locks they held), or a project never indexed (its first index is the parent's
    to run and report)."""
    from knowledge.core.settings import current

    if current().no_knowledge_inject or not hasattr(os, "fork") or not _indexed(root):
        return None
    if threading.active_count() > 1:
        return None
    read_end, write_end = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # what the child inherits unwritten stays unsaid
        stream.flush()
    try:
        pid = os.fork()
    except OSError as exc:
        log.warning("the first block is built here (no child: %s)", exc)
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # pragma: no cover - the child; its work is seen through the pipe
        os.close(read_end)
        _child(root, request, messages, write_end)
    os.close(write_end)
    sent = ChildBlock(Future(), Future())
    for future in (sent.block, sent.vector):
        future.set_running_or_notify_cancel()
    threading.Thread(
        target=_receive, args=(pid, read_end, sent), daemon=True, name="theus-block-child"
    ).start()
    return sent


def _indexed(root: Path) -> bool:
    from knowledge.core.paths import ProjectPaths

    try:
        return ProjectPaths.for_root(root).store.is_file()
    except OSError:
        return False


def _child(root: Path, request: str, messages: list[Any], fd: int) -> None:
    """Build the block, send it, leave: never returns."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # the parent's Ctrl-C ends it, quietly
        signal.alarm(_LIMIT_S)  # a block later than this is nobody's
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(pickle.dumps(_built(root, request, messages)))
        code = 0
    except BaseException:  # a broken pipe (the parent is gone) included: nothing to tell
        pass
    finally:
        os._exit(code)


def _built(root: Path, request: str, messages: list[Any]) -> tuple[str, Any, bytes | None]:
    """(kind, value, the request's KnownVector pickled, or None); kind is "block" (value:
    the Block), "none" (no block for this request), "late" or "error" (value: what)."""
    from concurrent.futures import TimeoutError as Late

    try:
        from knowledge.core import state_writer
        from theus.agent.setup import open_one_shot

        opened = open_one_shot(root, request, messages)
        try:
            block = opened.injector.prefetched_block()
        finally:
            state_writer.flush()  # the examples lookup's counters, which `_exit` would lose
        known = opened.memory.request_vector(request)
        vector = None if known is None else pickle.dumps(known)
        return ("block", block, vector) if block is not None else ("none", None, vector)
    except Late:
        return ("late", None, None)
    except Exception as exc:
        return ("error", f"{type(exc).__name__}: {exc}", None)


def _receive(pid: int, fd: int, sent: ChildBlock) -> None:
    try:
        with os.fdopen(fd, "rb") as pipe:
            data = pipe.read()
        # Our own child's pickle, through our own pipe.
        kind, value, vector = cast(
            "tuple[str, Any, bytes | None]",
            pickle.loads(data) if data else ("error", "the child ended without one", None),
        )
        sent.vector.set_result(vector)
        if kind == "block":
            sent.block.set_result(value)
        elif kind == "error":
            sent.block.set_exception(RuntimeError(f"first block: {value}"))
        # "late" and "none": left unresolved; `inject` stops waiting at its deadline, as it
        # does for a late block built here (and asks for none for small talk).
    except Exception as exc:
        if not sent.vector.done():
            sent.vector.set_result(None)
        sent.block.set_exception(exc)
    finally:
        with contextlib.suppress(OSError):  # reaped already
            os.waitpid(pid, 0)
