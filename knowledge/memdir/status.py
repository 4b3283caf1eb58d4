"""The memory bridge's section of `theus status`."""

from __future__ import annotations

from typing import Any

from knowledge.core.settings import is_off
from knowledge.index.project import Project
from knowledge.memdir.bridge import OFF_REASON
from knowledge.memdir.files import MemoryDir
from knowledge.memdir.format import DEFAULT_CAPS


def status_section(project: Project) -> dict[str, Any]:
    path = project.paths.memory
    if is_off("memdir"):
        return {"enabled": False, "reason": OFF_REASON, "dir": str(path)}
    index = MemoryDir(path).read()
    counts = project.counts()
    return {
        "enabled": True,
        "dir": str(path),
        "entries": len(index.entries),
        "not_loaded": len(index.not_loaded),
        "index": f"{index.lines} lines, {index.bytes / 1024:.1f} KB",
        "cap": DEFAULT_CAPS.describe(),
        "graph_memories": counts.get("memory", 0),
        "warnings": index.warnings(),
    }
