"""Markdown extractor: heading outline, summaries and inline-code identifiers.

A line scanner rather than a full CommonMark parser: the index only needs the outline, and a
scanner is linear, cannot raise on odd input, and keeps line numbers exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.index.model import Extract, Section

SUMMARY_LIMIT = 160

_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")
_SETEXT = re.compile(r"(=+|-+)[ \t]*")
# Lines that cannot be a setext heading's text: list items, quotes, tables and HTML.
_NOT_PARAGRAPH = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)|[>|<]")
_THEMATIC_BREAK = re.compile(r"(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,}")
# Badges, images, raw HTML, table rules and MDX imports/exports open many docs but say
# nothing as a summary.
_DECORATION = re.compile(r"<|!\[|\[!\[|\|?[ \t]*:?-{3,}|(?:import|export)[ \t]")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
# What a doc writes when it means a symbol: `parse_config`, `Cart.total`, `io::Read`, `run()`.
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*")

# Line kinds. Only TEXT lines can become summaries.
BLANK, TEXT, HEADING, CODE = range(4)


@dataclass(slots=True)
class _Heading:
    title: str
    level: int
    index: int  # 0-based line index


def extract(data: bytes) -> Extract:
    text = data.decode("utf-8-sig", errors="replace")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()  # the terminating newline does not start another line
    kinds, headings = _scan(lines)
    sections = _sections(lines, kinds, headings)
    return Extract(
        language="markdown",
        summary=_summary(lines, kinds, headings),
        identifiers=_identifiers(lines, kinds),
        sections=sections,
        lines=len(lines),
    )


def _indent(line: str) -> int:
    """Indentation width, tabs counting as four columns as in CommonMark.

    Only whether it reaches 4 matters, so at most four characters are looked at.
    """
    width = 0
    for char in line[:4]:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
    return width


def _front_matter_end(lines: list[str]) -> int:
    """Index of the first line after YAML/TOML front matter (0 when there is none).

    Without this, the closing `---` of front matter reads as a setext underline.
    """
    if not lines or lines[0].rstrip() not in ("---", "+++"):
        return 0
    marker = lines[0].rstrip()
    for index in range(1, len(lines)):
        if lines[index].rstrip() == marker:
            return index + 1
    return 0


def _atx(stripped: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line with indentation removed, else None."""
    level = len(stripped) - len(stripped.lstrip("#"))
    if not 1 <= level <= 6:
        return None
    rest = stripped[level:]
    if rest and rest[0] not in " \t":
        return None  # "#hashtag" is not a heading
    title = rest.strip()
    # An optional closing run of '#' must be preceded by a space: "# C#" keeps its '#'.
    closing = title.rstrip("#")
    if closing != title and (closing == "" or closing[-1] in " \t"):
        title = closing.rstrip()
    return level, title


def _scan(lines: list[str]) -> tuple[list[int], list[_Heading]]:
    """Classify every line and collect headings in document order."""
    start = _front_matter_end(lines)
    kinds = [CODE] * start + [BLANK] * (len(lines) - start)
    headings: list[_Heading] = []
    fence = ""  # the opening fence while inside a fenced block
    paragraph: list[int] = []  # indices of the open paragraph's lines (setext candidates)
    # Inside a list item or quote: indented lines continue it (not code) and unindented ones
    # are lazy continuations, which CommonMark never turns into setext headings.
    container = False
    for index in range(start, len(lines)):
        line = lines[index]
        indent = _indent(line)
        stripped = line.strip()
        if fence:
            kinds[index] = CODE
            if indent < 4 and stripped.startswith(fence) and stripped.strip(fence[0]) == "":
                fence = ""
            continue
        if not stripped:
            paragraph = []
            continue
        if indent >= 4 and not paragraph and not container:
            kinds[index] = CODE  # indented code block
            continue
        if indent >= 4:
            kinds[index] = TEXT  # continues a paragraph or a list item
            if paragraph:
                paragraph.append(index)
            continue
        opening = _FENCE.fullmatch(stripped)
        # A backtick fence's info string may not contain backticks (it is inline code then).
        if opening and not (opening[1][0] == "`" and "`" in opening[2]):
            fence = opening[1]
            kinds[index] = CODE
            paragraph = []
            continue
        atx = _atx(stripped)
        if atx:
            if atx[1]:
                headings.append(_Heading(atx[1], atx[0], index))
            kinds[index] = HEADING
            paragraph, container = [], False
            continue
        if paragraph and _SETEXT.fullmatch(stripped):
            title = " ".join(lines[i].strip() for i in paragraph)
            headings.append(_Heading(title, 1 if stripped[0] == "=" else 2, paragraph[0]))
            for i in [*paragraph, index]:
                kinds[i] = HEADING
            paragraph = []
            continue
        if _THEMATIC_BREAK.fullmatch(stripped):
            paragraph, container = [], False
            continue
        kinds[index] = TEXT
        if _NOT_PARAGRAPH.match(stripped):
            paragraph, container = [], True
        elif paragraph or not container or kinds[index - 1] == BLANK:
            paragraph.append(index)
            container = container and kinds[index - 1] != BLANK
    return kinds, headings


def _sections(lines: list[str], kinds: list[int], headings: list[_Heading]) -> list[Section]:
    # next_text[i]: first prose line at or after i, so each summary is found in O(1).
    next_text = [len(lines)] * (len(lines) + 1)
    for index in range(len(lines) - 1, -1, -1):
        next_text[index] = index if _is_prose(lines[index], kinds[index]) else next_text[index + 1]
    sections = [
        Section(title=h.title, level=h.level, line=h.index + 1, end_line=len(lines))
        for h in headings
    ]
    # A stack of open sections: a heading closes every open one of the same or deeper level.
    open_sections: list[Section] = []
    for section in sections:
        while open_sections and open_sections[-1].level >= section.level:
            open_sections.pop().end_line = section.line - 1
        open_sections.append(section)
    for section in sections:
        first = next_text[section.line]  # section.line is 1-based: the line after the heading
        if first < section.end_line:
            section.summary = _cap(lines[first])
    return sections


def _summary(lines: list[str], kinds: list[int], headings: list[_Heading]) -> str:
    for heading in headings:
        if heading.level == 1:
            return _cap(heading.title)
    for line, kind in zip(lines, kinds, strict=True):
        if _is_prose(line, kind):
            return _cap(line)
    return ""


def _is_prose(line: str, kind: int) -> bool:
    return kind == TEXT and not _DECORATION.match(line.strip())


def _identifiers(lines: list[str], kinds: list[int]) -> set[str]:
    found: set[str] = set()
    for line, kind in zip(lines, kinds, strict=True):
        if kind in (TEXT, HEADING) and "`" in line:
            for span in _CODE_SPAN.findall(line):
                name = span.strip().removesuffix("()")
                if _IDENTIFIER.fullmatch(name):
                    found.add(name)
    return found


def _cap(text: str) -> str:
    text = text.strip()
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1].rstrip() + "…"
