"""The bridge between the memory directory and the graph's memory nodes: `sync` makes the
graph follow the files, and exports memories saved in the graph that have no topic file yet."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from knowledge.core.graph import Node
from knowledge.core.mentions import Mentions
from knowledge.core.settings import is_off
from knowledge.core.store import StoreError
from knowledge.index.project import Project
from knowledge.memdir.files import MemdirFull, MemoryDir
from knowledge.memdir.format import DEFAULT_CAPS, Caps, pointer_line

OFF_REASON = "memory bridge is off (THEUS_NO_MEMDIR=1)"


@dataclass(slots=True)
class SyncReport:
    enabled: bool = True
    entries: int = 0
    not_loaded: int = 0
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    exported: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed or self.exported)

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "entries": self.entries,
            "not_loaded": self.not_loaded,
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "exported": self.exported,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 4),
        }


def memory_dir(project: Project, caps: Caps = DEFAULT_CAPS) -> MemoryDir:
    return MemoryDir(project.paths.memory, caps)


def sync(project: Project, caps: Caps = DEFAULT_CAPS) -> SyncReport:
    """Bring the graph's memory nodes in line with the memory directory, then export memories
    saved in the graph that have no topic file yet. Fails open: problems become warnings."""
    start = time.perf_counter()
    if is_off("memdir"):
        return SyncReport(enabled=False, warnings=[OFF_REASON])
    mdir = memory_dir(project, caps)
    report = SyncReport()
    try:
        mdir.ensure()
        with project.lock, mdir.lock():
            with project.graph.lock:  # one scan of the graph: it can hold 100k nodes
                present = list(project.graph.nodes("memory"))
            _export_pending(mdir, present, report)
            sync_locked(project, mdir, report, present)
    except OSError as exc:
        report.warnings.append(f"memory directory {mdir.path} unusable: {exc}")
    report.seconds = time.perf_counter() - start
    return report


def sync_locked(
    project: Project, mdir: MemoryDir, report: SyncReport, present: list[Node] | None = None
) -> None:
    """`sync` for a caller that holds the project and directory locks already."""
    index = mdir.read()
    report.entries, report.not_loaded = len(index.entries), len(index.not_loaded)
    report.warnings.extend(index.warnings())
    graph = project.graph
    mentions = Mentions(graph)
    with graph.lock:
        wanted = {e.key for e in index.entries}
        for node in present if present is not None else list(graph.nodes("memory")):
            if node.key not in wanted and _bridged(node):
                graph.remove_node(node.key)
                report.removed.append(node.key)
        for entry in index.entries:
            node = entry.node()
            old = graph.get(entry.key)
            if old is None or old != node:
                graph.upsert(node)
                graph.remove_out_edges(entry.key, ("derived-from",))
                (report.added if old is None else report.updated).append(entry.key)
            mentions.link(entry.key, entry.text)  # cheap no-op when edges exist already
    save_changes(project, report)


def _bridged(node: Node) -> bool:
    """Nodes the memdir owns: removed when their entry leaves MEMORY.md."""
    return node.source == "memdir" or (node.source == "graph" and bool(node.data.get("topic")))


def _export_pending(mdir: MemoryDir, present: list[Node], report: SyncReport) -> None:
    """Memories saved in the graph while the bridge was off or the index was full."""
    pending = [n for n in present if n.source == "graph" and not n.data.get("topic")]
    if not pending:
        return
    index = mdir.read()
    for done, node in enumerate(pending):
        if index.find(node.key) is not None:
            continue  # the same text is already an entry: the sync below adopts the node
        try:
            write_memory(mdir, node.key, node.data.get("text") or node.label)
        except MemdirFull as exc:
            report.warnings.append(f"{len(pending) - done} memories kept in the graph only: {exc}")
            return
        report.exported.append(node.key)


def write_memory(mdir: MemoryDir, key: str, text: str) -> str:
    """Topic file first, pointer second: a crash between them leaves an unlisted topic file,
    never a pointer to nothing."""
    name = mdir.new_topic_name(text)
    line = pointer_line(name, text)
    mdir.check_room(line)
    mdir.write_topic(name, key, text)
    mdir.append_line(line)
    return name


def save_changes(project: Project, report: SyncReport) -> bool:
    """Save what the report changed; False (and a warning) when the store refused it."""
    if not report.changed:
        return True
    try:
        project.save()
    except StoreError as exc:  # the graph keeps the change and retries on the next save
        report.warnings.append(str(exc))
        return False
    return True
