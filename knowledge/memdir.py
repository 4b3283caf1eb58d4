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
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowledge import atomic, keys
from knowledge.frontmatter import (
    Problem,
    first_line,
    parse_frontmatter,
    render_frontmatter,
    shorten,
)
from knowledge.graph import Node
from knowledge.mentions import Mentions
from knowledge.project import Project
from knowledge.store import StoreError
from knowledge.switches import is_off

log = logging.getLogger(__name__)

INDEX_NAME = "MEMORY.md"
LOCK_NAME = ".lock"
TEXT_CAP = 1500  # characters of a memory's text kept on its node
ENTRY_MAX = 200  # a longer memory goes to a topic file instead of a plain index line
_KEY_RE = re.compile(r"^mem:[0-9a-f]{40}$")
_ENTRY_RE = re.compile(r"^\s*[-*+]\s+(?P<body>.*)$")
_LINK_START = re.compile(r"^\[[^\]]*\]\(")
_POINTER_RE = re.compile(
    r"^\[(?P<title>[^\]]+)\]\((?P<target>[^)\s]+)\)\s*(?:(?:—|–|-|:)\s*(?P<hook>.*))?$"
)
_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def disabled() -> bool:
    return is_off("memdir")


@dataclass(frozen=True, slots=True)
class Caps:
    """How much of MEMORY.md is loaded, as in Claude Code: the first 200 lines or 25 KB."""

    lines: int = 200
    bytes: int = 25 * 1024

    def describe(self) -> str:
        return f"{self.lines} lines / {self.bytes // 1024} KB"


DEFAULT_CAPS = Caps()


# -- the files ---------------------------------------------------------------------------------
@dataclass(slots=True)
class Entry:
    """One MEMORY.md entry, resolved: what its memory node will hold."""

    line: int
    raw: str  # the line's text after the bullet
    key: str
    title: str
    text: str  # the memory: the entry itself, or the topic file's body
    topic: str = ""  # topic file name, for pointer lines
    origin: str = "memdir"  # "graph" for topic files the bridge wrote

    def node(self) -> Node:
        first = first_line(self.text)
        data: dict[str, Any] = {"text": self.text[:TEXT_CAP]}
        if self.topic:
            data["topic"] = self.topic
        return Node(
            key=self.key, kind="memory", label=self.title, summary=shorten(first, 200),
            source="graph" if self.origin == "graph" else "memdir", data=data,
        )


@dataclass(slots=True)
class Index:
    """MEMORY.md as parsed: the entries within the cap, those past it, and what was wrong."""

    entries: list[Entry] = field(default_factory=list)
    not_loaded: list[Entry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    caps: Caps = DEFAULT_CAPS

    @property
    def over_cap(self) -> bool:
        return self.lines > self.caps.lines or self.bytes > self.caps.bytes

    def cap_warning(self) -> str | None:
        if not self.over_cap:
            return None
        first = self.not_loaded[0].line if self.not_loaded else self.caps.lines + 1
        return (
            f"{INDEX_NAME} is over its cap ({self.lines} lines, {self.bytes / 1024:.1f} KB; "
            f"loaded up to {self.caps.describe()}): {len(self.not_loaded)} entries from line "
            f"{first} on are not loaded. Move details into topic files or remove old entries."
        )

    def warnings(self) -> list[str]:
        cap = self.cap_warning()
        return ([cap] if cap else []) + [str(p) for p in self.problems]

    def find(self, key: str) -> Entry | None:
        return next((e for e in [*self.entries, *self.not_loaded] if e.key == key), None)


class MemdirFull(Exception):
    """A new pointer line would land past the cap, where it would not be loaded."""


class MemoryDir:
    """The files of one memory directory. Every change is atomic and taken under a lock file,
    so a shell's `theus memory add` and the app's panel never lose each other's lines."""

    def __init__(self, path: Path, caps: Caps = DEFAULT_CAPS) -> None:
        self.path = path
        self.caps = caps
        self.index_path = path / INDEX_NAME

    def ensure(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        atomic.clean_orphans(self.path)

    def lock(self) -> AbstractContextManager[None]:
        return atomic.locked(self.path / LOCK_NAME)

    def read_index_text(self) -> str:
        try:
            # utf-8-sig: a BOM from a Windows editor must not make line 1 malformed
            return self.index_path.read_bytes().decode("utf-8-sig", errors="replace")
        except FileNotFoundError:
            return ""

    def read(self) -> Index:
        text = self.read_index_text()
        index = Index(caps=self.caps)
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        index.lines = len(lines)
        index.bytes = len(text.encode("utf-8"))
        seen: dict[str, int] = {}
        used = 0
        fence = False
        for number, line in enumerate(lines, start=1):
            used += len(line.encode("utf-8")) + 1
            loaded = number <= self.caps.lines and used <= self.caps.bytes
            if line.lstrip().startswith(("```", "~~~")):
                fence = not fence
                continue
            if fence:
                continue
            entry = self._entry(number, line, index.problems, loaded)
            if entry is None:
                continue
            if entry.key in seen:
                index.problems.append(Problem(
                    INDEX_NAME, number, f"same memory as line {seen[entry.key]}; ignored"))
                continue
            seen[entry.key] = number
            (index.entries if loaded else index.not_loaded).append(entry)
        return index

    def _entry(self, number: int, line: str, problems: list[Problem], loaded: bool
               ) -> Entry | None:
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "<!--")):
            return None
        match = _ENTRY_RE.match(line)
        if match is None:
            problems.append(Problem(
                INDEX_NAME, number,
                "not an entry (expected `- memory` or `- [Title](topic.md) — hook`); skipped"))
            return None
        body = match["body"].strip()
        if not body:
            problems.append(Problem(INDEX_NAME, number, "empty entry; skipped"))
            return None
        if not _LINK_START.match(body):
            return Entry(number, body, keys.memory_key(body), shorten(body, 80), body)
        pointer = _POINTER_RE.match(body)
        if pointer is None:
            problems.append(Problem(INDEX_NAME, number, f"broken link in entry {body!r}; skipped"))
            return None
        target = pointer["target"]
        if _SCHEME_RE.match(target):  # a link to the web is a plain memory that has a link
            return Entry(number, body, keys.memory_key(body), shorten(body, 80), body)
        return self._pointer(number, body, pointer["title"].strip(), target,
                             (pointer["hook"] or "").strip(), problems, loaded)

    def _pointer(self, number: int, body: str, title: str, target: str, hook: str,
                 problems: list[Problem], loaded: bool) -> Entry | None:
        topic = self.path / target
        if (target.startswith(("/", "\\")) or ".." in Path(target).parts
                or not target.endswith(".md") or target == INDEX_NAME):
            problems.append(Problem(
                INDEX_NAME, number, f"topic {target!r} must be a .md file in the memory folder"))
            return None
        if not loaded:  # past the cap: reported by key, its topic file is not read
            return Entry(number, body, keys.memory_key(body), title, hook or title, target)
        try:
            raw = topic.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            problems.append(Problem(INDEX_NAME, number, f"topic file {target} not found; skipped"))
            return None
        meta, content, bad = parse_frontmatter(raw, target)
        if bad:
            problems.extend(bad)
            problems.append(Problem(INDEX_NAME, number, f"topic file {target} is malformed; "
                                    "skipped"))
            return None
        content = content.strip() or hook or title
        if meta.get("origin") == "graph":
            key = meta.get("key", "")
            if not isinstance(key, str) or not _KEY_RE.match(key):
                key = keys.memory_key(content)
            return Entry(number, body, key, title, content, target, "graph")
        return Entry(number, body, keys.memory_key(body), title, content, target)

    # -- changes ----------------------------------------------------------------------------
    def append_line(self, line: str) -> None:
        """Add one index line at the end; refuses (MemdirFull) when it would not be loaded."""
        atomic.write_text(self.index_path, self._appended(line))

    def check_room(self, line: str) -> None:
        self._appended(line)

    def _appended(self, line: str) -> str:
        text = self.read_index_text()
        if text and not text.endswith("\n"):
            text += "\n"
        new = text + line + "\n"
        if new.count("\n") > self.caps.lines or len(new.encode("utf-8")) > self.caps.bytes:
            raise MemdirFull(
                f"{INDEX_NAME} is full ({self.caps.describe()}): a new line there would not be "
                "loaded; free some lines")
        return new

    def replace_line(self, number: int, expected: str, new: str | None) -> bool:
        """Replace (or, with None, delete) the line `number` if it still reads `expected`;
        otherwise the first line that does. False when no line matches any more."""
        lines = self.read_index_text().split("\n")
        candidates = [number - 1] if 0 < number <= len(lines) else []
        candidates += [i for i, text in enumerate(lines) if i != number - 1]
        for i in candidates:
            if lines[i] == expected:
                if new is None:
                    del lines[i]
                else:
                    lines[i] = new
                atomic.write_text(self.index_path, "\n".join(lines))
                return True
        return False

    def line_of(self, entry: Entry) -> str:
        lines = self.read_index_text().split("\n")
        if 0 < entry.line <= len(lines) and entry.raw in lines[entry.line - 1]:
            return lines[entry.line - 1]
        return next((ln for ln in lines if (m := _ENTRY_RE.match(ln)) and m["body"].strip()
                     == entry.raw), "")

    def new_topic_name(self, text: str) -> str:
        base = keys.slugify(first_line(text), 40)
        name, n = f"{base}.md", 1
        while (self.path / name).exists() or name == INDEX_NAME:
            n += 1
            name = f"{base}-{n}.md"
        return name

    def write_topic(self, name: str, key: str, text: str, created: str) -> None:
        first = first_line(text)
        meta = {
            "name": shorten(first, 60),
            "description": shorten(first, 150),
            "type": "project",
            "origin": "graph",
            "key": key,
            "created": created,
        }
        atomic.write_text(self.path / name, render_frontmatter(meta) + "\n" + text.strip() + "\n")


def pointer_line(name: str, text: str) -> str:
    first = first_line(text)
    title = shorten(first, 60)
    hook = shorten(first, 150) if len(first) > 60 else ""
    title = title.replace("[", "(").replace("]", ")")
    return f"- [{title}]({name})" + (f" — {hook}" if hook else "")


# -- the bridge --------------------------------------------------------------------------------
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
            "enabled": self.enabled, "entries": self.entries, "not_loaded": self.not_loaded,
            "added": self.added, "updated": self.updated, "removed": self.removed,
            "exported": self.exported, "warnings": self.warnings,
            "seconds": round(self.seconds, 4),
        }


_OFF = "memory bridge is off (THEUS_NO_MEMDIR=1)"


def memory_dir(project: Project, caps: Caps = DEFAULT_CAPS) -> MemoryDir:
    return MemoryDir(project.paths.memory, caps)


def sync(project: Project, caps: Caps = DEFAULT_CAPS) -> SyncReport:
    """Bring the graph's memory nodes in line with the memory directory, then export memories
    saved in the graph that have no topic file yet. Fails open: problems become warnings."""
    start = time.perf_counter()
    if disabled():
        return SyncReport(enabled=False, warnings=[_OFF])
    mdir = memory_dir(project, caps)
    report = SyncReport()
    try:
        mdir.ensure()
        with project.lock, mdir.lock():
            with project.graph.lock:  # one scan of the graph: it can hold 100k nodes
                present = list(project.graph.nodes("memory"))
            _export_pending(mdir, present, report)
            _sync_locked(project, mdir, report, present)
    except OSError as exc:
        report.warnings.append(f"memory directory {mdir.path} unusable: {exc}")
    report.seconds = time.perf_counter() - start
    return report


def _sync_locked(project: Project, mdir: MemoryDir, report: SyncReport,
                 present: list[Node] | None = None) -> None:
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
    _save(project, report)


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
            _write_memory(mdir, node.key, node.data.get("text") or node.label)
        except MemdirFull as exc:
            report.warnings.append(
                f"{len(pending) - done} memories kept in the graph only: {exc}")
            return
        report.exported.append(node.key)


def _write_memory(mdir: MemoryDir, key: str, text: str) -> str:
    """Topic file first, pointer second: a crash between them leaves an unlisted topic file,
    never a pointer to nothing."""
    name = mdir.new_topic_name(text)
    line = pointer_line(name, text)
    mdir.check_room(line)
    mdir.write_topic(name, key, text, time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    mdir.append_line(line)
    return name


def _save(project: Project, report: SyncReport) -> bool:
    """Save what the report changed; False (and a warning) when the store refused it."""
    if not report.changed:
        return True
    try:
        project.save()
    except StoreError as exc:  # the graph keeps the change and retries on the next save
        report.warnings.append(str(exc))
        return False
    return True


# -- the API for the agent's remember tool, `theus memory`, and the app's memories panel ------
@dataclass(slots=True)
class MemoryChange:
    key: str
    topic: str = ""
    created: bool = True
    warnings: list[str] = field(default_factory=list)
    # On disk somewhere that survives this process: MEMORY.md or the graph store. False when
    # both refused it (full or read-only disk): the change is not acknowledged.
    durable: bool = True


class MemoryNotFound(LookupError):
    pass


class AmbiguousKey(LookupError):
    pass


def add_memory(project: Project, text: str, caps: Caps = DEFAULT_CAPS) -> MemoryChange:
    """Save a memory. With the bridge on it becomes a topic file + pointer line in MEMORY.md;
    with it off, or MEMORY.md full, it is kept in the graph and exported by a later sync."""
    text = text.strip()
    if not text:
        raise ValueError("a memory needs some text")
    key = keys.memory_key(text)
    change = MemoryChange(key)
    with project.lock:
        existing = project.graph.get(key)
        if existing is not None and existing.kind == "memory":
            change.created, change.topic = False, existing.data.get("topic", "")
            return change
        if not disabled():
            mdir = memory_dir(project, caps)
            try:
                mdir.ensure()
                with mdir.lock():
                    index = mdir.read()
                    if index.find(key) is None:
                        change.topic = _write_memory(mdir, key, text)
                    report = SyncReport()
                    _sync_locked(project, mdir, report)
                    change.warnings.extend(report.warnings)
                if project.graph.get(key) is not None:
                    return change
            except (MemdirFull, OSError) as exc:
                change.warnings.append(f"kept in the graph only: {exc}")
        else:
            change.warnings.append(f"kept in the graph only: {_OFF}")
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
    change.durable = _save(project, report)
    change.warnings.extend(report.warnings)


def edit_memory(project: Project, key: str, text: str, caps: Caps = DEFAULT_CAPS
                ) -> MemoryChange:
    """Replace a memory's text; returns its new key (the key is the hash of the text)."""
    text = text.strip()
    if not text:
        raise ValueError("a memory needs some text")
    with project.lock:
        if disabled():
            return _edit_graph_only(project, key, text)
        mdir = memory_dir(project, caps)
        mdir.ensure()
        with mdir.lock():
            entry = mdir.read().find(key)
            if entry is None:
                return _edit_graph_only(project, key, text)
            new_key = _rewrite_entry(mdir, entry, text)
            report = SyncReport()
            _sync_locked(project, mdir, report)
        return MemoryChange(new_key, entry.topic, False, report.warnings)


def _rewrite_entry(mdir: MemoryDir, entry: Entry, text: str) -> str:
    line = mdir.line_of(entry)
    if entry.topic and entry.origin != "graph":  # a person's topic file: edit its body only
        raw = (mdir.path / entry.topic).read_text(encoding="utf-8", errors="replace")
        meta, _, _ = parse_frontmatter(raw, entry.topic)
        head = render_frontmatter(meta) + "\n" if meta else ""
        atomic.write_text(mdir.path / entry.topic, head + text + "\n")
        return entry.key
    new_key = keys.memory_key(text)
    if (not entry.topic and "\n" not in text and len(text) <= ENTRY_MAX
            and not _LINK_START.match(text)):
        prefix = line[: len(line) - len(line.lstrip())]
        mdir.replace_line(entry.line, line, f"{prefix}- {text}")
        return new_key
    name = entry.topic or mdir.new_topic_name(text)
    mdir.write_topic(name, new_key, text, time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    mdir.replace_line(entry.line, line, pointer_line(name, text))
    return new_key


def _edit_graph_only(project: Project, key: str, text: str) -> MemoryChange:
    graph = project.graph
    node = graph.get(key)
    if node is None or node.kind != "memory":
        raise MemoryNotFound(key)
    new_key = keys.memory_key(text)
    with graph.lock:
        graph.remove_node(key)
    change = MemoryChange(new_key, created=False)
    _upsert_graph_only(project, new_key, text, change)
    return change


def delete_memory(project: Project, key: str, caps: Caps = DEFAULT_CAPS) -> MemoryChange:
    """Remove a memory: its MEMORY.md line, the topic file the bridge wrote (a person's own
    topic file is kept), and its node."""
    with project.lock:
        mdir = memory_dir(project, caps)
        change = MemoryChange(key, created=False)
        if not disabled():
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
                    _sync_locked(project, mdir, report)
                    change.warnings.extend(report.warnings)
                    return change
        node = project.graph.get(key)
        if node is None or node.kind != "memory":
            raise MemoryNotFound(key)
        with project.graph.lock:
            project.graph.remove_node(key)
        report = SyncReport(removed=[key])
        change.durable = _save(project, report)
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


# -- watching the directory --------------------------------------------------------------------
class MemdirWatcher:
    """Re-sync when the memory directory changes on disk (a person editing MEMORY.md).

    Runs watchfiles in a daemon thread; `on_sync` gets each report from that thread (a Textual
    app hands it over with `call_from_thread`). Our own writes come back as events too, and the
    sync they trigger finds nothing to do.
    """

    def __init__(self, project: Project, on_sync: Callable[[SyncReport], None] | None = None,
                 caps: Caps = DEFAULT_CAPS, debounce_ms: int = 200) -> None:
        self.project = project
        self.on_sync = on_sync
        self.caps = caps
        self.debounce_ms = debounce_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()

    def start(self) -> bool:
        if disabled() or self._thread is not None:
            return False
        try:
            memory_dir(self.project, self.caps).ensure()
        except OSError as exc:  # fail open: no watching, the session goes on
            log.warning("memory directory not watched: %s", exc)
            return False
        self._thread = threading.Thread(target=self._run, name="theus-memdir", daemon=True)
        self._thread.start()
        return True

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        from watchfiles import watch

        path = self.project.paths.memory
        try:
            for _changes in watch(path, watch_filter=_relevant_in(path), stop_event=self._stop,
                                  debounce=self.debounce_ms, step=50, yield_on_timeout=True,
                                  rust_timeout=50, raise_interrupt=False):
                self.ready.set()
                if not _changes:
                    continue
                report = sync(self.project, self.caps)
                if self.on_sync is not None:
                    self.on_sync(report)
        except Exception:  # fail open: the bridge stops following, the session goes on
            log.exception("memory directory watcher stopped")
        finally:
            self.ready.set()


def _relevant_in(base: Path) -> Callable[[object, str], bool]:
    """Markdown files of the memory folder itself: not temp files, not episodes."""

    real = base.resolve()  # watchfiles reports real paths (/tmp may be /private/tmp)

    def relevant(_change: object, path: str) -> bool:
        name = os.path.basename(path)
        if not name.endswith(".md") or atomic.is_temp_name(name):
            return False
        try:
            return Path(path).resolve().relative_to(real).parts[0] != "episodes"
        except (ValueError, OSError):
            return False

    return relevant


# -- status ------------------------------------------------------------------------------------
def status_section(project: Project) -> dict[str, Any]:
    path = project.paths.memory
    if disabled():
        return {"enabled": False, "reason": _OFF, "dir": str(path)}
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
