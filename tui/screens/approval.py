"""Approve or refuse an edit (shows the diff) or a shell command (shows the command)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from theus.protocol import ApprovalRequest

if TYPE_CHECKING:  # imported when a request is shown: Syntax loads Pygments
    from rich.syntax import Syntax


class ApprovalScreen(ModalScreen[bool]):
    CSS_PATH = "approval.tcss"
    HELP = "Approve (y) or refuse (n / Escape) what the agent wants to do."
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Approve", id="approval.yes",
                tooltip="Let the agent make this change or run this command"),
        Binding("n,escape", "answer(False)", "Refuse", id="approval.no",
                tooltip="Refuse; the agent is told you declined"),
    ]

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        verb = "Edit" if request.kind == "edit" else "Run"
        with Vertical(id="dialog"):
            yield Label(f"{verb}: {request.summary}", id="approval-title", markup=False)
            with VerticalScroll(id="approval-detail"):
                yield Static(_detail(request), id="approval-body")
            with Horizontal(id="approval-buttons"):
                yield Button("Approve (y)", variant="success", id="approve")
                yield Button("Refuse (n)", variant="error", id="refuse")

    def on_mount(self) -> None:
        self.query_one("#refuse", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "approve")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


def _detail(request: ApprovalRequest) -> Syntax:
    from rich.syntax import Syntax

    if request.kind == "edit":
        return Syntax(request.detail or "(no changes)", "diff", theme="ansi_dark",
                      word_wrap=True)
    return Syntax(request.detail, "bash", theme="ansi_dark", word_wrap=True)
