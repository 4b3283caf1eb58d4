"""What an injection carries: a request's sections of context, and what a conversation has
read of them already.

Apart from `knowledge.memory.context`, which builds them, so that a process which only injects
a block built elsewhere (a one-shot run's first, from a forked child) imports no recall.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from knowledge.core.token_count import count_tokens

SectionKind = Literal["code", "memories", "facts", "examples"]
LEAD_HEAD = "Likely to change:"
ALSO = "also: "
# A file line: `path — summary`, `path; imports …`, `path: symbol`, or the bare path.
_FILE_LINE = re.compile(r"([^\s:;]+?)(?=$|; | — |: )")
# A definition of the lead: `path:first-last Label …`.
_LEAD_LINE = re.compile(r"[^\s:;]+:\d+(?:-\d+)? ")


@dataclass(frozen=True, slots=True)
class Section:
    kind: SectionKind
    text: str
    tokens: int


class Sections:
    """The text and tokens of a block's sections (`Block`, `ContextBlock`)."""

    sections: tuple[Section, ...]

    @property
    def block(self) -> str:
        """The sections as the one text injected (blank lines between them)."""
        return "\n\n".join(s.text for s in self.sections)

    @property
    def tokens(self) -> int:
        # The estimator counts word pieces, which the blank lines between sections never join.
        return sum(s.tokens for s in self.sections)


@dataclass(frozen=True)
class Block(Sections):
    """A request's sections, with its recall's best score (what decided them)."""

    sections: tuple[Section, ...] = ()
    examples: int = 0  # few-shot examples in the "examples" section
    best_score: float = 0.0

    def without(self, known: frozenset[str]) -> Block:
        """This block less what the conversation already carries (`known`: the lines of its
        earlier blocks still in its messages), which the model has read: a file an earlier
        block introduced is not introduced again (only its new symbols, under its bare path),
        a path an earlier "also:" named is not named again, other lines go when seen whole; a
        section's heading stays while one of its lines is new; the examples go or stay whole."""
        if not known:
            return self
        kept: list[Section] = []
        for section in self.sections:
            lines = section.text.splitlines()
            if section.kind == "examples":
                new = [] if all(line in known for line in lines) else lines
            else:
                head = lines[:1] if lines[0].endswith(":") else []
                body = lines[len(head) :]
                new = _new_code(body, known) if section.kind == "code" else _unseen(body, known)
                new = head + new if new else []
            if new == lines:
                kept.append(section)
            elif new:
                text = "\n".join(new)
                kept.append(Section(section.kind, text, count_tokens(text)))
        examples = self.examples if any(s.kind == "examples" for s in kept) else 0
        return Block(tuple(kept), examples, self.best_score)


def _unseen(lines: list[str], known: frozenset[str]) -> list[str]:
    return [line for line in lines if line not in known]


def _introduced(line: str) -> str | None:
    """The file a code line introduces; None for a symbol's detail line, a definition of
    the lead and the "also:" line."""
    if line.startswith((" ", ALSO)) or _LEAD_LINE.match(line):
        return None
    match = _FILE_LINE.match(line)
    return match.group(1) if match else None


def _new_code(lines: list[str], known: frozenset[str]) -> list[str]:
    """The code lines the model has not read: see `Block.without`. An indented line
    belongs to the line above it, which comes along as its anchor when it was known (a
    file line as its bare path); the lead's heading comes with its first new line."""
    files = {path for line in known if (path := _introduced(line))}
    named = files | {p for line in known if line.startswith(ALSO) for p in _also_paths(line)}
    out: list[str] = []
    anchor = ""  # the known line above, to be sent before its first new indented line
    heading = ""  # the lead's heading, to be sent before its first new line
    for line in lines:
        if line == LEAD_HEAD:
            heading, anchor = line, ""
            continue
        if heading and not (line.startswith(" ") or _LEAD_LINE.match(line)):
            heading = ""  # past the lead, its heading unsent: nothing of it was new
        if line.startswith(ALSO):
            rest = [p for p in _also_paths(line) if p not in named]
            new = [ALSO + ", ".join(rest)] if rest else []
        elif line.startswith(" "):
            new = [] if line in known else [anchor, line] if anchor else [line]
            anchor = "" if new else anchor
        else:
            path = _introduced(line)
            if line in known or (path is not None and path in files):
                anchor, new = path or line, []
            else:
                anchor, new = "", [line]
        if new and heading:
            out.append(heading)
            heading = ""
        out += new
    return out


def _also_paths(line: str) -> list[str]:
    return [p for p in line.removeprefix(ALSO).split(", ") if p]
