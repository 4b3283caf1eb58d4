"""Every slash command and panel of the app, each declared once, next to its handler: adding
one is one decorated function here. The declaration feeds the keys, the command palette, the
help screen, the prompt's suggestions and the dispatch (see `tui.registry`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual.binding import Binding

from tui.app_handle import theus_app
from tui.registry import Key, Registry
from tui.widgets.chat_items import Notice

if TYPE_CHECKING:  # the chat screen is loaded with its mode, after the app
    from tui.screens.chat import ChatScreen

REGISTRY = Registry()
PANELS = Binding.Group("Panels", compact=True)


@REGISTRY.command(
    "help",
    "keys, commands and how to set a model",
    key=Key("f1", "Help", "Keys, slash commands, model setup", id="app.help"),
    title="Help",
)
async def help_(chat: ChatScreen, arg: str) -> None:
    theus_app(chat).show_help()


@REGISTRY.command(
    "clear",
    "clear the conversation and start a new one",
    key=Key(
        "ctrl+l",
        "Clear",
        "Clear the conversation and start a new one (/clear)",
        id="chat.clear",
        on="chat",
    ),
)
async def clear(chat: ChatScreen, arg: str) -> None:
    await chat.end_session()


@REGISTRY.command("compact", "summarise older turns now")
async def compact(chat: ChatScreen, arg: str) -> None:
    chat.compact()


@REGISTRY.command("recall", "ranked recall results and the block that would be injected")
async def recall(chat: ChatScreen, arg: str) -> None:
    if arg:
        chat.recall(arg)
    else:
        await chat.add(Notice("usage: /recall QUERY"))


@REGISTRY.command(
    "chat",
    "the conversation",
    key=Key("f2", "Chat", "The conversation", id="app.chat", group=PANELS),
    title="Chat",
    panel="chat",
    slash=False,
)
async def chat_panel(chat: ChatScreen, arg: str) -> None:
    await theus_app(chat).open_panel("chat")


@REGISTRY.command(
    "graph",
    "open the graph panel (optionally searching)",
    key=Key("f3", "Graph", "Search and browse the knowledge graph", id="app.graph", group=PANELS),
    title="Graph panel",
    panel="graph",
)
async def graph(chat: ChatScreen, arg: str) -> None:
    await theus_app(chat).open_panel("graph", arg)


@REGISTRY.command(
    "episodes",
    "open the episodes panel",
    key=Key("f4", "Episodes", "What earlier sessions did", id="app.episodes", group=PANELS),
    title="Episodes panel",
    panel="episodes",
)
async def episodes(chat: ChatScreen, arg: str) -> None:
    await theus_app(chat).open_panel("episodes")


@REGISTRY.command(
    "memory",
    "open the memories panel, or remember the given text",
    aliases=("memories",),
    key=Key("f5", "Memories", "Add, edit and delete memories", id="app.memories", group=PANELS),
    title="Memories panel",
    panel="memories",
)
async def memory(chat: ChatScreen, arg: str) -> None:
    if arg:
        theus_app(chat).remember(arg)
    else:
        await theus_app(chat).open_panel("memories")


@REGISTRY.command("model", "show the model, or switch to another name")
async def model(chat: ChatScreen, arg: str) -> None:
    await chat.add(Notice(theus_app(chat).switch_model(arg)))


@REGISTRY.command("sessions", "list earlier sessions of this project")
async def sessions(chat: ChatScreen, arg: str) -> None:
    chat.list_sessions()


@REGISTRY.command(
    "resume",
    "pick an earlier session to go on with (or give its id, or a prefix)",
    while_busy=False,
)
async def resume(chat: ChatScreen, arg: str) -> None:
    if arg:
        chat.resume(arg)
    else:
        chat.pick_session()


@REGISTRY.command("permissions", "standing approvals; `/permissions revoke N` drops one")
async def permissions(chat: ChatScreen, arg: str) -> None:
    await chat.add(Notice(await asyncio.to_thread(chat.permissions_text, arg)))


@REGISTRY.command("dashboard", "show the graph in the browser (prints its local address)")
async def dashboard(chat: ChatScreen, arg: str) -> None:
    chat.open_dashboard()


@REGISTRY.command("mcp", "MCP servers, their state and tools; `/mcp trust` starts this project's")
async def mcp(chat: ChatScreen, arg: str) -> None:
    chat.show_mcp(arg)


@REGISTRY.command("status", "model, session, instructions files and the memory layers' state")
async def status(chat: ChatScreen, arg: str) -> None:
    await chat.add(Notice(await asyncio.to_thread(chat.status_text)))


@REGISTRY.command(
    "cost",
    "this conversation's tokens (sent, received, injected, extraction), the ledger of what was "
    "sent, and cost",
)
async def cost(chat: ChatScreen, arg: str) -> None:
    await chat.add(Notice(chat.cost_text()))


@REGISTRY.command(
    "init", "draft an AGENTS.md from the index, shown for approval before it is written"
)
async def init(chat: ChatScreen, arg: str) -> None:
    chat.init_agents_file()


@REGISTRY.command("diff", "what this conversation's edits and writes changed")
async def diff(chat: ChatScreen, arg: str) -> None:
    await chat.add(Notice(await asyncio.to_thread(chat.diff_text)))


@REGISTRY.command(
    "undo", "put back the files the last turn that changed any had changed", while_busy=False
)
async def undo(chat: ChatScreen, arg: str) -> None:
    await chat.add(Notice(await asyncio.to_thread(chat.undo_text)))


@REGISTRY.command(
    "exit",
    "quit the app (as ctrl+q; /quit too)",
    aliases=("quit",),
    key=Key("ctrl+q", "Quit", "Leave theus", id="app.quit", priority=True),
)
async def exit_(chat: ChatScreen, arg: str) -> None:
    await theus_app(chat).action_quit()
