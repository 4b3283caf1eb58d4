"""Keep a project's graph in step with the disk while files change.

One asyncio loop does everything in order: watchfiles (`awatch`, one non-recursive watch per
indexed folder, see `dirs.py`) feeds events into `Pending`; each file is handled 400 ms after its
last event by `Project.update`, which decides from the disk, never from the events; more than 40
files within 2 s is a storm, handled by one `Project.index`; saves are grouped every ~2 s. If the
native watcher cannot start, it polls; if polling fails too, it rescans periodically.

Over 400 lines: one event loop's states (native, polling, rescan, degraded) and their
transitions read best in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from watchfiles import Change, awatch

from knowledge.core.store import StoreError
from knowledge.index.ignore import relpath
from knowledge.index.project import IndexReport, Project
from knowledge.watch import state as persisted
from knowledge.watch.dirs import files_in, watch_dirs
from knowledge.watch.pending import Pending

log = logging.getLogger(__name__)

OpenWatch = Callable[..., AsyncIterator[set[tuple[Change, str]]]]
_Generation = tuple["asyncio.Task[BaseException | None]", threading.Event]

_IGNORE_FILES = (".gitignore", ".theusignore")
_RESTARTS, _RESTART_WINDOW_S = 3, 60.0  # restarts in the same mode before degrading
_GROUP_MS = 200  # watchfiles groups a stream of events at most this long before yielding
_STEP_MS = 20  # ...and yields once nothing new arrived for this long
_STOP_GRACE = 2.0


@dataclass(frozen=True, slots=True)
class Update:
    """One applied change: a batch of files, or a full rescan."""

    kind: str  # "update" | "rescan"
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    nodes_added: int
    nodes_removed: int
    ms: float
    at: float  # wall clock

    def line(self) -> str:
        paths = [*self.changed, *(f"{rel} (deleted)" for rel in self.removed)]
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        prefix = f"rescan, {len(paths)} files: " if self.kind == "rescan" else ""
        return f"{prefix}{shown}  nodes +{self.nodes_added} -{self.nodes_removed}  {self.ms:.0f} ms"


class Watcher:
    """Watch one project. `run()` in any asyncio loop, or `start_in_thread()` / `stop()`."""

    def __init__(
        self,
        project: Project,
        *,
        on_update: Callable[[Update], None] | None = None,
        debounce: float = 0.4,
        save_every: float = 2.0,
        storm_files: int = 40,
        storm_window: float = 2.0,
        force_polling: bool = False,
        poll_ms: int = 300,
        rescan_every: float = 5.0,
        catch_up: bool = True,
        open_watch: OpenWatch = awatch,
    ) -> None:
        self.project = project
        self.on_update = on_update
        self.save_every = save_every
        self.poll_ms = poll_ms
        # Without native events, a periodic stat-only rescan is the safety net: notify's poll
        # watcher compares mtimes to the second and misses a second save within that second.
        self.rescan_every = rescan_every
        self.catch_up = catch_up  # rescan once at start: changes made while nobody watched
        self.mode = "polling" if force_polling else "native"  # -> "polling" -> "rescan"
        self.pending = Pending(
            debounce=debounce, storm_files=storm_files, storm_window=storm_window
        )
        self.warnings: dict[str, str] = {}  # "watch" | "store" -> message
        self.reindexed: Counter[str] = Counter()  # rel -> times its content was re-indexed
        self.updates = 0
        self.rescans = 0
        self.started: float | None = None
        self.last_update: float | None = None
        self.last_change: str | None = None
        self.watched: frozenset[str] = frozenset()  # repo-relative folders, "" is the root
        self._open_watch = open_watch
        self._skip = _data_dir_inside(project)
        self._stop = threading.Event()
        self._ready = threading.Event()
        # Set when the background thread ends. Waited on instead of Thread.join: a join cut
        # short by Ctrl-C can report the thread dead while it still runs (CPython gh-90882),
        # and the final save would then race the project's close.
        self._done = threading.Event()
        self._busy = False
        self._rewatch_wanted = False
        self._failure: BaseException | None = None
        self._generation: _Generation | None = None
        self._retired: set[asyncio.Task[BaseException | None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._last_save = self._last_rescan = 0.0
        self._restarts: list[float] = []

    # -- public API ----------------------------------------------------------------------------
    async def run(self, stop: threading.Event | None = None) -> None:
        """Watch until `stop` (or `self.stop()`); always ends with a save."""
        if stop is not None:
            self._stop = stop
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self.started = time.time()
        self._last_save = self._last_rescan = time.monotonic()
        try:
            await self._rewatch()
            if self.catch_up:
                await self._guarded(self._rescan(counted=False))
            self._persist()
            self._ready.set()
            while not self._stop.is_set():
                await self._wait()
                if not self._stop.is_set():
                    await self._tick()
        finally:
            await self._close_generations()
            self._save()
            self._persist(running=False)
            self._ready.set()

    def start_in_thread(self) -> Watcher:
        self._thread = threading.Thread(target=self._thread_main, name="theus-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop, after a final save; safe to call from any thread, more than once."""
        self._stop.set()
        self._poke()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._done.wait(timeout)

    def wait_stopped(self, timeout: float | None = None) -> bool:
        """Wait for the background thread to end; True once it has."""
        return self._thread is None or self._done.wait(timeout)

    def wait_ready(self, timeout: float | None = None) -> bool:
        """True once watches are placed and the catch-up rescan is done."""
        return self._ready.wait(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and not self._done.is_set()

    @property
    def idle(self) -> bool:
        """Nothing pending and nothing being applied (tests and benchmarks wait on this)."""
        return not self._busy and self.pending.idle

    def status(self) -> dict[str, Any]:
        return {
            "running": not self._stop.is_set(),
            "mode": self.mode,
            "pid": os.getpid(),
            "started": persisted.clock(self.started),
            "last_update": persisted.clock(self.last_update),
            "last_change": self.last_change,
            "updates": self.updates,
            "rescans": self.rescans,
            "watched_dirs": len(self.watched),
            "warning": "; ".join(self.warnings.values()) or None,
        }

    # -- the loop ------------------------------------------------------------------------------
    def _thread_main(self) -> None:
        try:
            asyncio.run(self.run())
        except Exception:  # fail open: the product goes on without a live graph
            log.exception("the file watcher stopped")
            self.warnings["watch"] = "the file watcher stopped; see the log"
        finally:
            self._done.set()

    def _poke(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(wake.set)

    async def _wait(self) -> None:
        assert self._wake is not None
        self._wake.clear()
        now = time.monotonic()
        # Wake at least twice a second: a stop event set from outside cannot poke the loop.
        deadlines = [now + min(self.save_every, 0.5)]
        pending = self.pending.next_deadline()
        if pending is not None:
            deadlines.append(pending)
        if self.project.unsaved:
            deadlines.append(self._last_save + self.save_every)
        if self.mode != "native":
            deadlines.append(self._last_rescan + self.rescan_every)
        if self._failure is not None or self._rewatch_wanted:
            deadlines.append(now)
        timeout = max(0.0, min(deadlines) - now)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)

    async def _tick(self) -> None:
        self._busy = True
        try:
            if self._failure is not None:
                failure, self._failure = self._failure, None
                self._degrade(failure)
                await self._rewatch(force=True)
                # Events of the batch that failed are lost: look at the disk instead.
                await self._guarded(self._rescan())
            elif self._rewatch_wanted:
                await self._rewatch()
            now = time.monotonic()
            periodic = self.mode != "native" and now - self._last_rescan >= self.rescan_every
            if periodic or self.pending.storm_ready(now):
                await self._guarded(self._rescan())
            elif due := self.pending.due(now):
                await self._guarded(self._apply(due))
            if self.project.unsaved and time.monotonic() - self._last_save >= self.save_every:
                await asyncio.to_thread(self._save)
        finally:
            self._busy = False

    async def _guarded(self, work: Coroutine[Any, Any, None]) -> None:
        """An indexer bug must not stop the watcher: one warning in status, then go on."""
        try:
            await work
        except Exception as exc:
            log.exception("the watcher could not apply a change")
            self.warnings["index"] = f"a change could not be indexed ({type(exc).__name__})"
            self._persist()

    def _note(self, changes: set[tuple[Change, str]]) -> None:
        root = self.project.root
        self.pending.add({relpath(root, path) for _, path in changes}, time.monotonic())
        if self.pending.storm and not self._rewatch_wanted:
            # A checkout creating folders: watch them now, so their files' events keep the
            # storm open until it is really over, and one rescan sees everything.
            self._rewatch_wanted = any(
                change == Change.added
                and relpath(root, path) not in self.watched
                and os.path.isdir(path)
                for change, path in changes
            )
        if self._wake is not None:
            self._wake.set()

    def _keep(self, change: Change, path: str) -> bool:
        """The watchfiles filter: the indexer's rules, parents included."""
        rel = relpath(self.project.root, path)
        if rel == "." or rel.startswith("../"):
            return False
        if self._skip and (rel == self._skip or rel.startswith(self._skip + "/")):
            return False
        is_dir = rel in self.watched or os.path.isdir(path)
        return not self.project.rules.ignored_path(rel, is_dir)

    # -- applying changes ----------------------------------------------------------------------
    async def _apply(self, due: list[str]) -> None:
        root = self.project.root
        rels: set[str] = set()
        folders_moved = False
        for rel in due:
            if rel.rsplit("/", 1)[-1] in _IGNORE_FILES:
                # Which files are indexed may have changed anywhere below: only a walk knows.
                await self._rescan()
                return
            if (root / rel).is_dir():
                folders_moved |= rel not in self.watched
                continue  # its files have their own events (or get listed below if new)
            if rel in self.watched:  # a watched folder is gone: drop everything under it
                folders_moved = True
                known = list(self.project.files)  # a copy: other writers may add files
                rels.update(p for p in known if p.startswith(rel + "/"))
            rels.add(rel)
        if folders_moved:
            # Watch the new folders first, then list them: a file created in between is seen.
            added = await self._rewatch()
            rules = self.project.rules
            rels.update(await asyncio.to_thread(files_in, root, added, rules))
        if len(rels) > self.pending.storm_files:
            await self._rescan()
            return
        if rels:
            report = await asyncio.to_thread(self.project.update, sorted(rels))
            self._record("update", report)

    async def _rescan(self, counted: bool = True) -> None:
        self.pending.rescan_started()
        self._last_rescan = time.monotonic()
        if self.mode != "rescan":
            await self._rewatch()  # before the walk, so nothing created meanwhile is missed
        try:
            report = await asyncio.to_thread(self.project.index)
        except StoreError as exc:  # the graph is updated; the save is retried later
            self._store_failed(exc)
            report = None
        if self.mode != "rescan":
            await self._rewatch()  # index() reloaded the ignore rules: folders may come or go
        if counted:
            self.rescans += 1
        if report is not None:
            self._last_save = time.monotonic()
            self._record("rescan", report)

    def _record(self, kind: str, report: IndexReport) -> None:
        if not report.changed and not report.removed:
            return
        update = Update(
            kind,
            tuple(report.changed),
            tuple(report.removed),
            report.nodes_added,
            report.nodes_removed,
            report.seconds * 1000,
            time.time(),
        )
        self.reindexed.update(report.changed)
        if kind == "update":
            self.updates += 1
        self.last_update, self.last_change = update.at, update.line()
        self._persist()
        if self.on_update is not None:
            try:
                self.on_update(update)
            except Exception:
                log.exception("watcher on_update callback failed")

    def _save(self) -> None:
        self._last_save = time.monotonic()
        try:
            self.project.save()
        except StoreError as exc:
            if self._stop.is_set():  # the store closed under a save cut short by an exit:
                log.info("watcher save at exit not done (%s); the next start catches up", exc)
                return
            self._store_failed(exc)
            return
        if self.warnings.pop("store", None) is not None:
            self._persist()

    def _store_failed(self, exc: StoreError) -> None:
        message = f"could not save the graph ({exc}); will retry"
        if self.warnings.get("store") != message:
            log.warning(message)
            self.warnings["store"] = message
            self._persist()

    # -- watches -------------------------------------------------------------------------------
    async def _rewatch(self, force: bool = False) -> list[str]:
        """Watch exactly the folders the indexer walks; returns the newly watched ones."""
        self._rewatch_wanted = False
        root, rules = self.project.root, self.project.rules
        for _attempt in range(3):
            dirs = await asyncio.to_thread(watch_dirs, root, rules, self._root_skip())
            fresh = frozenset(dirs)
            if fresh == self.watched and self._generation is not None and not force:
                return []
            if self.mode == "rescan":
                await self._close_generations()
                break
            failure = await self._start_generation(dirs)
            if failure is None:
                break
            if not isinstance(failure, FileNotFoundError):  # a folder vanished: list again
                self._degrade(failure)
                force = True
        else:
            self._rewatch_wanted = True  # folders keep vanishing: try again on the next tick
            return []
        added = [d for d in dirs if d not in self.watched]
        self.watched = fresh
        return added

    async def _start_generation(self, dirs: list[str]) -> BaseException | None:
        """Start a watcher on `dirs`, then retire the previous one: they overlap, no gap."""
        stop = threading.Event()
        task = asyncio.create_task(self._watch(dirs, stop))
        # awatch creates its native watcher before its first await: one turn of the loop
        # tells whether it started.
        await asyncio.sleep(0)
        if task.done():
            failure = task.result()
            if failure is not None:
                return failure
        await self._close_generations(keep=(task, stop))
        return None

    async def _watch(self, dirs: list[str], stop: threading.Event) -> BaseException | None:
        paths = [str(self.project.root / d) for d in dirs]
        try:
            async for changes in self._open_watch(
                *paths,
                watch_filter=self._keep,
                debounce=_GROUP_MS,
                step=_STEP_MS,
                stop_event=stop,
                force_polling=self.mode == "polling",
                poll_delay_ms=self.poll_ms,
                recursive=False,
                ignore_permission_denied=True,
            ):
                self._note(changes)
        except Exception as wrapped:  # watchfiles wraps its errors in anyio's ExceptionGroup
            exc = _unwrap(wrapped)
            current = self._generation is not None and self._generation[1] is stop
            if current and not stop.is_set():  # died while in use: degrade on the next tick
                self._failure = exc
                self._poke()
            return exc
        return None

    async def _close_generations(self, keep: _Generation | None = None) -> None:
        if self._generation is not None:
            task, stop = self._generation
            stop.set()  # the native watcher notices within one step
            self._retired.add(task)
        self._generation = keep
        self._retired = {t for t in self._retired if not t.done()}
        if keep is None and self._retired:
            await asyncio.wait(self._retired, timeout=_STOP_GRACE)

    def _degrade(self, failure: BaseException) -> None:
        now = time.monotonic()
        self._restarts = [t for t in self._restarts if now - t < _RESTART_WINDOW_S]
        if len(self._restarts) < _RESTARTS and "decode" in str(failure):
            # One odd file name (not UTF-8) kills the watch, not the watching: start again
            # in the same mode (the walk skips that file), unless it keeps happening.
            self._restarts.append(now)
            message = f"the file watcher restarted after: {failure}"
            log.warning(message)
            self.warnings["watch"] = message
            self._persist()
            return
        if self.mode == "native":
            self.mode = "polling"
            message = f"native file watching failed ({failure}); polling every {self.poll_ms} ms"
        else:
            self.mode = "rescan"
            message = (
                f"file watching failed ({failure}); rescanning every {self.rescan_every:.0f} s"
            )
        log.warning(message)
        self.warnings["watch"] = message
        self._persist()

    def _root_skip(self) -> Path | None:
        return self.project.root / self._skip if self._skip else None

    def _persist(self, running: bool = True) -> None:
        pid = os.getpid()
        if not running and persisted.read_state(self.project.paths).get("pid") not in (pid, None):
            return  # another process took over the file; its state stands
        persisted.write_state(
            self.project.paths,
            {
                "running": running,
                "pid": pid,
                "pid_start": persisted.process_start(pid),
                "root": str(self.project.root),
                "mode": self.mode,
                "started": self.started,
                "last_update": self.last_update,
                "last_change": self.last_change,
                "updates": self.updates,
                "rescans": self.rescans,
                "warning": "; ".join(self.warnings.values()) or None,
            },
        )


def _unwrap(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _data_dir_inside(project: Project) -> str:
    """The data dir's path relative to the root when it lies inside the project, else ""."""
    home = project.paths.home.resolve()
    root = project.root
    if home == root or root not in home.parents:
        return ""
    return relpath(root, home)
