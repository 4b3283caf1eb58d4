"""The registry of slash commands and panels: one declaration reaches the help, the palette,
the prompt's suggestions, the keys and the dispatch."""

from __future__ import annotations

import dataclasses
import threading
from functools import partial
from typing import Any

import pytest
from textual.command import DiscoveryHit, Hit
from textual.screen import Screen
from textual.widgets import Markdown

from tests.scripted_server import ScriptedServer, text
from tests.tui.conftest import MakeApp, ready, wait_for
from tui.app import TheusApp
from tui.commands import AppCommands
from tui.registry import Registry
from tui.screens.chat import ChatScreen
from tui.screens.help import HelpScreen
from tui.slash import REGISTRY
from tui.widgets.chat_items import Notice
from tui.widgets.suggestions import Suggestions


def recording(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every command's handler replaced by one that notes (command, text after it)."""
    calls: list[tuple[str, str]] = []
    for command in list(REGISTRY):

        async def record(chat: ChatScreen, arg: str, name: str = command.name) -> None:
            calls.append((name, arg))

        replaced = dataclasses.replace(command, run=record)
        monkeypatch.setitem(REGISTRY._commands, command.name, replaced)
    return calls


def notices(app: Any) -> list[str]:
    return [str(n.render()) for n in app.screen.query(Notice)]


async def palette_hits(app: Any) -> dict[str, DiscoveryHit | Hit]:
    provider = AppCommands(app.screen)
    return {str(hit.text): hit async for hit in provider.discover()}


async def test_every_command_is_in_help_palette_and_suggestions_and_dispatches(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = recording(monkeypatch)
    slash = REGISTRY.slash()
    app = make_app(model=False)
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await app.push_screen(HelpScreen(app.screen))
        help_text = app.screen.query_one(Markdown).source
        app.pop_screen()
        for command in slash:
            assert f"| `/{command.name}` | {command.help} |" in help_text

        box = app.screen.query_one(Suggestions)
        await pilot.press("slash")
        await wait_for(pilot, lambda: box.shown)
        assert box.completions == [f"/{c.name} " for c in slash]
        await pilot.press("backspace")

        for command in slash:  # typed, by its name and by each alias
            for typed in (command.name, *command.aliases):
                await pilot.press(*f"/{typed} some words", "enter")
                await wait_for(pilot, lambda: calls)
                assert calls.pop() == (command.name, "some words")

        hits = await palette_hits(app)
        for command in REGISTRY:  # the chat panel too, which has a key and no slash name
            await hits[command.title].command()
            assert calls.pop() == (command.name, "")


async def test_an_unknown_command_gets_the_commands_it_may_mean(make_app: MakeApp) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await pilot.press(*"/cop", "enter")
        await wait_for(pilot, lambda: notices(app))
        assert notices(app)[-1] == "unknown command /cop; try /compact, /cost"
        assert app.screen.query(Notice).last().has_class("-error")
        # No command shares its first two letters: all of them, in the help's order. The chat
        # panel has a key, not a slash name.
        await pilot.press(*"/chat", "enter")
        await wait_for(pilot, lambda: len(notices(app)) == 2)
        answer = notices(app)[-1]
        assert answer.startswith("unknown command /chat; try /help, /clear, /compact, /recall")
        assert answer.endswith("/diff, /undo, /exit")


async def test_a_panels_key_opens_it_from_any_panel(make_app: MakeApp) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        for key, mode in [("f3", "graph"), ("f4", "episodes"), ("f5", "memories"), ("f2", "chat")]:
            await pilot.press(key)
            await wait_for(pilot, partial(lambda m: app.current_mode == m, mode))


async def test_ctrl_l_clears_the_chat(make_app: MakeApp) -> None:
    """A key that works on the chat only (declared `on="chat"`)."""
    app = make_app(model=False)
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await pilot.press(*"cart total", "enter")
        await wait_for(pilot, lambda: app.screen.query("RecallView"))
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: not app.screen.query("#log > *"))


async def test_a_command_that_answers_in_the_chat_brings_it_forward(make_app: MakeApp) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await pilot.press("f4")
        await wait_for(pilot, lambda: app.current_mode == "episodes")
        await (await palette_hits(app))["/model"].command()
        await wait_for(pilot, lambda: app.current_mode == "chat" and notices(app))
        assert notices(app)[-1].startswith("no model configured")


async def test_undo_and_resume_wait_for_the_running_turn(
    make_app: MakeApp, server: ScriptedServer
) -> None:
    answer = threading.Event()
    server.add(text("Slow answer.", hold=answer))
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await pilot.press(*"first", "enter")
        chat: Screen[Any] = app.screen  # as `Screen[object]` it would not narrow
        assert isinstance(chat, ChatScreen)
        await wait_for(pilot, lambda: chat.busy)
        for name in ("undo", "resume"):
            await pilot.press(*f"/{name}", "enter")
            refusal = f"a turn is running: stop it (Escape) before /{name}"
            await wait_for(pilot, partial(lambda r: r in notices(app), refusal))
        assert isinstance(app.screen, ChatScreen)  # no session picker over the turn
        answer.set()
        await app.workers.wait_for_complete()


def test_the_keys_and_panels_keep_their_names() -> None:
    """A user's keymap names these ids; the footer shows them in this order; the panels are
    the app's modes."""
    assert list(TheusApp.MODES) == ["chat", "graph", "episodes", "memories"]
    assert [b.id for b in TheusApp.BINDINGS if not isinstance(b, tuple)] == [
        "app.help",
        "app.chat",
        "app.graph",
        "app.episodes",
        "app.memories",
        "app.quit",
        "app.interrupt",
    ]
    assert [b.id for b in ChatScreen.BINDINGS if not isinstance(b, tuple)] == [
        "chat.cancel",
        "chat.clear",
    ]


def test_a_name_is_declared_once() -> None:
    registry = Registry()

    async def run(chat: ChatScreen, arg: str) -> None:
        return None

    registry.command("memory", "first", aliases=("memories",))(run)
    with pytest.raises(ValueError, match="/memories is declared twice"):
        registry.command("memories", "second")(run)
