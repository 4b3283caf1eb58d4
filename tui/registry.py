"""The registry behind the slash commands and the panels: each is declared once, with
`@REGISTRY.command(...)` on its handler in `tui/slash.py`, and the app's modes and bindings, the
command palette, the help screen, the prompt's suggestions and the dispatch are read from it."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from textual.binding import Binding

if TYPE_CHECKING:  # the chat screen is loaded with its mode, after the registry
    from tui.screens.chat import ChatScreen

# Runs a command on the chat screen with the text after its name ("" from a key or the palette).
Handler = Callable[["ChatScreen", str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Key:
    """A command's key: `keys` as Textual writes them, the footer's `label`, the help's
    `tooltip`, the `id` a user keymap rebinds. On the "app" it works on every panel (so the
    command runs where you are); on the "chat" only there."""

    keys: str
    label: str
    tooltip: str
    id: str
    on: Literal["app", "chat"] = "app"
    group: Binding.Group | None = None
    priority: bool = False


@dataclass(frozen=True, slots=True)
class Command:
    """`name` is typed after `/` (unless `slash` is False: a panel reached by key and palette
    only); `title` names it in the palette; a command that is not `while_busy` answers that a
    turn is running instead of running; `panel` is the app mode the command opens, whose
    screen the app loads from `tui/screens/<panel>.py` on first use."""

    name: str
    help: str
    run: Handler
    aliases: tuple[str, ...]
    key: Key | None
    title: str
    slash: bool
    while_busy: bool
    panel: str

    @property
    def anywhere(self) -> bool:
        """Runs on the panel you are on; the others show their answer in the chat, which a key
        or the palette brings forward first."""
        return self.key is not None and self.key.on == "app"


class Registry:
    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}  # in declaration order: help and palette order
        self._names: dict[str, str] = {}  # every name and alias -> its command's name

    def command(
        self,
        name: str,
        help: str,
        *,
        aliases: tuple[str, ...] = (),
        key: Key | None = None,
        title: str = "",
        slash: bool = True,
        while_busy: bool = True,
        panel: str = "",
    ) -> Callable[[Handler], Handler]:
        """Declare the decorated handler as `/name` (and `/alias`), with a one-line help."""

        def register(run: Handler) -> Handler:
            for typed in (name, *aliases):
                if typed in self._names:
                    raise ValueError(f"/{typed} is declared twice")
                self._names[typed] = name
            self._commands[name] = Command(
                name, help, run, aliases, key, title or f"/{name}", slash, while_busy, panel
            )
            return run

        return register

    def __iter__(self) -> Iterator[Command]:
        return iter(self._commands.values())

    def __getitem__(self, name: str) -> Command:
        """The command declared as `name` (a binding or a palette entry names it so)."""
        return self._commands[name]

    def slash(self) -> list[Command]:
        """The commands typed after `/`, in declaration order."""
        return [c for c in self if c.slash]

    def find(self, name: str) -> Command | None:
        """The slash command called `name` or aliased so; None for an unknown word."""
        found = self._commands.get(self._names.get(name, ""))
        return found if found is not None and found.slash else None

    def parse(self, text: str) -> tuple[str, str] | None:
        """`/name rest` -> ("name", "rest") with an alias resolved; None when `text` is not a
        slash command (`//` escapes a leading slash)."""
        if not text.startswith("/") or text.startswith("//"):
            return None
        name, _, rest = text[1:].partition(" ")
        name = name.strip().lower()
        return self._names.get(name, name), rest.strip()

    def suggest(self, name: str) -> list[str]:
        """What an unknown `/name` is offered: the commands sharing its first two letters, or
        all of them."""
        names = [c.name for c in self.slash()]
        return [n for n in names if n.startswith(name[:2])] or names

    def bindings(self, on: Literal["app", "chat"]) -> list[Binding]:
        """The keys of the commands that work `on` the app or the chat, F-keys first."""
        keyed = [(c.name, c.key) for c in self if c.key is not None and c.key.on == on]
        found = [
            Binding(
                key.keys,
                f"app.run_command({name!r})",
                key.label,
                id=key.id,
                tooltip=key.tooltip,
                group=key.group,
                priority=key.priority,
            )
            for name, key in keyed
        ]
        return sorted(found, key=key_order)


def key_order(binding: Binding) -> tuple[int, int, str]:
    """F1, F2, … in number order first, then the other keys by binding id."""
    key = binding.key.split(",")[0]
    if re.fullmatch(r"f\d+", key):
        return (0, int(key[1:]), "")
    return (1, 0, str(binding.id))
