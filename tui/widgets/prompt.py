"""The request box: multi-line, Enter sends, history on up/down at the edges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea


class PromptInput(TextArea):
    """Enter sends; Ctrl+J (or Shift+Enter where the terminal reports it) adds a line.
    Up on the first line and Down on the last walk the history of sent requests."""

    HELP = """\
## Request box

- **Enter** sends the request (or the slash command).
- **Ctrl+J** / **Shift+Enter** starts a new line.
- **Up** on the first line / **Down** on the last line recall earlier requests.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+j,shift+enter", "newline", "New line", show=False, id="prompt.newline",
                tooltip="Insert a line break instead of sending"),
    ]

    @dataclass
    class Submitted(Message):
        prompt: PromptInput
        text: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(language=None, soft_wrap=True, show_line_numbers=False,
                         tab_behavior="focus", highlight_cursor_line=False,
                         placeholder="Ask, or type / for commands", id=id)
        self.sent: list[str] = []
        self._position = 0  # len(history) means "the draft being typed"
        self._draft = ""

    async def _on_key(self, event: events.Key) -> None:
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
        if event.key == "down" and self.cursor_location[0] == self.document.line_count - 1 \
                and self._position < len(self.sent):
            event.stop()
            event.prevent_default()
            self._walk(1)
            return
        await super()._on_key(event)

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
