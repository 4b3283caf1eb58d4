"""Optional memory layers the agent uses but does not own: the episodes port and the watcher.
Each is looked up lazily and fails open: missing, switched off or broken means None, one log
line, and the agent goes on without it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from theus.config import switched_off

log = logging.getLogger(__name__)


def episode_sink(root: Path) -> Any | None:
    """knowledge.episodes' implementation of loop.EpisodeSink for this project, or None."""
    if switched_off("episodes"):
        return None
    try:
        from knowledge import episodes

        return episodes.episode_sink(root)
    except Exception as exc:
        log.info("episodes port unavailable: %s", exc)
        return None


def start_watcher(root: Path) -> Any | None:
    """Keep the graph fresh in the background while the agent works, or None."""
    if switched_off("watch"):
        return None
    try:
        from knowledge import watch

        return watch.start_background(root)
    except Exception as exc:
        log.info("watcher not started: %s", exc)
        return None


def stop_watcher(handle: Any | None) -> None:
    if handle is None:
        return
    try:
        handle.stop()
    except Exception as exc:
        log.info("watcher stop failed: %s", exc)

