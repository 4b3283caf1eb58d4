"""The real-time watcher: the graph follows every save, branch switch and schema change.

`Watcher(project).start_in_thread()` / `.stop()` for the chat app and headless mode (or `await
watcher.run(stop_event)` in an existing loop); `maybe_start(project)` honours THEUS_NO_WATCH=1;
`status_section(project, live)` reports it: from the running watcher this process holds, or
from the state file another process left. The watcher (`watcher`: watchfiles, the walker) is
imported when first used, not with the package: `theus status` only reads the state file.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from knowledge.core.settings import is_off
from knowledge.watch import state as persisted

if TYPE_CHECKING:
    from knowledge.index.project import Project
    from knowledge.watch.watcher import Update, Watcher

__all__ = ["Update", "Watcher", "maybe_start", "status_section"]

log = logging.getLogger(__name__)


def maybe_start(
    project: Project, on_update: Callable[[Update], None] | None = None, **options: Any
) -> Watcher | None:
    """Start watching in a background thread, unless switched off; never raises."""
    if is_off("watch"):
        return None
    from knowledge.watch.watcher import Watcher

    try:
        return Watcher(project, on_update=on_update, **options).start_in_thread()
    except Exception:  # fail open: the product works on a snapshot instead
        log.exception("could not start the file watcher")
        return None


def status_section(project: Project, live: Watcher | None = None) -> dict[str, Any]:
    section = (
        live.status()
        if live is not None
        else persisted.describe(persisted.read_state(project.paths))
    )
    section["switched_off"] = is_off("watch")
    return section


def __getattr__(name: str) -> object:
    """`Update` and `Watcher`, from `watcher`, imported on first use."""
    if name in ("Update", "Watcher"):
        from knowledge.watch import watcher

        return getattr(watcher, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
