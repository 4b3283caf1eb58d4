"""The request box: multi-line, Enter sends, history on up/down at the edges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from tui.widgets.suggestions import Suggestions


class PromptInput(TextArea):
    """Enter sends; Ctrl+J (or Shift+Enter where the terminal reports it) adds a line.
    Up on the first line and Down on the last walk the history of sent requests."""

    HELP = """\
## Request box

- **Enter** sends the request (or the slash command).
- **Ctrl+J** / **Shift+Enter** starts a new line.
- **Up** on the first line / **Down** on the last line recall earlier requests.
- **/** lists the slash commands as you type; **@** completes a project file (fuzzy):
  `@path` attaches the file to the request, `@path:10-40` those lines. **Up**/**Down** pick,
  **Tab** or **Enter** completes, **Escape** closes the list.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+j,shift+enter",
            "newline",
            "New line",
            show=False,
            id="prompt.newline",
            tooltip="Insert a line break instead of sending",
        ),
    ]

    @dataclass
    class Submitted(Message):
        prompt: PromptInput
        text: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            language=None,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            highlight_cursor_line=False,
            placeholder="Ask, or type / for commands",
            id=id,
        )
        self.sent: list[str] = []
        self.suggestions: Suggestions | None = None  # set by the screen that shows them
        self._position = 0  # len(history) means "the draft being typed"
        self._draft = ""

    async def _on_key(self, event: events.Key) -> None:
        if self._suggesting(event.key):
            event.stop()
            event.prevent_default()
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self._send()
            return
        if event.key == "up" and self.cursor_location[0] == 0 and self.sent:
            event.stop()
            event.prevent_default()
            self._walk(-1)
            return
        if (
            event.key == "down"
            and self.cursor_location[0] == self.document.line_count - 1
            and self._position < len(self.sent)
        ):
            event.stop()
            event.prevent_default()
            self._walk(1)
            return
        await super()._on_key(event)

    def _suggesting(self, key: str) -> bool:
        """Keys the open suggestion list takes; False when it is closed or lets `key` pass."""
        shown = self.suggestions
        if shown is None or not shown.shown:
            return False
        if key in ("up", "down"):
            shown.move(-1 if key == "up" else 1)
        elif key == "escape":
            shown.hide()
        elif key in ("tab", "enter"):
            return self.complete(shown)
        else:
            return False
        return True

    def complete(self, shown: Suggestions) -> bool:
        """Put the chosen completion in place of the word being typed; False when there is
        nothing to change (Enter then sends what is typed)."""
        choice, target = shown.chosen(), shown.target
        if choice is None or target is None:
            return False
        row, column = self.cursor_location
        typed = self.document.get_line(row)[target.start : column]
        shown.hide()
        if typed == choice.rstrip():
            return False
        self.replace(choice, (row, target.start), (row, column))
        return True

    def action_newline(self) -> None:
        self.insert("\n")

    def _send(self) -> None:
        text = self.text.strip()
        if not text:
            return
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._position = len(self.sent)
        self._draft = ""
        self.clear()
        self.post_message(self.Submitted(self, text))

    def _walk(self, step: int) -> None:
        if self._position == len(self.sent):
            self._draft = self.text
        self._position = max(0, min(len(self.sent), self._position + step))
        text = self._draft if self._position == len(self.sent) else self.sent[self._position]
        self.load_text(text)
        self.move_cursor(self.document.end if step > 0 else (0, len(text.split("\n")[0])))
