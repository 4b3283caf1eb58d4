"""The memory directory (MEMORY.md + topic files) and its two-way bridge to memory nodes.

Modelled on Claude Code's auto memory: `MEMORY.md` is an index, one entry per line, either a
short memory (`- use pnpm, not npm`) or a pointer to a topic file
(`- [Deploys](deploys.md) — how staging is deployed`). Only its first 200 lines / 25 KB are
loaded; entries past the cap are reported, never dropped silently.

The bridge keeps the file and the graph in step, both ways and idempotently:
- memdir -> graph: each loaded entry is a memory node keyed by the hash of its normalised text,
  marked `source="memdir"`; an entry removed from the file removes its node.
- graph -> memdir: `add_memory` writes a topic file with `origin: graph` (and the node's key) in
  its frontmatter plus a pointer line. On the next sync that pointer resolves to the same key,
  so the memory is never imported back as a second one (no echo).
A person editing MEMORY.md by hand is the normal case: the file is the truth, the graph follows.

Modules, each importing only those above it: `format` (the index format, no I/O), `files`
(the directory on disk), `bridge` (sync), `seen` (whether a sync is due), `crud`
(add/edit/delete), `watcher`, `status`.
`THEUS_NO_MEMDIR=1` turns the bridge off.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from knowledge.memdir.bridge import SyncReport, sync
    from knowledge.memdir.crud import (
        AmbiguousKey,
        MemoryChange,
        MemoryNotFound,
        add_memory,
        delete_memory,
        edit_memory,
        memories,
        resolve_key,
    )
    from knowledge.memdir.files import MemdirFull, MemoryDir
    from knowledge.memdir.format import DEFAULT_CAPS, Caps
    from knowledge.memdir.seen import sync_if_changed
    from knowledge.memdir.status import status_section
    from knowledge.memdir.watcher import MemdirWatcher

# Each name's module, imported when first used: a one-shot run that only checks whether
# MEMORY.md moved (`bridge`) does not pay for the rest.
_HOME = {
    "SyncReport": "bridge",
    "sync": "bridge",
    "sync_if_changed": "seen",
    "AmbiguousKey": "crud",
    "MemoryChange": "crud",
    "MemoryNotFound": "crud",
    "add_memory": "crud",
    "delete_memory": "crud",
    "edit_memory": "crud",
    "memories": "crud",
    "resolve_key": "crud",
    "MemdirFull": "files",
    "MemoryDir": "files",
    "DEFAULT_CAPS": "format",
    "Caps": "format",
    "status_section": "status",
    "MemdirWatcher": "watcher",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)


__all__ = [
    "DEFAULT_CAPS",
    "AmbiguousKey",
    "Caps",
    "MemdirFull",
    "MemdirWatcher",
    "MemoryChange",
    "MemoryDir",
    "MemoryNotFound",
    "SyncReport",
    "add_memory",
    "delete_memory",
    "edit_memory",
    "memories",
    "resolve_key",
    "status_section",
    "sync",
    "sync_if_changed",
]
