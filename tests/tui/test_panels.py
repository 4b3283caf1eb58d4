"""The graph, episodes and memories panels, the no-model recall mode and the status bar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Markdown, OptionList, Static, TextArea, Tree

from knowledge.episodes import EpisodeStore
from knowledge.index.project import Project
from tests.conftest import configure
from tests.tui.conftest import MakeApp, ready, wait_for
from tui.screens.chat import NO_MODEL_NOTICE
from tui.widgets.chat_items import RecallView
from tui.widgets.status_bar import StatusBar


def option_texts(options: OptionList) -> list[str]:
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def open_graph(pilot: Any) -> Any:
    await ready(pilot)
    await pilot.press("f3")
    screen = await wait_for(pilot, lambda: pilot.app.current_mode == "graph" and pilot.app.screen)
    tree = screen.query_one("#tree", Tree)
    await wait_for(pilot, lambda: tree.root.children)
    return screen


async def test_graph_search_shows_node_and_preview(make_app: MakeApp) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_graph(pilot)
        await pilot.press("slash", *"price of item")
        results = screen.query_one("#results", OptionList)
        await wait_for(pilot, lambda: results.option_count and results.display)
        texts = option_texts(results)
        best = next(i for i, t in enumerate(texts) if "price_of" in t)
        await pilot.press("enter")  # focus the results
        results.highlighted = best
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.current == "sym:pricing.py#price_of")
        detail = screen.query_one("#detail", Static)
        await wait_for(pilot, lambda: "price_of" in str(detail.render()))
        head = str(detail.render())
        assert "symbol" in head and "pricing.py" in head and "lines 4-6" in head
        assert "Unit price with discounts." in head
        preview = screen.query_one("#preview", TextArea)
        await wait_for(pilot, lambda: "def price_of" in preview.text)
        assert preview.read_only and preview.language == "python"
        assert preview.cursor_location == (3, 0)  # the node's line (4), 0-based
        bar = screen.query_one(StatusBar)
        assert bar.recall_ms is not None


async def test_tree_expands_lazily_and_edges_are_followed(make_app: MakeApp) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_graph(pilot)
        tree = screen.query_one("#tree", Tree)
        names = [str(n.label) for n in tree.root.children]
        assert names == ["cart.py", "pricing.py", "README.md"]
        cart = tree.root.children[0]
        assert not cart.children  # nothing loaded until it is opened
        cart.expand()
        await wait_for(pilot, lambda: cart.children)
        assert [str(n.label) for n in cart.children] == ["Cart :5"]
        klass = cart.children[0]
        klass.expand()
        await wait_for(pilot, lambda: klass.children)
        assert [str(n.label) for n in klass.children] == ["total :8"]
        # Highlight the file: its detail lists the import edge; Enter follows it.
        tree.focus()
        tree.move_cursor(cart)
        await wait_for(pilot, lambda: screen.current == "file:cart.py")
        edges = screen.query_one("#edges", OptionList)
        await wait_for(pilot, lambda: any("pricing.py" in t for t in option_texts(edges)))
        texts = option_texts(edges)
        assert any(t.startswith("→ imports") for t in texts)
        assert any(t.startswith("→ contains") for t in texts)
        target = next(
            i for i, t in enumerate(texts) if "pricing.py" in t and not t.startswith(("→", "←"))
        )
        edges.focus()
        edges.highlighted = target
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.current != "file:cart.py")
        assert "pricing.py" in screen.current
        preview = screen.query_one("#preview", TextArea)
        await wait_for(pilot, lambda: "def price_of" in preview.text)
        await pilot.press("backspace")
        await wait_for(pilot, lambda: screen.current == "file:cart.py")


async def test_graph_search_for_from_slash_command(make_app: MakeApp) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await pilot.press(*"/graph cart total", "enter")
        screen = await wait_for(pilot, lambda: app.current_mode == "graph" and app.screen)
        assert screen.query_one("#search", Input).value == "cart total"
        results = screen.query_one("#results", OptionList)
        await wait_for(pilot, lambda: any("total" in t for t in option_texts(results)))


@pytest.fixture
def episodes(repo: Path) -> list[Any]:
    project = Project(repo)
    store = EpisodeStore(project)
    first = store.record(
        "manual",
        "Fixed the cart total rounding.\n\nThe total now rounds **per line**.",
        "s1",
        ["cart.py"],
    )
    second = store.record("session-end", "Added discounts to pricing.", "s2", ["pricing.py"])
    project.close()
    return [first, second]


async def test_episodes_list_and_view(make_app: MakeApp, episodes: list[Any]) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await pilot.press("f4")
        screen = await wait_for(pilot, lambda: app.current_mode == "episodes" and app.screen)
        options = screen.query_one("#episode-list", OptionList)
        await wait_for(pilot, lambda: options.option_count == 2)
        texts = option_texts(options)
        day = episodes[0].date[:10]
        assert any(
            t.startswith(day) and "manual" in t and "Fixed the cart total" in t for t in texts
        )
        index = next(i for i, t in enumerate(texts) if "Fixed the cart" in t)
        options.focus()
        options.highlighted = index
        view = screen.query_one("#episode-text", Markdown)
        await wait_for(pilot, lambda: "per line" in view.source)
        assert "# Fixed the cart total rounding." in view.source and "`cart.py`" in view.source


async def test_memories_add_and_delete(make_app: MakeApp) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await pilot.press("f5")
        screen = await wait_for(pilot, lambda: app.current_mode == "memories" and app.screen)
        options = screen.query_one("#memory-list", OptionList)
        await wait_for(pilot, lambda: "no memories yet" in " ".join(option_texts(options)))
        await pilot.press("a")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MemoryEditScreen")
        await pilot.press(*"Prices are in cents", "ctrl+s")
        await wait_for(pilot, lambda: screen.memories)
        assert option_texts(options) == ["Prices are in cents"]
        index_file = app.engine.project.paths.memory / "MEMORY.md"
        assert "Prices are in cents" in index_file.read_text()
        graph = app.engine.project.graph
        assert [n.label for n in graph.nodes("memory")] == ["Prices are in cents"]
        view = screen.query_one("#memory-text", Markdown)
        await wait_for(pilot, lambda: "Prices are in cents" in view.source)
        options.focus()
        await pilot.press("d")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await wait_for(pilot, lambda: not screen.memories and app.screen is screen)
        assert "Prices are in cents" not in index_file.read_text()
        assert list(graph.nodes("memory")) == []


async def test_memory_edit(make_app: MakeApp) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await pilot.press(*"/memory Tests use pytest", "enter")
        await wait_for(pilot, lambda: list(app.engine.project.graph.nodes("memory")))
        await pilot.press("f5")
        screen = await wait_for(pilot, lambda: app.current_mode == "memories" and app.screen)
        await wait_for(pilot, lambda: screen.memories)
        screen.query_one("#memory-list", OptionList).focus()
        await pilot.press("e")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MemoryEditScreen")
        await pilot.press("end", *" and hypothesis", "ctrl+s")
        await wait_for(
            pilot,
            lambda: (
                screen.memories and screen.memories[0].label == "Tests use pytest and hypothesis"
            ),
        )


async def test_no_model_mode_is_a_recall_box(make_app: MakeApp, server: Any) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        notice = str(app.screen.query_one("#no-model", Static).render())
        assert notice == NO_MODEL_NOTICE
        assert "THEUS_BASE_URL" in notice and "theus login" in notice
        await pilot.press(*"price of an item", "enter")
        view = await wait_for(pilot, lambda: app.screen.query(RecallView))
        await pilot.pause()
        result = view.first().result
        assert result.recall.hits[0].key == "sym:pricing.py#price_of"
        hits = str(view.first().query_one(".recall-hits", Static).render())
        assert hits.splitlines()[0].strip().startswith("1.") and "price_of" in hits
        assert result.block and "pricing.py" in result.block
        block = str(view.first().query_one(".block", Static).render())
        assert block == result.block
        assert server.requests == []


async def test_status_bar(make_app: MakeApp, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(monkeypatch, no_episodes=True)
    configure(monkeypatch, no_watch=False)
    app = make_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(pilot)
        bar = app.screen.query_one(StatusBar)
        await wait_for(pilot, lambda: bar.watcher.startswith("watch on"))
        app.refresh_status()
        await pilot.pause()
        line = str(bar.render())
        assert line.startswith("test-model │ ↑0 ↓0 tok │ 3 files 3 sym")
        assert "recall –" in line and "ctx 0 tok (0 total)" in line
        assert "off: embeddings,episodes" in line
        await pilot.press(*"price of", "enter")  # the model is not asked: no script needed
        await wait_for(pilot, lambda: bar.recall_ms is not None)
        await app.workers.wait_for_complete()
        # Every panel shows the same figures.
        await pilot.press("f3")
        other = await wait_for(
            pilot, lambda: app.current_mode == "graph" and app.screen.query_one(StatusBar)
        )
        assert str(other.render()) == str(app.screen.query_one(StatusBar).render())
        assert other.recall_ms == bar.recall_ms


async def test_graph_panel_follows_the_watcher(
    make_app: MakeApp, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, no_watch=False)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_graph(pilot)
        assert app.engine.watcher is not None and app.engine.watcher.wait_ready(20)
        screen.show("sym:pricing.py#price_of")
        detail = screen.query_one("#detail", Static)
        await wait_for(pilot, lambda: "Unit price with discounts." in str(detail.render()))
        source = (repo / "pricing.py").read_text()
        (repo / "pricing.py").write_text(source.replace("with discounts", "after tax"))
        await wait_for(pilot, lambda: "Unit price after tax." in str(detail.render()), 30)
        preview = screen.query_one("#preview", TextArea)
        assert "after tax" in preview.text


async def test_first_index_in_the_app_uses_the_process_pool(make_app: MakeApp, repo: Path) -> None:
    """Enough files for the index's process pool, started from inside the running app (whose
    stderr has no file descriptor)."""
    for i in range(210):
        (repo / f"mod{i:03d}.py").write_text(f"def f{i}():\n    return {i}\n")
    app = make_app(model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press(*"f205", "enter")
        view = await wait_for(pilot, lambda: app.screen.query(RecallView), 120)
        await ready(pilot)
        assert app.engine.indexed_now
        counts = app.engine.counts()
        assert counts is not None and counts["file"] == 213
        assert view.first().result.recall.hits[0].key == "sym:mod205.py#f205"
        app.refresh_status()
        await wait_for(pilot, lambda: "213 files" in str(app.screen.query_one(StatusBar).render()))


async def test_the_graph_panel_shows_what_was_told_with_its_history(
    make_app: MakeApp, repo: Path
) -> None:
    import json

    from knowledge.facts.extraction import parse_extraction
    from knowledge.facts.layer import FactsLayer

    project = Project(repo)
    project.index()
    layer = FactsLayer(project)
    for db in ("SQLite", "PostgreSQL"):
        said = f"the shop keeps its orders in {db}"
        old = "SQLite" if db == "PostgreSQL" else ""
        layer.apply(
            parse_extraction(
                json.dumps(
                    {
                        "entities": [
                            {"label": "Shop", "type": "Project", "layer": "PERSONAL"},
                            {"label": db, "type": "Technology", "layer": "UNIVERSAL"},
                        ],
                        "relations": [{"source": "Shop", "target": db, "type": "USES_TECHNOLOGY"}],
                        "facts": [],
                        "corrections": [{"subject": "Shop", "old": old, "new": db}] if old else [],
                    }
                )
            ),
            f"we moved: {said}" if old else said,
            "user",
        )
    project.save()
    project.close()
    app = make_app(model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_graph(pilot)
        tree = screen.query_one("#tree", Tree)
        await wait_for(
            pilot, lambda: any(str(n.label).startswith("(told:") for n in tree.root.children)
        )
        told = next(n for n in tree.root.children if str(n.label).startswith("(told:"))
        shop = next(n for n in told.children if str(n.label) == "Shop")
        screen.show(shop.data[1])
        detail = screen.query_one("#detail", Static)
        await wait_for(pilot, lambda: "USES_TECHNOLOGY" in str(detail.render()))
        head = str(detail.render())
        assert "fact     USES_TECHNOLOGY → PostgreSQL" in head
        assert "was      USES_TECHNOLOGY → SQLite" in head and "until" in head
