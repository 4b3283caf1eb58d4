"""Command palette (ctrl+p): every panel and slash command, and the actions of the panel you are
on, by name."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen

from tui.app_handle import theus_app
from tui.slash import REGISTRY

Command = tuple[str, str, Callable[[], Any]]


class AppCommands(Provider):
    """Open a panel, run a slash command (as if typed with nothing after it) or one of the
    actions of the screen you are on."""

    def _commands(self) -> list[Command]:
        app = theus_app(self)
        screen = self.screen
        keys = {a.binding.id: a.binding for a in screen.active_bindings.values()}
        found: list[Command] = []
        for command in REGISTRY:
            key = keys.get(command.key.id) if command.key else None
            help_text = key.tooltip if key else command.help
            if key:  # as the user's keymap has it
                help_text += f" ({app.get_key_display(key)})"
            found.append((command.title, help_text, partial(app.action_run_command, command.name)))
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
