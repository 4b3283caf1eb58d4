"""The app's handle on the project's memory: opens it once, off the event loop.

The memory (`knowledge.memory.Memory`: one Project shared by the watcher, the semantic layer,
the episodes, the MEMORY.md bridge and the one recaller) is the agents' too, so the graph
panel, the recall box, every chat's injector and the memory panels see one graph, loaded a
single time. Every call here blocks (SQLite, parsing, recall): run it in a thread worker.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowledge.memory import Memory

if TYPE_CHECKING:  # imported when the graph loads, after the first paint
    from knowledge.index.project import Project
    from knowledge.recall.recaller import Recall, Recaller

log = logging.getLogger(__name__)

RECALL_TOP = 20
WARM_S = 0.1  # file contents read by the warm-up itself before a daemon thread goes on
EXIT_PATIENCE_S = 0.05  # what quitting waits for each memory layer's thread


@dataclass(frozen=True, slots=True)
class RecallResult:
    recall: Recall
    block: str  # what would be injected ("" when below the threshold)
    tokens: int


class Engine:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.memory = Memory(self.root, index_if_missing=True)
        self._lock = threading.RLock()
        self._project: Project | None = None
        self._folders: Any = None
        self._folders_version = -1
        self._paths: list[str] = []
        self._paths_version = -1

    @property
    def loaded(self) -> bool:
        return self._project is not None

    @property
    def indexed_now(self) -> bool:
        return self.memory.indexed_now

    def load(self) -> Project:
        """Index the project if it never was, then open its memory and load the graph."""
        with self._lock:
            if self._project is None:
                _start_resource_tracker()
                project = self.memory.open().project
                if project is None:
                    raise RuntimeError("the project's store could not be opened (see tui.log)")
                project.graph  # noqa: B018  (load it now, in this thread)
                self.memory.recaller()
                self._project = project
                self.folders()  # before warm-up takes the graph's lock for seconds
            return self._project

    @property
    def semantic_on(self) -> bool:
        return self.memory.semantic_on

    @property
    def watcher(self) -> Any:
        return self.memory.watcher

    def folders(self) -> Any:
        """The folder tree of the indexed files (tui.graph_view.Folders), rebuilt when the
        graph changed."""
        from tui.graph_view import Folders

        graph = self.project.graph
        if self._folders is None or graph.version != self._folders_version:
            version = graph.version
            self._folders = Folders.build(graph)
            self._folders_version = version
        return self._folders

    def file_paths(self) -> list[str]:
        """The indexed files' paths (`@path` completion), re-read when the graph changed."""
        graph = self.project.graph
        if graph.version != self._paths_version:
            with graph.lock:
                version = graph.version
                self._paths = sorted(n.path for n in graph.nodes("file") if n.path)
            self._paths_version = version
        return self._paths

    @property
    def project(self) -> Project:
        return self.load()

    def recaller(self) -> Recaller:
        self.load()
        return self.memory.recaller()

    def warm(self) -> None:
        """Build the recall indexes now so the first search is quick (fails open); file
        contents left to read after `WARM_S` are read on a daemon thread, which quitting
        does not wait for."""
        try:
            recaller = self.recaller()
            if not recaller.warm(WARM_S):
                recaller.warm_in_background()
        except Exception as exc:
            log.warning("recall warm-up failed: %s", exc)

    def recall(self, query: str, top: int = RECALL_TOP) -> RecallResult:
        """What the graph knows about `query`, and the block the agent would inject for it
        (the same `build_context`); the list shows the first `top` hits."""
        from knowledge.memory.context import build_context

        context = build_context(self.recaller(), query)
        context.recall.hits = context.recall.hits[:top]
        return RecallResult(context.recall, context.block, context.tokens)

    def counts(self) -> dict[str, Any] | None:
        """The graph's counts, or None while another thread holds the graph (a warm-up, a
        big re-index): the status bar tries again later instead of blocking a quit."""
        if self._project is None:
            return {}
        graph = self._project.graph
        if not graph.lock.acquire(blocking=False):
            return None
        try:
            return dict(graph.counts())
        finally:
            graph.lock.release()

    def close(self) -> None:
        """Stops every layer and closes the store (each fails open), waiting briefly: the app
        ends with `os._exit` next (`theus.service.process.exit_now`)."""
        self.memory.close(patience_s=EXIT_PATIENCE_S)


def _start_resource_tracker() -> None:
    """The first index parses in a process pool, whose resource tracker is spawned with
    `sys.stderr.fileno()` among its fds, and Textual's stderr capture answers -1 ("bad value(s)
    in fds_to_keep"). Start the tracker against the real stderr first."""
    import contextlib
    import sys
    from multiprocessing import resource_tracker

    try:
        with contextlib.redirect_stderr(sys.__stderr__):
            resource_tracker.ensure_running()
    except Exception as exc:  # the index then fails on its own and says why
        log.warning("could not start the multiprocessing resource tracker: %s", exc)
