"""Past sessions and compactions, newest first (date, type, title), one shown as Markdown."""

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
from tui.widgets.status_bar import StatusBar


class EpisodesScreen(Screen[None]):
    CSS_PATH = "episodes.tcss"
    HELP = """\
## Episodes panel

What earlier sessions did, as the agent summarised them at compaction or at the end of a
session. Move through the list; the selected episode is shown on the right.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "r", "reload", "Reload", id="episodes.reload", tooltip="Read the episode files again"
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.episodes: list[Any] = []

    def compose(self) -> ComposeResult:
        with Horizontal(id="episodes-body"):
            yield OptionList(id="episode-list")
            with VerticalScroll(id="episode-view"):
                yield Markdown("", id="episode-text")
        yield StatusBar()
        yield Footer()

    def on_mount(self) -> None:
        self.action_reload()

    def graph_changed(self) -> None:
        self.load()

    def on_screen_resume(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="episodes", exit_on_error=False)
    def load(self) -> None:
        try:
            from knowledge.core.settings import is_off
            from knowledge.episodes import EpisodeStore

            if is_off("episodes"):
                raise RuntimeError("episodes are switched off (THEUS_NO_EPISODES=1)")
            episodes, _problems = EpisodeStore(theus_app(self).engine.project).list()
        except Exception as exc:  # fails open: the panel says why
            self.app.call_from_thread(self._fill, [], str(exc))
            return
        self.app.call_from_thread(self._fill, episodes, "")

    def _fill(self, episodes: list[Any], error: str) -> None:
        self.episodes = episodes
        options = self.query_one("#episode-list", OptionList)
        keep = options.highlighted
        options.clear_options()
        options.add_options(
            [Option(f"{e.date[:10]}  {e.type:<11} {e.title}", id=e.id) for e in episodes]
        )
        if not episodes:
            options.add_option(Option(error or "no episodes yet", disabled=True))
            self.query_one("#episode-text", Markdown).update("")
            return
        options.highlighted = keep if keep is not None and keep < len(episodes) else 0

    @on(OptionList.OptionHighlighted, "#episode-list")
    def chosen(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_index < len(self.episodes):
            episode = self.episodes[event.option_index]
            files = ", ".join(f"`{f}`" for f in episode.files)
            head = f"# {episode.title}\n\n*{episode.date} · {episode.type}*"
            body = "\n\n".join(
                p for p in (head, f"Files: {files}" if files else "", episode.text) if p
            )
            self.query_one("#episode-text", Markdown).update(body)
