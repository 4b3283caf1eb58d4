"""Command palette (ctrl+p): the panels and their actions, by name."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen

from tui.app_handle import theus_app

Command = tuple[str, str, Callable[[], Any]]


class PanelCommands(Provider):
    """Open a panel or run one of its actions; the list follows the screen you are on."""

    def _commands(self) -> list[Command]:
        app = theus_app(self)
        screen = self.screen
        found: list[Command] = [
            ("Chat", "the conversation (F2)", partial(app.open_panel, "chat")),
            (
                "Graph panel",
                "browse files, symbols and edges (F3)",
                partial(app.open_panel, "graph"),
            ),
            (
                "Episodes panel",
                "what earlier sessions did (F4)",
                partial(app.open_panel, "episodes"),
            ),
            ("Memories panel", "MEMORY.md entries (F5)", partial(app.open_panel, "memories")),
            ("Help", "keys, slash commands, setting a model (F1)", app.action_help),
        ]
        # The panel's own bindings, so every action is reachable by name too.
        for binding in getattr(screen, "BINDINGS", []):
            if binding.description and binding.id:
                found.append(
                    (
                        f"{_panel(screen)}: {binding.description}",
                        binding.tooltip,
                        partial(screen.run_action, binding.action),
                    )
                )
        return found

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)


def _panel(screen: Screen[object]) -> str:
    return type(screen).__name__.removesuffix("Screen")
