"""The project's memories (MEMORY.md entries and graph memories): add, edit, delete."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Markdown, OptionList
from textual.widgets.option_list import Option

from tui.app_handle import theus_app
from tui.screens.memory_edit import ConfirmScreen, MemoryEditScreen
from tui.widgets import fmt
from tui.widgets.status_bar import StatusBar


class MemoriesScreen(Screen[None]):
    CSS_PATH = "memories.tcss"
    HELP = """\
## Memories panel

Facts the agent should keep across sessions. They live in MEMORY.md (and topic files) in the
project's data folder and in the graph; recall quotes them when they are relevant.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "add", "Add", id="memories.add", tooltip="Write a new memory"),
        Binding("e", "edit", "Edit", id="memories.edit", tooltip="Change the selected memory"),
        Binding(
            "d,delete",
            "delete",
            "Delete",
            id="memories.delete",
            tooltip="Forget the selected memory (asks first)",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.memories: list[Any] = []

    def compose(self) -> ComposeResult:
        with Horizontal(id="memories-body"):
            yield OptionList(id="memory-list")
            with VerticalScroll(id="memory-view"):
                yield Markdown("", id="memory-text")
        yield StatusBar()
        yield Footer()

    def on_mount(self) -> None:
        self.load()

    def graph_changed(self) -> None:
        self.load()

    def on_screen_resume(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="memories", exit_on_error=False)
    def load(self) -> None:
        from knowledge import memdir

        try:
            nodes = memdir.memories(theus_app(self).engine.project)
        except Exception as exc:
            self.app.call_from_thread(self.notify, f"memories unavailable: {exc}", severity="error")
            nodes = []
        self.app.call_from_thread(self._fill, nodes)

    def _fill(self, nodes: list[Any]) -> None:
        self.memories = nodes
        options = self.query_one("#memory-list", OptionList)
        keep = options.highlighted
        options.clear_options()
        options.add_options([Option(fmt.clip(n.label or n.summary, 70), id=n.key) for n in nodes])
        if not nodes:
            options.add_option(Option("no memories yet: press a to add one", disabled=True))
            self.query_one("#memory-text", Markdown).update("")
        else:
            options.highlighted = min(keep or 0, len(nodes) - 1)

    @property
    def selected(self) -> Any | None:
        index = self.query_one("#memory-list", OptionList).highlighted
        return self.memories[index] if index is not None and index < len(self.memories) else None

    @on(OptionList.OptionHighlighted, "#memory-list")
    def chosen(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_index < len(self.memories):
            node = self.memories[event.option_index]
            text = str(node.data.get("text") or node.summary)
            where = node.data.get("topic") or "MEMORY.md"
            self.query_one("#memory-text", Markdown).update(
                f"{text}\n\n---\n*{where} · {node.source} · `{node.key[:12]}`*"
            )

    # -- changes (modals in a worker; the store in a thread) ---------------------------------------
    @work(group="memory-ui", exit_on_error=False)
    async def action_add(self) -> None:
        text = await self.app.push_screen_wait(MemoryEditScreen("New memory"))
        if text:
            self.change("add", None, text)

    @work(group="memory-ui", exit_on_error=False)
    async def action_edit(self) -> None:
        node = self.selected
        if node is None:
            return
        text = await self.app.push_screen_wait(
            MemoryEditScreen("Edit memory", str(node.data.get("text") or node.summary))
        )
        if text:
            self.change("edit", node.key, text)

    @work(group="memory-ui", exit_on_error=False)
    async def action_delete(self) -> None:
        node = self.selected
        if node is None:
            return
        if await self.app.push_screen_wait(ConfirmScreen(f"Forget “{fmt.clip(node.label, 60)}”?")):
            self.change("delete", node.key, "")

    @work(thread=True, group="memory-store", exit_on_error=False)
    def change(self, what: str, key: str | None, text: str) -> None:
        from knowledge import memdir

        project = theus_app(self).engine.project
        try:
            if what == "add":
                result = memdir.add_memory(project, text)
            elif what == "edit":
                result = memdir.edit_memory(project, str(key), text)
            else:
                result = memdir.delete_memory(project, str(key))
        except Exception as exc:
            self.app.call_from_thread(self.notify, f"memory not changed: {exc}", severity="error")
            return
        for warning in result.warnings:
            self.app.call_from_thread(self.notify, warning, severity="warning")
        self.app.call_from_thread(self.load)
