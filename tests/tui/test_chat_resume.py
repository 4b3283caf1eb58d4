"""Resuming in the app (issue 19): the earlier conversation is on screen, `/resume` and
`theus -r` with no id open a picker, and a unique prefix of an id will do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.screen import Screen
from textual.widget import Widget

from tests.scripted_server import ScriptedServer, text
from tests.tui.conftest import SETTINGS, model_settings, ready, wait_for
from theus.sessions import SessionNotFound, SessionStore
from tui.app import TheusApp
from tui.screens.session_picker import SessionPicker
from tui.widgets.chat_items import AssistantReply, Notice, ToolCallView, UserRequest

EARLIER: list[dict[str, object]] = [
    {"role": "system", "content": "You are Theus."},
    {"role": "user", "content": "what does price_of return"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "pricing.py"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "def price_of(item): ..."},
    {"role": "assistant", "content": "EARLIER-ANSWER: the item's price."},
]


def saved_session(repo: Path, messages: list[dict[str, object]]) -> str:
    session = SessionStore(repo).create(root=str(repo), model="test-model", headless=False)
    for message in messages:
        session.append({"type": "message", "message": message})
    return session.id


def shown(app: TheusApp, kind: type[Widget]) -> list[str]:
    return [
        str(w.render()) if not isinstance(w, AssistantReply) else w.text
        for w in app.screen.query(kind)
    ]


def listing_picker(app: TheusApp) -> SessionPicker | None:
    """The session picker once it is on screen with the sessions listed, else None."""
    screen: Screen[Any] = app.screen  # as `Screen[object]` it would not narrow
    return screen if isinstance(screen, SessionPicker) and screen.ids else None


async def test_resumed_session_shows_its_conversation(repo: Path, server: ScriptedServer) -> None:
    session = SessionStore(repo).open(saved_session(repo, EARLIER))
    server.add(text("NEW-ANSWER"))
    app = TheusApp(
        repo,
        model_settings(server.url),
        agent_settings=SETTINGS,
        resume=session.messages(),
        session=session,
    )
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        assert shown(app, UserRequest) == ["what does price_of return"]
        assert shown(app, AssistantReply) == ["EARLIER-ANSWER: the item's price."]
        call = app.screen.query_one(ToolCallView)
        assert "read pricing.py ✓" in str(call.query_one("CollapsibleTitle").render())
        assert any(f"resumed session {session.id}" in n for n in shown(app, Notice))
        await pilot.press(*"and now?", "enter")
        await wait_for(pilot, lambda: "NEW-ANSWER" in shown(app, AssistantReply))
        await app.workers.wait_for_complete()
        sent = [m["content"] for m in server.requests[0]["messages"] if m["role"] != "system"]
        assert "what does price_of return" in sent  # the model got the history too


async def test_resume_command_opens_a_picker(repo: Path, server: ScriptedServer) -> None:
    saved_session(repo, EARLIER)
    app = TheusApp(repo, model_settings(server.url), agent_settings=SETTINGS)
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await pilot.press(*"/resume", "enter")
        picker = await wait_for(pilot, lambda: listing_picker(app))
        assert len(picker.ids) == 1
        await pilot.press("enter")
        await wait_for(pilot, lambda: shown(app, AssistantReply))
        assert shown(app, UserRequest) == ["what does price_of return"]
        assert app.resume_session is not None and app.resume_session.id == picker.ids[0]


async def test_no_id_starts_the_app_on_the_picker(repo: Path, server: ScriptedServer) -> None:
    saved_session(repo, EARLIER)
    app = TheusApp(repo, model_settings(server.url), agent_settings=SETTINGS, pick_session=True)
    async with app.run_test(size=(110, 36)) as pilot:
        await wait_for(pilot, lambda: listing_picker(app))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SessionPicker))
        assert not shown(app, UserRequest)


async def test_resume_by_prefix_in_the_app(repo: Path, server: ScriptedServer) -> None:
    session_id = saved_session(repo, EARLIER)
    app = TheusApp(repo, model_settings(server.url), agent_settings=SETTINGS)
    async with app.run_test(size=(110, 36)) as pilot:
        await ready(pilot)
        await pilot.press(*f"/resume {session_id[:-3]}", "enter")
        await wait_for(pilot, lambda: shown(app, AssistantReply))
        await pilot.press(*"/resume nosuch", "enter")
        await wait_for(pilot, lambda: any("no session nosuch" in n for n in shown(app, Notice)))


def test_unique_prefix_resolves_and_an_ambiguous_one_says_so(repo: Path) -> None:
    store = SessionStore(repo)
    first = saved_session(repo, EARLIER)
    assert store.open(first[:-2]).id == first
    second = saved_session(repo, EARLIER)
    common = next(i for i in range(len(first)) if first[i] != second[i])
    with pytest.raises(SessionNotFound, match="sessions start with"):
        store.open(first[:common])


def test_headless_has_no_picker_so_an_empty_id_is_an_error(repo: Path) -> None:
    with pytest.raises(SessionNotFound, match="-r needs a session id"):
        SessionStore(repo).choose(resume="")
