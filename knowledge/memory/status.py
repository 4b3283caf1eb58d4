"""What `theus status` (and the app's status bar) report about a project.

Each layer contributes one section (SECTIONS); a section that fails is reported as failed,
never fatal (every layer fails open).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from knowledge.core.settings import current
from knowledge.index.project import Project

if TYPE_CHECKING:
    from knowledge.memory import Memory

Section = Callable[[Project, "Memory | None"], dict[str, Any]]


def index_section(project: Project) -> dict[str, Any]:
    counts = project.counts()
    last = project.last_index
    return {
        "root": str(project.root),
        "store": str(project.paths.store),
        "data_dir": str(project.paths.home),
        "indexed": project.has_index,
        "counts": counts,
        "files": counts.get("file", 0),
        "symbols": counts.get("symbol", 0),
        "edges": counts.get("edges", 0),
        "skipped": dict(sorted(project.skipped_counts().items())),
        "last_index": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last)) if last else None,
        "recovered_from": str(project.store.recovered_from or "") or None,
        "switched_off": current().switched_off(),
    }


def _watcher(project: Project, live: Memory | None) -> dict[str, Any]:
    from knowledge import watch

    return watch.status_section(project, live.watcher if live else None)


def _embeddings(project: Project, live: Memory | None) -> dict[str, Any]:
    from knowledge.embed import status

    semantic = live.semantic if live else None
    return status.status_section(project, live=semantic.state if semantic else None)


def _recall(project: Project, live: Memory | None) -> dict[str, Any]:
    from knowledge.recall import status

    return status.status_section(project)


def _memory(project: Project, live: Memory | None) -> dict[str, Any]:
    from knowledge import memdir

    return memdir.status_section(project)


def _episodes(project: Project, live: Memory | None) -> dict[str, Any]:
    from knowledge import episodes

    return episodes.status_section(project, live.episodes if live else None)


def _instructions(project: Project, live: Memory | None) -> dict[str, Any]:
    from knowledge.memory.instructions import read_instructions

    found = read_instructions(project.root)
    return {"files": list(found.files), "bytes": len(found.text.encode()), "cut": list(found.cut)}


def _history(project: Project, live: Memory | None) -> dict[str, Any]:
    from knowledge.run_history.layer import status_section

    return status_section(project.paths)


def _facts(project: Project, live: Memory | None) -> dict[str, Any]:
    from knowledge.facts.status import status_section

    return status_section(project.paths)


# One section per layer, each built beside its layer (imported when asked for).
SECTIONS: dict[str, Section] = {
    "index": lambda project, _live: index_section(project),
    "watcher": _watcher,
    "embeddings": _embeddings,
    "recall": _recall,
    "memory": _memory,
    "episodes": _episodes,
    "history": _history,
    "facts": _facts,
    "instructions": _instructions,
}


def gather(project: Project, live: Memory | None = None) -> dict[str, Any]:
    """Every section; `live` is the memory this process runs (its watcher, semantic layer and
    episodes report their live state), None for a process that only inspects the store."""
    out: dict[str, Any] = {}
    for name, section in SECTIONS.items():
        try:
            out[name] = section(project, live)
        except Exception as exc:  # a broken layer shows up in status instead of breaking it
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out
