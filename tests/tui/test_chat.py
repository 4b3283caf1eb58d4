"""The chat against a scripted model server: streaming, tool calls, approvals, the injected
context indicator, slash commands and the status bar."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from knowledge.core.token_count import count_tokens
from tests.conftest import texts_of
from tests.scripted_server import ScriptedServer, prompt_count, text, tool
from tests.tui.conftest import MakeApp, ready, wait_for
from theus import protocol as ev
from tui.messages import AgentEvent, TextBatch
from tui.screens.approval import ApprovalScreen
from tui.screens.chat import ChatScreen
from tui.widgets.chat_items import AssistantReply, InjectionView, Notice, ToolCallView
from tui.widgets.prompt import PromptInput
from tui.widgets.status_bar import StatusBar

ANSWER = "The total is computed in **`Cart.total`**, which sums `price_of` for each item.\n"


def events_of(messages: list[Message], kind: type) -> list[Any]:
    """The agent events of `kind`, once each (the hook sees a message at every dispatch)."""
    unique = {id(m): m for m in messages if isinstance(m, AgentEvent)}
    return [m.event for m in unique.values() if isinstance(m.event, kind)]


async def ask(pilot: Any, request: str) -> None:
    await pilot.press(*request)
    await pilot.press("enter")


def items(app: Any, kind: type) -> list[Any]:
    return list(app.screen.query(kind))


async def test_reply_streams_into_markdown(make_app: MakeApp, server: ScriptedServer) -> None:
    server.add(text(ANSWER))
    seen: list[Message] = []
    app = make_app()
    async with app.run_test(size=(110, 36), message_hook=seen.append) as pilot:
        await ready(pilot)
        await ask(pilot, "where is the total computed")
        reply = await wait_for(
            pilot, lambda: events_of(seen, ev.TurnFinished) and items(app, AssistantReply)
        )
        await app.workers.wait_for_complete()
        await pilot.pause()
        batches = list({id(m): m for m in seen if isinstance(m, TextBatch)}.values())
        assert batches  # it streamed (deltas shown in batches as the screen keeps up)
        assert "".join("".join(b.pieces) for b in batches) == ANSWER
        assert reply[0].text == ANSWER
        assert reply[0].source == ANSWER  # the stream was flushed into the Markdown
        assert server.requests[-1]["stream"] is True


async def test_injected_context_indicator_expands_to_the_block(
    make_app: MakeApp, server: ScriptedServer
) -> None:
    server.add(text("Cart.total adds the prices."))
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "how does the cart total add prices")
        views = await wait_for(pilot, lambda: items(app, InjectionView))
        await app.workers.wait_for_complete()
        await pilot.pause()
        view = views[0]
        assert "cart.py" in view.block and view.tokens > 0
        assert view.collapsed
        title = str(view.query_one("CollapsibleTitle").render())
        assert f"{view.tokens} tokens injected" in title and "recall" in title
        # The block shown is exactly the one the model got (quoted inside the reminder).
        sent = [
            t for m in server.requests[0]["messages"] if m["role"] == "user" for t in texts_of(m)
        ]
        quoted = "\n".join("> " + line if line else ">" for line in view.block.splitlines())
        assert any(quoted in m for m in sent)
        await pilot.click(view.query_one("CollapsibleTitle"))
        await wait_for(pilot, lambda: not view.collapsed)
        body = view.query_one(".block", Static)
        assert body.region.height > 0 and "cart.py" in str(body.render())
        bar = app.screen.query_one(StatusBar)
        assert bar.turn_tokens == view.tokens == bar.total_tokens
        assert bar.recall_ms is not None


async def test_cost_shows_the_ledger_of_what_was_sent(
    make_app: MakeApp, server: ScriptedServer
) -> None:
    server.add(tool("read", {"path": "pricing.py"}), text("price_of returns the price."))
    app = make_app()
    async with app.run_test(size=(160, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "how does the cart total add prices")
        await wait_for(pilot, lambda: items(app, AssistantReply))
        await app.workers.wait_for_complete()
        await ask(pilot, "/cost")
        await wait_for(pilot, lambda: items(app, Notice))
        cost = str(items(app, Notice)[-1].render())
        # The server's own view: the reminder it received, sent in both requests.
        (reminder,) = [
            t
            for t in texts_of(server.requests[0]["messages"][1])
            if t.startswith("<system-reminder>")
        ]
        block = 2 * count_tokens(reminder)
        assert f"block {block:,} · examples 0 · tool results " in cost, cost
        sent = sum(prompt_count(body) for body in server.requests)
        assert f"{sent:,} tokens sent" in cost
        assert "beside them, the memory's extraction calls: " in cost
        bar = app.screen.query_one(StatusBar)
        assert f"mem {block} ({round(100 * block / sent)}%) +extr" in str(bar.render())


async def test_tool_call_is_compact_and_expands(make_app: MakeApp, server: ScriptedServer) -> None:
    server.add(tool("read", {"path": "pricing.py"}), text("price_of returns the price."))
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "read pricing")
        await wait_for(pilot, lambda: items(app, AssistantReply))
        await app.workers.wait_for_complete()
        await pilot.pause()
        view = items(app, ToolCallView)[0]
        title = str(view.query_one("CollapsibleTitle").render())
        assert "read pricing.py ✓" in title
        assert view.collapsed
        await pilot.click(view.query_one("CollapsibleTitle"))
        await wait_for(pilot, lambda: not view.collapsed)
        assert '"path": "pricing.py"' in str(view.query_one(".tool-args", Static).render())
        assert "def price_of" in str(view.query_one(".tool-result", Static).render())


async def test_edit_approved_changes_the_file(
    make_app: MakeApp, server: ScriptedServer, repo: Path
) -> None:
    server.add(
        tool(
            "edit",
            {
                "path": "pricing.py",
                "old_string": 'return item["price"]',
                "new_string": 'return item["price"] * 2',
            },
        ),
        text("Doubled."),
    )
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "double the price")
        modal = await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen)
        await pilot.pause()
        shown = modal.query_one("#approval-body", Static).content
        assert '+    return item["price"] * 2' in shown.code  # the diff, highlighted
        assert "pricing.py" in modal.request.summary
        await pilot.press("y")
        await wait_for(pilot, lambda: items(app, AssistantReply))
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert 'item["price"] * 2' in (repo / "pricing.py").read_text()
        notices = [str(n.render()) for n in items(app, Notice)]
        assert any(n.startswith("approved") for n in notices)


async def test_shell_refused_runs_nothing(
    make_app: MakeApp, server: ScriptedServer, repo: Path
) -> None:
    server.add(tool("shell", {"command": "touch ran.txt"}), text("Not run."))
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "make a file")
        modal = await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen)
        assert modal.request.kind == "shell" and modal.request.detail == "touch ran.txt"
        await pilot.press("n")
        await wait_for(pilot, lambda: items(app, AssistantReply))
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not (repo / "ran.txt").exists()
        view = items(app, ToolCallView)[0]
        assert view.has_class("-error")
        assert "not approved" in str(view.query_one(".tool-result", Static).render())
        # The model was told.
        assert "not approved" in server.requests[-1]["messages"][-1]["content"]


async def test_slash_commands(make_app: MakeApp, server: ScriptedServer) -> None:
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "/model")
        await wait_for(pilot, lambda: items(app, Notice))
        assert "test-model" in str(items(app, Notice)[-1].render())
        await ask(pilot, "/recall price of an item")
        await wait_for(pilot, lambda: app.screen.query("RecallView"))
        await ask(pilot, "/clear")
        await wait_for(pilot, lambda: not app.screen.query("#log > *"))
        await ask(pilot, "/graph price")
        await wait_for(pilot, lambda: app.current_mode == "graph")
        await pilot.press("f2")
        await ask(pilot, "/nonsense")
        await wait_for(pilot, lambda: items(app, Notice))
        assert "unknown command" in str(items(app, Notice)[-1].render())
        await pilot.press("f1")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "HelpScreen")
        await pilot.press("escape")
        assert server.requests == []  # no slash command reached the model


async def test_a_refusal_tells_the_model_what_to_do_instead(
    make_app: MakeApp, server: ScriptedServer, repo: Path
) -> None:
    server.add(tool("shell", {"command": "touch ran.txt"}), text("Using make."))
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "make a file")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("t")
        # The letters that answer the dialog are text here: "yes" approves nothing.
        await pilot.press(*"yes, use  make instead", "enter")
        await wait_for(pilot, lambda: items(app, AssistantReply))
        await app.workers.wait_for_complete()
        assert not (repo / "ran.txt").exists()
        told = server.requests[-1]["messages"][-1]["content"]
        assert "not approved (the user declined and said: yes, use make instead)" in told


async def test_init_drafts_agents_md_for_approval(
    make_app: MakeApp, server: ScriptedServer, repo: Path
) -> None:
    (repo / "Makefile").write_text("test:\n\tpython -m pytest\n")
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "/init")
        modal = await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen)
        assert "+- test: `make test`" in modal.request.detail
        assert not modal.query("#session")  # no "always" for an instructions file
        await pilot.press("y")
        await wait_for(pilot, lambda: (repo / "AGENTS.md").exists())
        assert "- test: `make test`" in (repo / "AGENTS.md").read_text()
        await ask(pilot, "/init")
        await wait_for(
            pilot, lambda: "already exists" in " ".join(str(n.render()) for n in items(app, Notice))
        )
    assert server.requests == []


async def test_undo_puts_back_the_last_turns_files_byte_for_byte(
    make_app: MakeApp, server: ScriptedServer, repo: Path
) -> None:
    original = "class Cart:  # prix en €\r\n    items = []\r\n".encode()
    (repo / "cart.py").write_bytes(original)
    server.add(
        tool("edit", {"path": "cart.py", "old_string": "class Cart", "new_string": "class Basket"}),
        tool("write", {"path": "notes/new.txt", "content": "made\n"}),
        text("Done."),
    )
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "/undo")
        await wait_for(pilot, lambda: items(app, Notice))
        assert "nothing to undo" in str(items(app, Notice)[-1].render())
        await ask(pilot, "rename it and take a note")
        for _ in range(2):
            await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            await pilot.press("y")
        await wait_for(
            pilot, lambda: "Done." in " ".join(r.source for r in items(app, AssistantReply))
        )
        await app.workers.wait_for_complete()
        assert b"class Basket" in (repo / "cart.py").read_bytes()
        await ask(pilot, "/diff")
        await wait_for(pilot, lambda: "+class Basket" in str(items(app, Notice)[-1].render()))
        assert "+++ b/notes/new.txt" in str(items(app, Notice)[-1].render())
        await ask(pilot, "/undo")
        await wait_for(pilot, lambda: "put back" in str(items(app, Notice)[-1].render()))
        assert "cart.py, notes/new.txt" in str(items(app, Notice)[-1].render())
        assert (repo / "cart.py").read_bytes() == original
        assert not (repo / "notes" / "new.txt").exists()
        await ask(pilot, "/diff")
        await wait_for(pilot, lambda: "no changes" in str(items(app, Notice)[-1].render()))


async def test_status_cost_and_exit(make_app: MakeApp, server: ScriptedServer) -> None:
    server.add(text("It sums prices."))
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "/cost")
        await wait_for(pilot, lambda: items(app, Notice))
        assert "no tokens spent yet" in str(items(app, Notice)[-1].render())
        await ask(pilot, "what does the cart do?")
        await wait_for(
            pilot,
            lambda: "It sums prices." in " ".join(r.source for r in items(app, AssistantReply)),
        )
        await ask(pilot, "/cost")
        await wait_for(pilot, lambda: len(items(app, Notice)) == 2)
        cost = str(items(app, Notice)[-1].render())
        chat: Screen[Any] = app.screen  # as `Screen[object]` it would not narrow
        assert isinstance(chat, ChatScreen)
        assert cost.startswith("1 model calls: ") and chat.agent.usage.prompt_tokens > 0
        assert f"{chat.agent.usage.prompt_tokens:,} tokens sent" in cost
        await ask(pilot, "/status")
        await wait_for(pilot, lambda: len(items(app, Notice)) == 3)
        status = str(items(app, Notice)[-1].render())
        assert "model: test-model" in status, status
        assert f"session: {chat.agent.session.id}" in status
        assert "index: " in status and "instructions" in status
        await ask(pilot, "/quit")
        await wait_for(pilot, lambda: not app.is_running)
    assert len(server.requests) == 1  # none of them reached the model


async def test_history_walks_back(make_app: MakeApp, server: ScriptedServer) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "first")
        await ask(pilot, "second")
        prompt = app.screen.query_one("#prompt", PromptInput)
        await pilot.press("up")
        assert prompt.text == "second"
        await pilot.press("up")
        assert prompt.text == "first"
        await pilot.press("down", "down")
        assert prompt.text == ""
        await pilot.press(*"two", "ctrl+j", *"lines")
        assert prompt.text == "two\nlines"


async def test_compact_replaces_older_turns(make_app: MakeApp, server: ScriptedServer) -> None:
    server.add(
        text("First answer."), text("Second answer."), text("Summary: the user asked two things.")
    )
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "first question")
        await wait_for(pilot, lambda: len(items(app, AssistantReply)) == 1)
        await app.workers.wait_for_complete()
        await ask(pilot, "second question")
        await wait_for(pilot, lambda: len(items(app, AssistantReply)) == 2)
        await app.workers.wait_for_complete()
        await ask(pilot, "/compact")
        await wait_for(
            pilot, lambda: any("compacted" in str(n.render()) for n in items(app, Notice))
        )
        chat: Screen[Any] = app.screen  # as `Screen[object]` it would not narrow
        assert isinstance(chat, ChatScreen)
        agent = chat.agent
        assert any(
            "Summary: the user asked two things." in str(m.get("content")) for m in agent.messages
        )
        assert len(server.requests) == 3  # the third call wrote the summary


async def test_palette_opens_a_panel(make_app: MakeApp) -> None:
    app = make_app(model=False)
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CommandPalette")
        await pilot.press(*"Memories panel")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.current_mode == "memories")


async def test_user_keymap(make_app: MakeApp, theus_home: Path) -> None:
    (theus_home / "config").mkdir(parents=True, exist_ok=True)
    (theus_home / "config" / "keymap.json").write_text('{"app.graph": "ctrl+g"}')
    app = make_app(model=False)
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: app.current_mode == "graph")


async def test_an_opening_request_is_sent_at_start(
    make_app: MakeApp, server: ScriptedServer
) -> None:
    """`theus "where are the tests"`: the app opens with that request sent, as claude does."""
    server.add(text("In tests/."))
    app = make_app(first_request="where are the tests")
    async with app.run_test(size=(110, 36)) as pilot:
        await wait_for(
            pilot, lambda: [r.text for r in items(app, AssistantReply)] == ["In tests/."]
        )
        assert [texts_of(m)[-1] for m in server.requests[0]["messages"] if m["role"] == "user"] == [
            "where are the tests"
        ]
        assert app.first_request == ""  # sent once, not again on the next mount


async def test_a_second_request_waits_for_the_running_turn(
    make_app: MakeApp, server: ScriptedServer
) -> None:
    answer = threading.Event()
    server.add(text("Slow answer.", hold=answer))
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "first")
        chat: Screen[Any] = app.screen  # as `Screen[object]` it would not narrow
        assert isinstance(chat, ChatScreen)
        await wait_for(pilot, lambda: chat.busy)
        await ask(pilot, "second")
        await wait_for(
            pilot, lambda: any("a turn is running" in str(n.render()) for n in items(app, Notice))
        )
        assert app.screen.query_one("#prompt", PromptInput).text == "second"  # kept for later
        answer.set()
        await wait_for(
            pilot, lambda: [r.text for r in items(app, AssistantReply)] == ["Slow answer."]
        )
        await app.workers.wait_for_complete()
        assert len(server.requests) == 1


async def test_dashboard_command_serves_the_live_graph(
    make_app: MakeApp, server: ScriptedServer
) -> None:
    import json
    import re
    import urllib.request

    from entrypoint.cli import serve_dashboard

    app = make_app(dashboard=serve_dashboard)  # as the entry point hands it in
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "/dashboard")
        await wait_for(
            pilot, lambda: any("dashboard" in str(n.render()) for n in items(app, Notice))
        )
        notice = next(str(n.render()) for n in items(app, Notice) if "dashboard" in str(n.render()))
        url = re.search(r"http://127\.0\.0\.1:\d+/\S+", notice)
        assert url is not None, notice
        base, _, query = url.group(0).partition("?")
        status_url = base.replace("/dashboard", "/api/status") + "?" + query
        with urllib.request.urlopen(status_url, timeout=10) as response:
            status = json.load(response)
        assert status["counts"]["file"] >= 1
        assert server.requests == []


async def test_an_app_given_no_dashboard_says_where_to_get_one(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await ask(pilot, "/dashboard")
        notice = await wait_for(
            pilot,
            lambda: next(
                (str(n.render()) for n in items(app, Notice) if "dashboard" in str(n.render())),
                None,
            ),
        )
        assert "run `theus dashboard` beside it" in notice


async def test_escape_sequences_from_the_model_and_files_never_reach_the_terminal(
    make_app: MakeApp, server: ScriptedServer, repo: Path
) -> None:
    (repo / "evil.txt").write_text("file says \x1b]52;c;cm0gLXJmIH4=\x07 hi\n")
    server.add(tool("read", {"path": "evil.txt"}), text("reply \x1b[2J\x1b]0;owned\x07\u202eokay"))
    seen: list[Message] = []
    app = make_app()
    async with app.run_test(size=(110, 36), message_hook=seen.append) as pilot:
        await ready(pilot)
        await ask(pilot, "read evil.txt")
        await wait_for(
            pilot, lambda: events_of(seen, ev.TurnFinished) and items(app, AssistantReply)
        )
        await app.workers.wait_for_complete()
        await pilot.pause()
        reply = items(app, AssistantReply)[0]
        assert reply.text == "reply okay"
        tool_view = items(app, ToolCallView)[0]
        shown = str(tool_view.query_one(".tool-result", Static).render())
        assert "file says" in shown and "\x1b" not in shown and "\x07" not in shown
