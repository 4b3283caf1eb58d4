"""The MEMORY.md format: what an index line means, and how the text of the index parses.

No file I/O here: the caller hands over the index text and a way to read a topic file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowledge.core import keys
from knowledge.core.frontmatter import (
    Problem,
    first_line,
    parse_frontmatter,
    render_frontmatter,
    shorten,
)
from knowledge.core.graph import Node
from knowledge.core.redact import redact

INDEX_NAME = "MEMORY.md"
TEXT_CAP = 1500  # characters of a memory's text kept on its node
ENTRY_MAX = 200  # a longer memory goes to a topic file instead of a plain index line
_KEY_RE = re.compile(r"^mem:[0-9a-f]{40}$")
_ENTRY_RE = re.compile(r"^\s*[-*+]\s+(?P<body>.*)$")
_LINK_START = re.compile(r"^\[[^\]]*\]\(")
_POINTER_RE = re.compile(
    r"^\[(?P<title>[^\]]+)\]\((?P<target>[^)\s]+)\)\s*(?:(?:—|–|-|:)\s*(?P<hook>.*))?$"
)
_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")

# Reads one topic file of the memory folder by name; raises OSError when it cannot.
ReadTopic = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Caps:
    """How much of MEMORY.md is loaded, as in Claude Code: the first 200 lines or 25 KB."""

    lines: int = 200
    bytes: int = 25 * 1024

    def describe(self) -> str:
        return f"{self.lines} lines / {self.bytes // 1024} KB"


DEFAULT_CAPS = Caps()


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
        """The entry's node, redacted: a person may write anything into MEMORY.md, and the
        file is theirs, but the graph is stored, injected and served."""
        text = redact(self.text)
        data: dict[str, Any] = {"text": text[:TEXT_CAP]}
        if self.topic:
            data["topic"] = self.topic
        return Node(
            key=self.key,
            kind="memory",
            label=redact(self.title),
            summary=shorten(first_line(text), 200),
            source="graph" if self.origin == "graph" else "memdir",
            data=data,
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


def entry_body(line: str) -> str | None:
    """The text after a line's bullet, or None when the line is not a bullet."""
    match = _ENTRY_RE.match(line)
    return None if match is None else match["body"].strip()


def fits_on_line(text: str) -> bool:
    """A memory short and plain enough to be its own index line (no topic file)."""
    return "\n" not in text and len(text) <= ENTRY_MAX and not _LINK_START.match(text)


def pointer_line(name: str, text: str) -> str:
    first = first_line(text)
    title = shorten(first, 60)
    hook = shorten(first, 150) if len(first) > 60 else ""
    title = title.replace("[", "(").replace("]", ")")
    return f"- [{title}]({name})" + (f" — {hook}" if hook else "")


def topic_text(key: str, text: str, created: str) -> str:
    """A topic file the bridge writes: `origin: graph` and the node's key let the next sync
    resolve its pointer to the same memory instead of importing it a second time."""
    first = first_line(text)
    meta = {
        "name": shorten(first, 60),
        "description": shorten(first, 150),
        "type": "project",
        "origin": "graph",
        "key": key,
        "created": created,
    }
    return render_frontmatter(meta) + "\n" + text.strip() + "\n"


def parse_index(text: str, caps: Caps, read_topic: ReadTopic) -> Index:
    index = Index(caps=caps)
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
        loaded = number <= caps.lines and used <= caps.bytes
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            continue
        if fence:
            continue
        entry = _entry(number, line, index.problems, loaded, read_topic)
        if entry is None:
            continue
        if entry.key in seen:
            index.problems.append(
                Problem(INDEX_NAME, number, f"same memory as line {seen[entry.key]}; ignored")
            )
            continue
        seen[entry.key] = number
        (index.entries if loaded else index.not_loaded).append(entry)
    return index


def _entry(
    number: int, line: str, problems: list[Problem], loaded: bool, read_topic: ReadTopic
) -> Entry | None:
    stripped = line.strip()
    if not stripped or stripped.startswith(("#", "<!--")):
        return None
    body = entry_body(line)
    if body is None:
        problems.append(
            Problem(
                INDEX_NAME,
                number,
                "not an entry (expected `- memory` or `- [Title](topic.md) — hook`); skipped",
            )
        )
        return None
    if not body:
        problems.append(Problem(INDEX_NAME, number, "empty entry; skipped"))
        return None
    if not _LINK_START.match(body):
        return Entry(number, body, keys.memory_key(body), shorten(body, 80), body)
    pointer = _POINTER_RE.match(body)
    if pointer is None:
        problems.append(Problem(INDEX_NAME, number, f"broken link in entry {body!r}; skipped"))
        return None
    if _SCHEME_RE.match(pointer["target"]):  # a link to the web is a plain memory with a link
        return Entry(number, body, keys.memory_key(body), shorten(body, 80), body)
    return _pointer(number, body, pointer, problems, loaded, read_topic)


def _pointer(
    number: int,
    body: str,
    pointer: re.Match[str],
    problems: list[Problem],
    loaded: bool,
    read_topic: ReadTopic,
) -> Entry | None:
    title, target = pointer["title"].strip(), pointer["target"]
    hook = (pointer["hook"] or "").strip()
    if (
        target.startswith(("/", "\\"))
        or ".." in Path(target).parts
        or not target.endswith(".md")
        or target == INDEX_NAME
    ):
        problems.append(
            Problem(INDEX_NAME, number, f"topic {target!r} must be a .md file in the memory folder")
        )
        return None
    if not loaded:  # past the cap: reported by key, its topic file is not read
        return Entry(number, body, keys.memory_key(body), title, hook or title, target)
    try:
        raw = read_topic(target)
    except OSError:
        problems.append(Problem(INDEX_NAME, number, f"topic file {target} not found; skipped"))
        return None
    meta, content, bad = parse_frontmatter(raw, target)
    if bad:
        problems.extend(bad)
        problems.append(Problem(INDEX_NAME, number, f"topic file {target} is malformed; skipped"))
        return None
    content = content.strip() or hook or title
    if meta.get("origin") == "graph":
        key = meta.get("key", "")
        if not isinstance(key, str) or not _KEY_RE.match(key):
            key = keys.memory_key(content)
        return Entry(number, body, key, title, content, target, "graph")
    return Entry(number, body, keys.memory_key(body), title, content, target)
