"""Markdown files with frontmatter, as the memory directory and episodes write them.

A small YAML subset: `key: value`, values plain, JSON-quoted or [lists]. Malformed lines are
reported as a `Problem` with their line number and skipped, never fatal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_PLAIN_VALUE = re.compile(r"^[^\s\"'\[\]{}#&*!|>%@`,?:-][^\n#]*$")


@dataclass(frozen=True, slots=True)
class Problem:
    """A malformed line or frontmatter: reported with where it is, then skipped."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


def render_frontmatter(meta: dict[str, Any]) -> str:
    lines = ["---"]
    for name, value in meta.items():
        if isinstance(value, list | tuple):
            text = json.dumps([str(v) for v in value], ensure_ascii=False)
        else:
            text = str(value)
            if not _PLAIN_VALUE.match(text) or text != text.strip() or ": " in text:
                text = json.dumps(text, ensure_ascii=False)
        lines.append(f"{name}: {text}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def parse_frontmatter(text: str, file: str) -> tuple[dict[str, Any], str, list[Problem]]:
    """Split `---` frontmatter from the body. A file without frontmatter is all body."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text, []
    meta: dict[str, Any] = {}
    problems: list[Problem] = []
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() == "---":
            body = "\n".join(lines[number:])
            return meta, body, problems
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, raw = line.partition(":")
        if not sep or not name.strip() or " " in name.strip():
            problems.append(
                Problem(file, number, f"frontmatter line is not `key: value`: {line!r}")
            )
            continue
        try:
            meta[name.strip()] = _parse_value(raw.strip())
        except ValueError as exc:
            problems.append(Problem(file, number, f"bad value for {name.strip()}: {exc}"))
    return meta, "", [*problems, Problem(file, 1, "frontmatter opened here is never closed")]


def _parse_value(raw: str) -> Any:
    if raw.startswith('"'):
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"unterminated or invalid quoted string {raw!r}") from exc
    if raw.startswith("'"):
        if len(raw) < 2 or not raw.endswith("'"):
            raise ValueError(f"unterminated quoted string {raw!r}")
        return raw[1:-1].replace("''", "'")
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise ValueError(f"unterminated list {raw!r}")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:  # a hand-written YAML flow list: [a.py, b.py]
            value = [p.strip().strip("'\"") for p in raw[1:-1].split(",") if p.strip()]
        if not isinstance(value, list):
            raise ValueError(f"not a list {raw!r}")
        return [str(v) for v in value]
    return raw


def shorten(text: str, limit: int) -> str:
    """One line of at most `limit` characters, cut at a word boundary when there is one."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:.-") + "…"


def first_line(text: str) -> str:
    """The first non-empty line, without Markdown heading marks."""
    for line in text.strip().split("\n"):
        line = line.strip().lstrip("#").strip()
        if line:
            return line
    return ""
