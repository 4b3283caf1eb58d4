"""Pick an earlier session of this project to resume (`/resume`, `theus -r` with no id)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from theus.sessions import SessionInfo, SessionStore

SHOWN = 200  # the newest sessions; older ones resume with `/resume ID`


class SessionPicker(ModalScreen[str | None]):
    """Newest first: when, how many messages, the first request. Enter resumes it."""

    CSS_PATH = "session_picker.tcss"
    HELP = "Enter resumes the highlighted session; Escape goes back without resuming."
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "dismiss_picker",
            "Back",
            id="sessions.back",
            tooltip="Close the list without resuming",
        ),
    ]

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.ids: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Label("Resume a session (Enter) · Escape to go back", id="picker-title")
            yield OptionList(Option("reading the sessions…", disabled=True), id="picker-list")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()
        self.load()

    @work(thread=True, exclusive=True, group="session-picker", exit_on_error=False)
    def load(self) -> None:
        infos = SessionStore(self.root).list()[:SHOWN]
        self.app.call_from_thread(self._fill, infos)

    def _fill(self, infos: list[SessionInfo]) -> None:
        self.ids = [i.id for i in infos]
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(
            [Option(_row(i), id=i.id) for i in infos]
            or [Option("no earlier sessions in this project", disabled=True)]
        )
        if infos:
            options.highlighted = 0

    @on(OptionList.OptionSelected, "#picker-list")
    def picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_dismiss_picker(self) -> None:
        self.dismiss(None)


def _row(info: SessionInfo) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
    title = info.title or "(no request yet)"
    return f"{when}  {info.messages:>4} msgs  {title}  [{info.id}]"
