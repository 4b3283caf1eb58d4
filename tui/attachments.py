"""`@path` and `@path:10-40` in a request: the file (or those lines) attached to what the model
receives, as Claude Code and Aider do.

Read through the tools' jail, so an attachment never leaves the project, never reads a secret
file (.env*, keys) or the Theus data folder, and goes through the one redaction step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from knowledge.core.redact import redact
from theus.tools.base import ToolError
from theus.tools.files import read_jailed_text
from theus.tools.jail import Jail, JailError, protected_reason

# `@` at the start of a word (not in an e-mail address), then a path and an optional range.
MENTION = re.compile(r"(?<!\S)@(?P<path>[^\s:]+)(?::(?P<start>\d+)(?:-(?P<end>\d+))?)?")
ATTACH_CHARS = 60_000  # one file's share of the request; the model can `read` the rest


@dataclass(frozen=True, slots=True)
class Attached:
    path: str
    span: str  # "10-40", or "" for the whole file
    lines: int
    error: str = ""  # why it was not attached (the mention then stays plain text)

    def describe(self) -> str:
        where = f"{self.path}:{self.span}" if self.span else self.path
        if self.error:
            return f"not attached: {self.error}"
        return f"attached {where} ({self.lines} lines)"


def mentions(text: str) -> list[re.Match[str]]:
    return list(MENTION.finditer(text))


def expand(root: Path, text: str) -> tuple[str, list[Attached]]:
    """`text` with each mentioned file appended in a <file> block, and what was attached.
    Blocking (reads files): run it off the event loop."""
    jail = Jail(root)
    blocks: list[str] = []
    found: list[Attached] = []
    seen: set[tuple[str, str]] = set()
    for match in mentions(text):
        raw, start, end = match["path"], match["start"], match["end"]
        span = f"{start}-{end or start}" if start else ""
        if (raw, span) in seen:
            continue
        seen.add((raw, span))
        try:
            body, rel, count = _read(jail, raw, start, end)
        except (JailError, ToolError) as exc:
            found.append(Attached(raw, span, 0, str(exc)))
            continue
        lines_attr = f' lines="{span}"' if span else ""
        blocks.append(f'<file path="{rel}"{lines_attr}>\n{body}\n</file>')
        found.append(Attached(rel, span, count))
    if not blocks:
        return text, found
    return text + "\n\nAttached by the user:\n" + "\n".join(blocks), found


def _read(jail: Jail, raw: str, start: str | None, end: str | None) -> tuple[str, str, int]:
    resolved = jail.resolve(raw)
    protected = protected_reason(jail, resolved)
    if protected and not protected[1]:  # secrets and the data folder; never attached
        raise JailError(f"{raw}: {protected[0]}, never attached")
    text, resolved = read_jailed_text(jail, raw)
    lines = text.splitlines()
    if start:
        first, last = int(start), int(end or start)
        if first < 1 or last < first:
            raise ToolError(f"{raw}:{start}-{end}: give a range such as 10-40")
        if first > len(lines):
            raise ToolError(f"{raw} has {len(lines)} lines; {first} is past the end")
        lines = lines[first - 1 : last]
    body = redact("\n".join(lines))
    if len(body) > ATTACH_CHARS:
        body = body[:ATTACH_CHARS] + f"\n… (cut at {ATTACH_CHARS} characters; read the rest)"
    return body, jail.rel(resolved), len(lines)
