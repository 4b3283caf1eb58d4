"""The chat as Claude Code and Aider users expect it (issue 19): the busy line, tokens and
cost in the status bar, Ctrl+C, standing approvals, `@path` attachments and completions."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from textual.screen import Screen

from knowledge.core.settings import MemorySettings
from tests.conftest import GatedEmbedder, configure, texts_of
from tests.scripted_server import ScriptedServer, text, tool
from tests.tui.conftest import MakeApp, ready, wait_for
from theus.permissions import Permissions, Rule
from theus.pricing import Price, cost_usd, load_prices
from theus.protocol import ApprovalRequest
from tui.screens.approval import ApprovalScreen
from tui.screens.chat import ChatScreen
from tui.widgets.busy import BusyIndicator
from tui.widgets.chat_items import AssistantReply, Notice
from tui.widgets.prompt import PromptInput
from tui.widgets.status_bar import StatusBar
from tui.widgets.suggestions import Suggestions

LONG = "The cart adds every line price, one after the other, and returns the sum. " * 4


async def ask(pilot: Any, request: str) -> None:
    await pilot.press(*request)
    await pilot.press("enter")


def notices(app: Any) -> list[str]:
    return [str(n.render()) for n in app.screen.query(Notice)]


def last_request_text(server: ScriptedServer) -> str:
    users = [m for m in server.requests[-1]["messages"] if m["role"] == "user"]
    return "\n".join(texts_of(users[-1]))


async def test_busy_line_counts_streamed_tokens_and_escape_stops(
    make_app: MakeApp, server: ScriptedServer
) -> None:
    server.add(text(LONG, stall_after=3, stall_s=20))
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        busy = app.screen.query_one(BusyIndicator)
        assert not busy.display
        await ask(pilot, "how is the total made")
        await wait_for(pilot, lambda: busy.tokens > 0)  # streamed, then the server stalls
        line = str(busy.render())
        assert busy.display and f"{busy.tokens} tokens" in line and "Esc to interrupt" in line
        assert " working · " in line and "s · " in line  # the elapsed seconds
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.screen.busy)
        assert not busy.display
        assert [n for n in notices(app) if "stopped" in n or "cancelled" in n] == [
            "stopped: the request was cancelled"
        ]  # one line, not two
        # The next request is a turn of its own, not merged into the cancelled one.
        server.add(text("Sums the lines."))
        await ask(pilot, "and the tax?")
        await wait_for(pilot, lambda: len(server.requests) == 2)
        await app.workers.wait_for_complete()
        users = [m for m in server.requests[-1]["messages"] if m["role"] == "user"]
        assert texts_of(users[-1])[-1] == "and the tax?"
        assert texts_of(users[-2])[-1] == "how is the total made"
        assert "cancelled this request" in server.requests[-1]["messages"][-2]["content"]


async def test_an_empty_reply_is_shown_as_such(make_app: MakeApp, server: ScriptedServer) -> None:
    server.add(text(""))
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "anything?")
        await wait_for(pilot, lambda: "the model answered with an empty reply" in notices(app))


async def test_status_bar_shows_background_embedding_progress(make_app: MakeApp) -> None:
    from knowledge.embed.layer import SemanticLayer

    app = make_app()
    async with app.run_test(size=(140, 36)) as pilot:
        await ready(pilot)
        bar = app.screen.query_one(StatusBar)
        embedder = GatedEmbedder()
        layer = SemanticLayer(  # on, though the app's own settings switch the layer off
            app.engine.project,
            settings=MemorySettings(),
            credentials=None,
            local_loader=lambda: embedder,
        )
        app.engine.memory.semantic = layer  # the app closes it with the memory
        layer.start_background()
        await wait_for(pilot, lambda: "embedding 0/3" in str(bar.render()))  # 3 files
        embedder.gate.set()
        await wait_for(pilot, lambda: not re.search(r"embedding \d", str(bar.render())))


async def test_status_bar_counts_tokens_and_prices_them(
    make_app: MakeApp, server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"test-model": {"input": 1_000_000, "output": 2_000_000}}))
    configure(monkeypatch, prices=str(prices))
    server.add(
        text("One.", prompt_tokens=100, completion_tokens=20),
        text("Two.", prompt_tokens=300, completion_tokens=5),
    )
    app = make_app()
    async with app.run_test(size=(140, 36)) as pilot:
        await ready(pilot)
        bar = app.screen.query_one(StatusBar)
        assert "↑0 ↓0 tok" in str(bar.render()) and "$" not in str(bar.render())
        await ask(pilot, "first")
        await wait_for(pilot, lambda: bar.tokens_out == 20)
        await app.workers.wait_for_complete()
        await ask(pilot, "second")
        await wait_for(pilot, lambda: bar.tokens_out == 25)
        assert bar.tokens_in == 400
        assert "↑400 ↓25 tok $450.0000" in str(bar.render())  # 400 × $1 + 25 × $2
        await ask(pilot, "/clear")  # a new session starts its own figures
        await wait_for(pilot, lambda: bar.tokens_in == 0)


async def test_ctrl_c_interrupts_and_twice_quits(make_app: MakeApp, server: ScriptedServer) -> None:
    server.add(text(LONG, stall_after=2, stall_s=20))
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "a long one")
        chat: Screen[Any] = app.screen  # as `Screen[object]` it would not narrow
        assert isinstance(chat, ChatScreen)
        await wait_for(pilot, lambda: chat.busy)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not chat.busy)
        assert app.is_running  # one Ctrl+C only stops the turn
        assert any("stopped" in n for n in notices(app))
        app._last_interrupt = -10.0  # the first press was long ago: no quit yet
        await pilot.press("ctrl+c")
        assert app.is_running
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running)


async def test_always_allow_for_the_session_and_the_project(
    make_app: MakeApp, server: ScriptedServer, repo: Path
) -> None:
    server.add(
        tool("shell", {"command": "echo hi"}),
        text("Ran."),
        tool("shell", {"command": "echo hi"}),
        text("Ran again."),
        tool(
            "edit",
            {"path": "pricing.py", "old_string": 'item["price"]', "new_string": 'item["cost"]'},
        ),
        text("Edited."),
        tool("write", {"path": "Makefile", "content": "test:\n\tpytest\n"}),
        text("Written."),
    )
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "say hi")
        modal = await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen)
        title = str(modal.query_one("#approval-title").render())
        assert title == "Run: echo hi"  # not "Run: run: echo hi"
        await pilot.press("a")  # always, this session
        await wait_for(pilot, lambda: len(app.screen.query(AssistantReply)) == 1)
        await app.workers.wait_for_complete()
        await ask(pilot, "say hi again")
        await wait_for(pilot, lambda: len(app.screen.query(AssistantReply)) == 2)
        await app.workers.wait_for_complete()
        assert any(
            n.startswith("allowed (session rule: run commands that start with `echo hi`)")
            for n in notices(app)
        )
        assert "exit 0" in server.requests[3]["messages"][-1]["content"]  # it did run
        await ask(pilot, "edit it")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("p")  # always, in this project
        await wait_for(pilot, lambda: len(app.screen.query(AssistantReply)) == 3)
        assert 'item["cost"]' in (repo / "pricing.py").read_text()
        # Kept for later sessions and other apps on this project, in the data folder.
        assert Permissions(repo).listed() == [("project", Rule("edit", path="pricing.py"))]
        # A file that runs code by itself is asked each time, with no "always" to give.
        await ask(pilot, "add a Makefile")
        modal = await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen)
        assert not modal.query("#session, #project")
        await pilot.press("a")
        assert app.screen is modal
        await pilot.press("y")
        await wait_for(pilot, lambda: len(app.screen.query(AssistantReply)) == 4)
        assert (repo / "Makefile").exists()
        await ask(pilot, "/permissions")
        await wait_for(pilot, lambda: any("standing approvals" in n for n in notices(app)))
        listing = next(n for n in notices(app) if "standing approvals" in n)
        assert "1. session run commands that start with `echo hi`" in listing
        assert "2. project edit and write pricing.py" in listing
        await ask(pilot, "/permissions revoke 2")
        await wait_for(pilot, lambda: any(n.startswith("revoked (project)") for n in notices(app)))
        assert Permissions(repo).listed() == []


async def test_at_path_attaches_the_file_or_its_lines(
    make_app: MakeApp, server: ScriptedServer, repo: Path
) -> None:
    (repo / ".env").write_text("API_KEY=sk-live-abcdefghijklmnopqrstuvwx\n")
    server.add(text("Seen."), text("Seen too."))
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "explain @pricing.py:4-6 please")
        await wait_for(pilot, lambda: app.screen.query(AssistantReply))
        await app.workers.wait_for_complete()
        sent = last_request_text(server)
        assert "explain @pricing.py:4-6 please\n\nAttached by the user:" in sent
        assert '<file path="pricing.py" lines="4-6">' in sent
        assert "def price_of(item):" in sent and '"""Prices."""' not in sent
        assert any(n == "attached pricing.py:4-6 (3 lines)" for n in notices(app))
        await ask(pilot, "and @.env and @../outside.txt")
        await wait_for(pilot, lambda: len(app.screen.query(AssistantReply)) == 2)
        await app.workers.wait_for_complete()
        sent = last_request_text(server)
        assert "sk-live" not in sent and "<file" not in sent
        refused = [n for n in notices(app) if n.startswith("not attached")]
        assert len(refused) == 2 and "secret" in refused[0] and "outside" in refused[1]


async def test_completions_for_files_and_slash_commands(make_app: MakeApp) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        box = app.screen.query_one(Suggestions)
        prompt = app.screen.query_one("#prompt", PromptInput)
        await pilot.press(*"look at @prc")  # fuzzy: p, r, c in order
        await wait_for(pilot, lambda: box.shown and box.completions)
        assert box.completions[0] == "@pricing.py "
        await pilot.press("tab")
        assert prompt.text == "look at @pricing.py "
        assert not box.shown
        prompt.clear()
        await pilot.press(*"/re")
        await wait_for(pilot, lambda: box.shown)
        assert box.completions == ["/recall ", "/resume "]
        await pilot.press("down", "enter")
        assert prompt.text == "/resume "
        await pilot.press("backspace", "backspace")
        await wait_for(pilot, lambda: box.shown)
        await pilot.press("escape")
        assert not box.shown and prompt.text == "/resum"


def test_an_edit_rule_never_covers_a_file_that_runs_code(repo: Path) -> None:
    permissions = Permissions(repo)
    permissions.allow([Rule("edit", path="cart.py"), Rule("edit", path="Makefile")], "project")
    plain = ApprovalRequest("edit", "edit cart.py", "diff", path="cart.py")
    risky = ApprovalRequest(
        "edit",
        "edit Makefile",
        "diff",
        path="Makefile",
        protected="a file that runs code by itself",
    )
    assert permissions.allowing(plain) == [("project", Rule("edit", path="cart.py"))]
    assert permissions.allowing(risky) == []
    assert Permissions(repo).allowing(ApprovalRequest("shell", "run: ls", "ls")) == []


def test_price_table_rows_and_bad_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "prices.json"
    configure(monkeypatch, prices=str(table))
    table.write_text(json.dumps({"m": {"input": 3, "output": 15}, "bad": {"input": "x"}}))
    assert load_prices() == {"m": Price(3.0, 15.0)}  # the bad row is left out
    assert cost_usd("m", 1_000_000, 100_000) == pytest.approx(4.5)
    assert cost_usd("other", 10, 10) is None  # no row: unknown, not zero
    table.write_text("not json")
    assert cost_usd("m", 10, 10) is None
