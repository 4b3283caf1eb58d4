"""The files of a memory directory on disk: reading MEMORY.md, changing its lines, writing
topic files, all atomic and under the directory's lock file."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from pathlib import Path

from knowledge.core import atomic, keys
from knowledge.core.errors import TheusError
from knowledge.core.frontmatter import first_line, parse_frontmatter, render_frontmatter
from knowledge.memdir.format import (
    DEFAULT_CAPS,
    INDEX_NAME,
    Caps,
    Entry,
    Index,
    entry_body,
    parse_index,
    topic_text,
)

LOCK_NAME = ".lock"


class MemdirFull(TheusError):
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
        return parse_index(self.read_index_text(), self.caps, self._read_topic)

    def _read_topic(self, name: str) -> str:
        return (self.path / name).read_bytes().decode("utf-8", errors="replace")

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
                "loaded; free some lines"
            )
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
        return next((ln for ln in lines if entry_body(ln) == entry.raw), "")

    def new_topic_name(self, text: str) -> str:
        base = keys.slugify(first_line(text), 40)
        name, n = f"{base}.md", 1
        while (self.path / name).exists() or name == INDEX_NAME:
            n += 1
            name = f"{base}-{n}.md"
        return name

    def write_topic(self, name: str, key: str, text: str) -> None:
        created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        atomic.write_text(self.path / name, topic_text(key, text, created))

    def write_topic_body(self, name: str, text: str) -> None:
        """Replace the body of a person's topic file, keeping its frontmatter as it is."""
        raw = (self.path / name).read_text(encoding="utf-8", errors="replace")
        meta, _, _ = parse_frontmatter(raw, name)
        head = render_frontmatter(meta) + "\n" if meta else ""
        atomic.write_text(self.path / name, head + text + "\n")
