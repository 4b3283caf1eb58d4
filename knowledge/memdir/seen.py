"""Whether MEMORY.md moved since the last sync, without importing the bridge: a sync loads
the whole graph (a second on a large project), which a one-shot run that changes nothing
should not pay, nor the imports that come with it."""

from __future__ import annotations

import hashlib
import json
import logging
from typing import TYPE_CHECKING

from knowledge.core import atomic
from knowledge.core.settings import is_off

if TYPE_CHECKING:
    from knowledge.index.project import Project
    from knowledge.memdir.bridge import SyncReport
    from knowledge.memdir.format import Caps

log = logging.getLogger(__name__)

SYNC_STATE = "memdir-sync.json"  # in the project's data folder: what the last sync saw


def sync_if_changed(project: Project, caps: Caps | None = None) -> SyncReport | None:
    """`bridge.sync`, unless neither the memory folder nor the graph's memories moved since
    the last one (None then)."""
    if is_off("memdir"):
        return None
    if not project.paths.memory.exists() and not project.store.told():
        return None  # no memory folder and nothing ever told: nothing to sync, nothing to make
    state = project.paths.home / SYNC_STATE
    if atomic.read_state(state).get("seen") == _fingerprint(project):
        return None
    from knowledge.memdir.bridge import sync
    from knowledge.memdir.format import DEFAULT_CAPS

    report = sync(project, caps or DEFAULT_CAPS)
    try:
        atomic.write_state(state, {"seen": _fingerprint(project)})  # its own writes included
    except OSError as exc:  # the next run syncs again: slower, never wrong
        log.info("memory sync state not written: %s", exc)
    return report


def _fingerprint(project: Project) -> str:
    """The memory folder's top-level files (episodes are a folder of their own) and how
    many saves changed memories in the store."""
    try:
        files = sorted(
            (p.name, st.st_mtime_ns, st.st_size)
            for p in project.paths.memory.glob("*.md")
            if (st := p.stat())
        )
    except OSError:
        files = []
    seen = json.dumps([files, project.store.told()])
    return hashlib.sha1(seen.encode()).hexdigest()
