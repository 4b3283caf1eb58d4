"""Completions under the request box while you type: slash commands after `/`, project files
(fuzzy, from the graph) after `@`. The request box keeps the focus; it hands this list Up,
Down, Tab, Enter and Escape while it is shown."""

from __future__ import annotations

import re
from dataclasses import dataclass

from textual.fuzzy import Matcher
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from tui.slash import REGISTRY

SHOWN = 8  # rows of suggestions
# The word being typed at the cursor, when it is a file mention: `@` at a word's start.
AT_WORD = re.compile(r"(?:^|\s)@(?P<query>[^\s:]*)$")


@dataclass(frozen=True, slots=True)
class Completing:
    """What the text before the cursor is completing: `kind` "slash" or "file", the typed
    `query`, and where the replaced word starts in the line (its `@` or `/`)."""

    kind: str
    query: str
    start: int


def completing(text: str, line: int, column: int) -> Completing | None:
    before = text.split("\n")[line][:column] if text else ""
    if line == 0 and before.startswith("/") and " " not in before and "\n" not in text:
        return Completing("slash", before[1:], 0)
    found = AT_WORD.search(before)
    if found:
        return Completing("file", found["query"], found.start("query") - 1)
    return None


def slash_options(query: str) -> list[tuple[str, str]]:
    """(completion, label) of the commands starting with `query`, in the help's order."""
    return [
        (f"/{c.name} ", f"/{c.name}  {c.help}")
        for c in REGISTRY.slash()
        if c.name.startswith(query.lower())
    ]


def file_options(query: str, paths: list[str], limit: int = 50) -> list[tuple[str, str]]:
    """Paths matching `query` fuzzily (letters in order), best first; all of them at first."""
    if not query:
        return [(f"@{p} ", p) for p in paths[:limit]]
    matcher = Matcher(query)
    scored = [(score, p) for p in paths if (score := matcher.match(p)) > 0]
    scored.sort(key=lambda sp: (-sp[0], len(sp[1]), sp[1]))
    return [(f"@{p} ", p) for _, p in scored[:limit]]


class Suggestions(OptionList):
    DEFAULT_CSS = f"""
    Suggestions {{ height: auto; max-height: {SHOWN + 2}; display: none; border: round $accent;
                   padding: 0 1; }}
    Suggestions.-on {{ display: block; }}
    """

    def __init__(self) -> None:
        super().__init__(id="suggestions")
        self.can_focus = False
        self.completions: list[str] = []
        self.target: Completing | None = None

    def show(self, target: Completing, rows: list[tuple[str, str]]) -> None:
        self.target = target
        self.completions = [completion for completion, _ in rows]
        self.clear_options()
        self.add_options([Option(label) for _, label in rows])
        self.set_class(bool(rows), "-on")
        if rows:
            self.highlighted = 0

    def hide(self) -> None:
        self.target = None
        self.remove_class("-on")

    @property
    def shown(self) -> bool:
        return self.has_class("-on")

    def move(self, step: int) -> None:
        if self.option_count:
            current = self.highlighted or 0
            self.highlighted = (current + step) % self.option_count

    def chosen(self) -> str | None:
        if not self.shown or self.highlighted is None:
            return None
        return self.completions[self.highlighted]
