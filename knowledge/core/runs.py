"""What one run of the agent did, as the agent saw it happen: the record the memory keeps (an
episode at session end). Built by the agent from its own bookkeeping (applied edits,
successful reads, commands that ran, actions refused or failed), never guessed from chat
messages, so an episode never lists a refused edit as a changed file."""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.core.folding import fold
from knowledge.core.frontmatter import shorten

# The first line of every episode built this way (no model call at session end).
NOTE = "Recorded by Theus as it happened (no model call):"
MAX_LISTED = 10
# A request that asks the memory to keep something (compared folded: `knowledge.core.folding`).
ASKED_TO_REMEMBER = (
    "remember",
    "don't forget",
    "dont forget",
    "keep in mind",
    "make a note",
    "take note",
    "recuerd",
    "no olvides",
    "ten en cuenta",
    "apunta",
    "anota",
)


@dataclass(frozen=True, slots=True)
class RunSummary:
    requests: tuple[str, ...]  # requests whose turn completed, in order
    answer: str  # the last answer given
    outcome: str  # how the last turn ended: "answered", "failed", "cancelled", "max_turns"
    files_changed: tuple[str, ...] = ()  # edits and writes that were applied
    files_read: tuple[str, ...] = ()  # reads that succeeded
    commands: tuple[str, ...] = ()  # commands that ran, whatever their exit code
    not_done: tuple[str, ...] = ()  # refused or failed actions and requests, one line each

    @property
    def worth_keeping(self) -> bool:
        """Whether the run is an episode: it answered, and it changed a file, ran a command or
        was asked to remember something. A question answered from reading ("where is the
        login?") stays in its session: trivial runs would crowd real memories out of the
        block (three of them pushed a fact out)."""
        if not (self.requests and self.answer.strip()):
            return False
        asked = any(
            phrase in fold(request) for request in self.requests for phrase in ASKED_TO_REMEMBER
        )
        return bool(self.files_changed or self.commands or asked)

    @property
    def title(self) -> str:
        return f"Session: {shorten(self.requests[0], 70)}" if self.requests else "Session"

    def render(self) -> str:
        lines = [NOTE, "", "Requests:"]
        lines += [f"- {shorten(r, 200)}" for r in self.requests[:MAX_LISTED]]
        if len(self.requests) > MAX_LISTED:
            lines.append(f"- … and {len(self.requests) - MAX_LISTED} more")
        lines.append("")
        if self.files_changed:
            lines.append("Files changed: " + ", ".join(f"`{p}`" for p in self.files_changed))
        read = [p for p in self.files_read if p not in self.files_changed]
        if read:
            lines.append("Files read: " + ", ".join(f"`{p}`" for p in read))
        if self.commands:
            lines += ["Commands run:"]
            lines += [f"- `{shorten(c, 120)}`" for c in self.commands[:MAX_LISTED]]
        if self.not_done:
            lines += ["Not done:"] + [f"- {shorten(n, 160)}" for n in self.not_done[:MAX_LISTED]]
        lines += [f"Outcome: {self.outcome}", "", f"Last answer: {shorten(self.answer, 300)}"]
        return "\n".join(lines)
