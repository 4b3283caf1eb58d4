"""Slash commands of the request box: parsing and their one-line descriptions."""

from __future__ import annotations

COMMANDS: dict[str, str] = {
    "help": "keys, commands and how to set a model",
    "clear": "clear the conversation and start a new one",
    "compact": "summarise older turns now",
    "recall": "ranked recall results and the block that would be injected",
    "graph": "open the graph panel (optionally searching)",
    "episodes": "open the episodes panel",
    "memory": "open the memories panel, or remember the given text",
    "model": "show the model, or switch to another name",
    "sessions": "list earlier sessions of this project",
    "resume": "pick an earlier session to go on with (or give its id, or a prefix)",
    "permissions": "standing approvals; `/permissions revoke N` drops one",
    "dashboard": "show the graph in the browser (prints its local address)",
    "mcp": "MCP servers, their state and tools; `/mcp trust` starts this project's",
    "status": "model, session, instructions files and the memory layers' state",
    "cost": "this conversation's tokens (sent, received, injected, extraction) and cost",
    "init": "draft an AGENTS.md from the index, shown for approval before it is written",
    "diff": "what this conversation's edits and writes changed",
    "undo": "put back the files the last turn that changed any had changed",
    "exit": "quit the app (as ctrl+q; /quit too)",
}
ALIASES = {"quit": "exit"}


def parse(text: str) -> tuple[str, str] | None:
    """`/name rest` -> ("name", "rest"); None when `text` is not a slash command."""
    if not text.startswith("/") or text.startswith("//"):
        return None
    name, _, rest = text[1:].partition(" ")
    name = name.strip().lower()
    return ALIASES.get(name, name), rest.strip()


def suggest(name: str) -> list[str]:
    return [c for c in COMMANDS if c.startswith(name[:2])] or list(COMMANDS)
