"""Approve or refuse an edit (shows the diff) or a shell command (shows the command), once or
for good: "always" for this session or in this project (`theus.permissions`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from theus.permissions import asked_each_time, rules_for
from theus.protocol import ApprovalRequest

if TYPE_CHECKING:  # imported when a request is shown: Syntax loads Pygments
    from rich.syntax import Syntax

# "yes" once, "session" / "project" always (from now on), "no" refused.
Answer = Literal["yes", "session", "project", "no"]
ANSWERS: dict[str, Answer] = {"yes": "yes", "session": "session", "project": "project"}


class ApprovalScreen(ModalScreen[Answer]):
    CSS_PATH = "approval.tcss"
    HELP = (
        "Approve once (y), always in this session (a), always in this project (p), "
        "refuse (n / Escape), or refuse and tell the agent what to do instead (t, then "
        "Enter). `/permissions` lists and revokes the standing ones."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "y",
            "answer('yes')",
            "Approve",
            id="approval.yes",
            tooltip="Let the agent make this change or run this command, this once",
        ),
        Binding(
            "a",
            "answer('session')",
            "Always (session)",
            id="approval.session",
            tooltip="Allow this from now on, until this session ends",
        ),
        Binding(
            "p",
            "answer('project')",
            "Always (project)",
            id="approval.project",
            tooltip="Allow this from now on in this project (kept; see /permissions)",
        ),
        Binding(
            "n,escape",
            "answer('no')",
            "Refuse",
            id="approval.no",
            tooltip="Refuse; the agent is told you declined",
        ),
        Binding(
            "t",
            "tell",
            "Refuse and tell",
            id="approval.tell",
            tooltip="Refuse, and write what the agent should do instead",
        ),
    ]

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request
        self.never = asked_each_time(request)  # why no "always" is offered ("" when it is)

    def compose(self) -> ComposeResult:
        request = self.request
        # The summary says what it is ("run: make test", "edit cart.py"); no second verb.
        title = request.summary[:1].upper() + request.summary[1:]
        always = (
            f"asked each time: {self.never}"
            if self.never
            else "always: " + "; ".join(r.describe() for r in rules_for(request))
        )
        with Vertical(id="dialog"):
            yield Label(title, id="approval-title", markup=False)
            with VerticalScroll(id="approval-detail"):
                yield Static(_detail(request), id="approval-body")
            yield Label(always, id="approval-always", markup=False)
            with Horizontal(id="approval-buttons"):
                yield Button("Approve (y)", variant="success", id="yes")
                if not self.never:
                    yield Button("This session (a)", id="session")
                    yield Button("This project (p)", id="project")
                yield Button("Refuse (n)", variant="error", id="no")
            yield Input(
                placeholder="what to do instead (Enter refuses and tells the agent)",
                id="approval-reason",
            )

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_answer(event.button.id or "no")

    def action_tell(self) -> None:
        reason = self.query_one("#approval-reason", Input)
        reason.display = True
        reason.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        said = " ".join(event.value.split())
        if said:
            self.request.reason = f"the user declined and said: {said}"
        self.action_answer("no")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """No "always" where no rule could cover the request."""
        if action == "answer" and parameters[:1] in (("session",), ("project",)):
            return not self.never
        return True

    def action_answer(self, answer: str) -> None:
        self.dismiss(ANSWERS.get(answer, "no"))


def _detail(request: ApprovalRequest) -> Syntax:
    from rich.syntax import Syntax

    if request.kind == "edit":
        return Syntax(request.detail or "(no changes)", "diff", theme="ansi_dark", word_wrap=True)
    language = "json" if request.kind == "mcp" else "bash"  # an MCP call's arguments
    return Syntax(request.detail, language, theme="ansi_dark", word_wrap=True)
