"""Microcompact: once the provider's prompt cache has surely expired (more than an hour since
the last assistant message), re-sending old tool results costs full price and buys nothing, so
they are replaced by a short placeholder before the next call. Clearing then never causes a
cache miss that would not have happened anyway."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from knowledge.core.token_count import count_tokens
from theus.protocol import CLEARED, STAMP, Message


@dataclass(frozen=True, slots=True)
class Clearing:
    # tool_call_id -> placeholder text that replaced the result
    placeholders: dict[str, str]
    kept: int
    tokens_saved: int


def placeholder(name: str, arguments: str, tokens: int) -> str:
    args = " ".join(arguments.split())
    if len(args) > 160:
        args = args[:157] + "..."
    return (
        f"[Old tool result cleared to save context (~{tokens} tokens): {name}({args}). "
        "Call the tool again with the same arguments if you need it.]"
    )


def last_assistant_time(messages: list[Message]) -> float | None:
    for message in reversed(messages):
        if message.get("role") == "assistant" and STAMP in message:
            return float(message[STAMP])
    return None


def plan(
    messages: list[Message],
    now: float,
    *,
    after_s: float,
    keep: int,
    clearable: Callable[[str], bool],
) -> Clearing | None:
    """What to clear, or None when the cache may still be warm or nothing is old enough."""
    last = last_assistant_time(messages)
    if last is None or now - last <= after_s:
        return None
    calls: dict[str, tuple[str, str]] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            fn = call.get("function", {})
            calls[call.get("id", "")] = (fn.get("name", ""), fn.get("arguments", ""))
    results = [m for m in messages if m.get("role") == "tool" and not m.get(CLEARED)]
    old = results[:-keep] if keep > 0 else results
    placeholders: dict[str, str] = {}
    saved = 0
    for message in old:
        call_id = message.get("tool_call_id", "")
        name, arguments = calls.get(call_id, ("?", ""))
        if not clearable(name):
            continue
        tokens = count_tokens(str(message.get("content") or ""))
        text = placeholder(name, arguments, tokens)
        placeholders[call_id] = text
        saved += tokens - count_tokens(text)
    if not placeholders:
        return None
    return Clearing(placeholders, kept=min(keep, len(results)), tokens_saved=max(saved, 0))


def apply(messages: list[Message], placeholders: dict[str, str]) -> None:
    """Replace the cleared results in place (also used when replaying a transcript)."""
    for message in messages:
        if message.get("role") == "tool" and message.get("tool_call_id") in placeholders:
            message["content"] = placeholders[message["tool_call_id"]]
            message[CLEARED] = True
