"""The graph panel's keys, the no-model recall box, F1 help and the status bar at 80×24
(issue 19)."""

from __future__ import annotations

import re
from pathlib import Path

from textual.widgets import Input, Markdown, OptionList, TextArea

from knowledge.episodes import EpisodeStore
from knowledge.index.project import Project
from tests.tui.conftest import MakeApp, ready, wait_for
from tests.tui.test_panels import open_graph, option_texts
from tui.widgets.chat_items import RecallView
from tui.widgets.status_bar import StatusBar


async def test_slash_goes_to_the_search_and_enter_waits_for_results(make_app: MakeApp) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_graph(pilot)
        search = screen.query_one("#search", Input)
        results = screen.query_one("#results", OptionList)
        await pilot.press("slash")
        assert app.focused is search and search.value == ""  # no "/" typed
        await pilot.press(*"price", "enter")  # Enter at once, before the results
        await wait_for(pilot, lambda: app.focused is results)
        assert results.highlighted == 0 and results.option_count
        await pilot.press("slash", "backspace", "backspace", "backspace", *"cart")
        await wait_for(pilot, lambda: any("cart" in t for t in option_texts(results)))
        await pilot.press("down")  # from the box into the list
        assert app.focused is results and results.highlighted == 0


async def test_following_an_episode_edge_shows_the_file(make_app: MakeApp, repo: Path) -> None:
    project = Project(repo)
    EpisodeStore(project).record("manual", "Fixed the cart total rounding.", "s1", ["cart.py"])
    project.close()
    app = make_app(model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_graph(pilot)
        graph = app.engine.project.graph
        episode = next(n.key for n in graph.nodes() if n.kind == "episode")
        screen.show(episode)
        preview = screen.query_one("#preview", TextArea)
        await wait_for(pilot, lambda: "rounding" in preview.text)
        edges = screen.query_one("#edges", OptionList)
        texts = option_texts(edges)
        edges.focus()
        edges.highlighted = next(
            i for i, t in enumerate(texts) if "cart.py" in t and not t.startswith(("→", "←"))
        )
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.current == "file:cart.py")
        await wait_for(pilot, lambda: "class Cart" in preview.text)
        assert "rounding" not in preview.text and preview.language == "python"


async def test_the_target_line_is_centred_in_the_preview(make_app: MakeApp, repo: Path) -> None:
    filler = "".join(f"x{i} = {i}\n" for i in range(100))
    methods = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(14))
    # A class with many parts: its edges list is tall, so the preview is short once it shows.
    (repo / "big.py").write_text(
        filler + 'class Big:\n    """Many parts."""\n\n' + methods + filler
    )
    app = make_app(model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_graph(pilot)
        preview = screen.query_one("#preview", TextArea)
        screen.show("sym:pricing.py#price_of")  # few edges: a tall preview
        await wait_for(pilot, lambda: "Prices." in preview.text)
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen.show("sym:big.py#Big")
        await wait_for(pilot, lambda: "class Big" in preview.text)
        await app.workers.wait_for_complete()
        await pilot.pause()
        row = preview.cursor_location[0] - preview.scroll_y  # the target's row on screen
        assert preview.cursor_location == (100, 0)
        assert abs(row - preview.size.height / 2) <= 2, (row, preview.size.height)


async def test_recall_box_keeps_the_ranked_hits_in_view(make_app: MakeApp, repo: Path) -> None:
    for i in range(30):
        (repo / f"cart_{i}.py").write_text(
            f'def cart_total_{i}(items):\n    """Cart total, variant {i}."""\n'
            f"    return sum(items) + {i}\n"
        )
    app = make_app(model=False)
    async with app.run_test(size=(110, 40)) as pilot:
        await ready(pilot)
        await pilot.press(*"cart total", "enter")
        view = await wait_for(
            pilot,
            lambda: (
                app.screen.query(RecallView).first(RecallView)
                if app.screen.query(RecallView)
                else None
            ),
        )
        await app.workers.wait_for_complete()
        await pilot.pause()
        log = app.screen.query_one("#log")
        assert log.max_scroll_y > 0  # taller than the screen: something has to be hidden
        head = view.query_one(".recall-head")
        assert head.region.y >= log.region.y and head.region.height == 1  # on screen


async def test_help_lists_the_function_keys_in_order(make_app: MakeApp) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(110, 40)) as pilot:
        await ready(pilot)
        await pilot.press("f1")
        help_text = await wait_for(
            pilot,
            lambda: (
                type(app.screen).__name__ == "HelpScreen" and app.screen.query_one(Markdown).source
            ),
        )
        keys = [line.split("`")[1] for line in help_text.splitlines() if line.startswith("| `f")]
        assert keys == ["f1", "f2", "f3", "f4", "f5"]
        assert "`app.interrupt`" in help_text  # Ctrl+C is documented too


async def test_status_bar_fits_80_columns(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        bar = app.screen.query_one(StatusBar)
        line = str(bar.render())
        assert len(line) <= bar.content_size.width
        assert line.startswith("test-model │ ↑0 ↓0 tok │ 3 files")
        assert not line.endswith("…")  # whole parts dropped, not one cut in the middle


def test_readme_documents_every_key_of_the_app() -> None:
    from tui.app import TheusApp
    from tui.screens.approval import ApprovalScreen
    from tui.screens.chat import ChatScreen
    from tui.screens.episodes import EpisodesScreen
    from tui.screens.graph import GraphScreen
    from tui.widgets.prompt import PromptInput

    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The chat app", 1)[1].split("\n## ", 1)[0]
    key_cells = " ".join(
        line.split("|")[1] for line in section.splitlines() if line.startswith("| ")
    )
    names = {"slash": "`/`", "escape": "Escape", "backspace": "Backspace", "down": "Down"}
    missing = []
    for owner in (TheusApp, ChatScreen, GraphScreen, EpisodesScreen, ApprovalScreen, PromptInput):
        for binding in owner.BINDINGS:
            assert not isinstance(binding, tuple)
            key = binding.key.split(",")[0]
            shown = names.get(key) or "+".join(
                k.upper() if len(k) <= 3 and k[0] == "f" else k.capitalize() if "+" in key else k
                for k in key.split("+")
            )
            if not re.search(rf"(?<![\w+]){re.escape(shown)}(?![\w+])", key_cells):
                missing.append(f"{binding.id}: {shown}")
    assert not missing
