"""Following the memory directory on disk: re-sync when a person edits MEMORY.md."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from knowledge.core import atomic
from knowledge.core.settings import is_off
from knowledge.index.project import Project
from knowledge.memdir.bridge import SyncReport, memory_dir, sync
from knowledge.memdir.format import DEFAULT_CAPS, Caps

log = logging.getLogger(__name__)


class MemdirWatcher:
    """Re-sync when the memory directory changes on disk (a person editing MEMORY.md).

    Runs watchfiles in a daemon thread; `on_sync` gets each report from that thread (a Textual
    app hands it over with `call_from_thread`). Our own writes come back as events too, and the
    sync they trigger finds nothing to do.
    """

    def __init__(
        self,
        project: Project,
        on_sync: Callable[[SyncReport], None] | None = None,
        caps: Caps = DEFAULT_CAPS,
        debounce_ms: int = 200,
    ) -> None:
        self.project = project
        self.on_sync = on_sync
        self.caps = caps
        self.debounce_ms = debounce_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()

    def start(self) -> bool:
        if is_off("memdir") or self._thread is not None:
            return False
        try:
            memory_dir(self.project, self.caps).ensure()
        except OSError as exc:  # fail open: no watching, the session goes on
            log.warning("memory directory not watched: %s", exc)
            return False
        self._thread = threading.Thread(target=self._run, name="theus-memdir", daemon=True)
        self._thread.start()
        return True

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        from watchfiles import watch

        path = self.project.paths.memory
        try:
            for _changes in watch(
                path,
                watch_filter=_relevant_in(path),
                stop_event=self._stop,
                debounce=self.debounce_ms,
                step=50,
                yield_on_timeout=True,
                rust_timeout=50,
                raise_interrupt=False,
            ):
                self.ready.set()
                if not _changes:
                    continue
                report = sync(self.project, self.caps)
                if self.on_sync is not None:
                    self.on_sync(report)
        except Exception:  # fail open: the bridge stops following, the session goes on
            log.exception("memory directory watcher stopped")
        finally:
            self.ready.set()


def _relevant_in(base: Path) -> Callable[[object, str], bool]:
    """Markdown files of the memory folder itself: not temp files, not episodes."""

    real = base.resolve()  # watchfiles reports real paths (/tmp may be /private/tmp)

    def relevant(_change: object, path: str) -> bool:
        name = os.path.basename(path)
        if not name.endswith(".md") or atomic.is_temp_name(name):
            return False
        try:
            return Path(path).resolve().relative_to(real).parts[0] != "episodes"
        except (ValueError, OSError):
            return False

    return relevant
