"""Four key screens pinned as SVG snapshots (`pytest --snapshot-update` to accept changes).

Deterministic: fixed terminal size, temporary THEUS_HOME, the scripted model, fixed fixture
files, no cursor blink or animations, no watcher, and timings shown as a fixed string."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, TextArea

from knowledge import memdir
from knowledge.index.project import Project
from tests.scripted_server import ScriptedServer, text, tool
from tests.tui.conftest import MakeApp, ready, wait_for
from tui.widgets import fmt
from tui.widgets.chat_items import AssistantReply, InjectionView

SIZE = (110, 34)


@pytest.fixture(autouse=True)
def fixed_timings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fmt, "ms", lambda value: "9 ms")


async def still(pilot: Pilot[Any]) -> None:
    """Workers done, no blinking cursors, no animation, nothing left to paint."""
    app = pilot.app
    app.animation_level = "none"
    await app.workers.wait_for_complete()
    for widget in app.screen.query("Input, TextArea"):
        assert isinstance(widget, Input | TextArea)
        widget.cursor_blink = False
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


def test_chat_after_a_turn(snap_compare: Any, make_app: MakeApp, server: ScriptedServer) -> None:
    answer = "`price_of` returns **the unit price**:\n\n- in `pricing.py`\n- used by `Cart.total`\n"
    # The status bar shows the server's usage; fixed here, because the prompt holds the
    # project's path, whose length follows the temporary folder.
    server.add(
        tool("read", {"path": "pricing.py"}, prompt_tokens=300), text(answer, prompt_tokens=328)
    )
    app = make_app()

    def replied() -> bool:
        replies = list(app.screen.query(AssistantReply))
        return bool(replies) and replies[0].source == answer and replies[0]._stream is None

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await pilot.press(*"how is the price of an item computed", "enter")
        await wait_for(pilot, lambda: replied() and app.screen.query(InjectionView))
        await still(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_graph_panel_on_a_symbol(snap_compare: Any, make_app: MakeApp) -> None:
    app = make_app(model=False)

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await pilot.press("f3")
        screen = await wait_for(pilot, lambda: app.current_mode == "graph" and app.screen)
        await wait_for(pilot, lambda: screen.query_one("#tree").root.children)
        screen.show("sym:pricing.py#price_of")
        preview = screen.query_one("#preview", TextArea)
        await wait_for(pilot, lambda: "def price_of" in preview.text)
        screen.query_one("#edges", OptionList).focus()
        await still(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_no_model_recall_mode(snap_compare: Any, make_app: MakeApp) -> None:
    app = make_app(model=False)

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await pilot.press(*"cart total", "enter")
        await wait_for(pilot, lambda: app.screen.query("RecallView"))
        await still(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_memories_panel(snap_compare: Any, make_app: MakeApp, repo: Any) -> None:
    project = Project(repo)
    memdir.add_memory(project, "Prices are in cents, never floats.")
    memdir.add_memory(project, "Run the tests with `pytest -q` before committing.")
    project.close()
    app = make_app(model=False)

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await pilot.press("f5")
        screen = await wait_for(pilot, lambda: app.current_mode == "memories" and app.screen)
        await wait_for(pilot, lambda: len(screen.memories) == 2)
        await still(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
