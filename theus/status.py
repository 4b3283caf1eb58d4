"""What `theus status` (and the app's status bar) report about a project.

Each layer contributes one section through a function registered in SECTIONS; a section that
fails is reported as failed, never fatal (every layer fails open).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import Any

from knowledge.project import Project
from knowledge.switches import switched_off

Section = Callable[[Project], dict[str, Any]]

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
        "switched_off": switched_off(),
    }


# Each layer's section lives beside the layer: "module:function", taking the Project.
SECTIONS = {
    "index": "theus.status:index_section",
    "watcher": "knowledge.watch:status_section",
    "embeddings": "knowledge.embed.status:status_section",
    "recall": "knowledge.recall.status:status_section",
    "memory": "knowledge.memdir:status_section",
    "episodes": "knowledge.episodes:status_section",
}


def _load(ref: str) -> Section | None:
    module_name, func = ref.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            return None  # that layer is not built
        raise
    return getattr(module, func, None)


def gather(project: Project) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, ref in SECTIONS.items():
        try:
            section = _load(ref)
            if section is not None:
                out[name] = section(project)
        except Exception as exc:  # a broken layer shows up in status instead of breaking it
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out
