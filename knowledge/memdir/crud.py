"""Adding, editing, deleting and listing memories: the API of the agent's remember tool,
`theus memory` and the app's memories panel. Each change lands in MEMORY.md, then syncs."""

from __future__ import annotations

from dataclasses import dataclass, field

from knowledge.core import atomic, keys
from knowledge.core.errors import TheusError
from knowledge.core.frontmatter import first_line, shorten
from knowledge.core.graph import Node
from knowledge.core.mentions import Mentions
from knowledge.core.redact import redact
from knowledge.core.settings import is_off
from knowledge.index.project import Project
from knowledge.memdir.bridge import (
    OFF_REASON,
    SyncReport,
    memory_dir,
    save_changes,
    sync_locked,
    write_memory,
)
from knowledge.memdir.files import MemdirFull, MemoryDir
from knowledge.memdir.format import DEFAULT_CAPS, Caps, Entry, pointer_line


@dataclass(slots=True)
class MemoryChange:
    key: str
    topic: str = ""
    created: bool = True
    warnings: list[str] = field(default_factory=list)
    # On disk somewhere that survives this process: MEMORY.md or the graph store. False when
    # both refused it (full or read-only disk): the change is not acknowledged.
    durable: bool = True


class MemoryNotFound(TheusError, LookupError):
    pass


class AmbiguousKey(TheusError, LookupError):
    pass


def add_memory(project: Project, text: str, caps: Caps = DEFAULT_CAPS) -> MemoryChange:
    """Save a memory, redacted (its text names its topic file too). With the bridge on it
    becomes a topic file + pointer line in MEMORY.md; with it off, or MEMORY.md full, it is
    kept in the graph and exported by a later sync."""
    text = redact(text.strip())
    if not text:
        raise ValueError("a memory needs some text")
    key = keys.memory_key(text)
    change = MemoryChange(key)
    with project.lock:
        existing = project.graph.get(key)
        if existing is not None and existing.kind == "memory":
            change.created, change.topic = False, existing.data.get("topic", "")
            return change
        if not is_off("memdir"):
            mdir = memory_dir(project, caps)
            try:
                mdir.ensure()
                with mdir.lock():
                    index = mdir.read()
                    if index.find(key) is None:
                        change.topic = write_memory(mdir, key, text)
                    report = SyncReport()
                    sync_locked(project, mdir, report)
                    change.warnings.extend(report.warnings)
                if project.graph.get(key) is not None:
                    return change
            except (MemdirFull, OSError) as exc:
                change.warnings.append(f"kept in the graph only: {exc}")
        else:
            change.warnings.append(f"kept in the graph only: {OFF_REASON}")
        _upsert_graph_only(project, key, text, change)
    return change


def _upsert_graph_only(project: Project, key: str, text: str, change: MemoryChange) -> None:
    graph = project.graph
    node = Entry(0, text, key, shorten(first_line(text), 80), text, origin="graph").node()
    with graph.lock:
        graph.upsert(node)
        graph.remove_out_edges(key, ("derived-from",))
        Mentions(graph).link(key, text)
    report = SyncReport(added=[key])
    change.durable = save_changes(project, report)
    change.warnings.extend(report.warnings)


def edit_memory(project: Project, key: str, text: str, caps: Caps = DEFAULT_CAPS) -> MemoryChange:
    """Replace a memory's text (redacted). Its key stays: the key a person or a script holds
    still finds it after any number of edits."""
    text = redact(text.strip())
    if not text:
        raise ValueError("a memory needs some text")
    with project.lock:
        if is_off("memdir"):
            return _edit_graph_only(project, key, text)
        mdir = memory_dir(project, caps)
        mdir.ensure()
        with mdir.lock():
            entry = mdir.read().find(key)
            if entry is None:
                return _edit_graph_only(project, key, text)
            topic = _rewrite_entry(mdir, entry, text)
            report = SyncReport()
            sync_locked(project, mdir, report)
        return MemoryChange(entry.key, topic, False, report.warnings)


def _rewrite_entry(mdir: MemoryDir, entry: Entry, text: str) -> str:
    """The entry with `text`, under its key; returns its topic file. A plain index line's key
    is the hash of its text, so an edited one becomes a topic file that records the key."""
    if entry.topic and entry.origin != "graph":  # a person's topic file: edit its body only
        mdir.write_topic_body(entry.topic, text)
        return entry.topic
    name = entry.topic or mdir.new_topic_name(text)
    mdir.write_topic(name, entry.key, text)
    mdir.replace_line(entry.line, mdir.line_of(entry), pointer_line(name, text))
    return name


def _edit_graph_only(project: Project, key: str, text: str) -> MemoryChange:
    graph = project.graph
    node = graph.get(key)
    if node is None or node.kind != "memory":
        raise MemoryNotFound(key)
    change = MemoryChange(key, created=False)
    _upsert_graph_only(project, key, text, change)
    return change


def delete_memory(project: Project, key: str, caps: Caps = DEFAULT_CAPS) -> MemoryChange:
    """Remove a memory: its MEMORY.md line, the topic file the bridge wrote (a person's own
    topic file is kept), and its node."""
    with project.lock:
        mdir = memory_dir(project, caps)
        change = MemoryChange(key, created=False)
        if not is_off("memdir"):
            mdir.ensure()
            with mdir.lock():
                entry = mdir.read().find(key)
                if entry is not None:
                    mdir.replace_line(entry.line, mdir.line_of(entry), None)
                    if entry.topic and entry.origin == "graph":
                        atomic.remove(mdir.path / entry.topic)
                    elif entry.topic:
                        change.topic = entry.topic
                        change.warnings.append(f"topic file {entry.topic} kept")
                    report = SyncReport()
                    sync_locked(project, mdir, report)
                    change.warnings.extend(report.warnings)
                    return change
        node = project.graph.get(key)
        if node is None or node.kind != "memory":
            raise MemoryNotFound(key)
        with project.graph.lock:
            project.graph.remove_node(key)
        report = SyncReport(removed=[key])
        change.durable = save_changes(project, report)
        change.warnings.extend(report.warnings)
        return change


def resolve_key(project: Project, prefix: str) -> str:
    """A memory's full key from a unique prefix (`mem:` optional)."""
    wanted = prefix if prefix.startswith("mem:") else f"mem:{prefix}"
    if len(wanted) < len("mem:") + 4:  # like git: a shorter prefix is too easy to mistype
        raise AmbiguousKey(f"{prefix!r} is too short: give at least 4 characters of the key")
    found = sorted({n.key for n in project.graph.nodes("memory") if n.key.startswith(wanted)})
    if not found:
        raise MemoryNotFound(prefix)
    if len(found) > 1 and wanted not in found:
        raise AmbiguousKey(f"{prefix} matches {len(found)} memories: give more of the key")
    return wanted if wanted in found else found[0]


def memories(project: Project) -> list[Node]:
    """The graph's memory nodes, by source then title, for lists and panels."""
    return sorted(project.graph.nodes("memory"), key=lambda n: (n.source, n.label.casefold()))
