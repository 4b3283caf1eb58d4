"""Compaction: when the conversation nears the model's context size, the model summarises the
older turns and the summary replaces them. The last user request and what followed it stay
verbatim, so the current task goes on undisturbed."""

from __future__ import annotations

from theus.model import ModelClient
from theus.model.limits import conversation_tokens as conversation_tokens
from theus.protocol import INJECTION, KIND, SUMMARY, Message, is_request

SUMMARY_PROMPT = (
    "Summarise the conversation below for your own later use: the user's goals, decisions "
    "made, files read or changed (with paths), commands run and their outcome, and what is "
    "still to do. Be concrete and brief (at most 300 words). Output only the summary."
)


def split_point(messages: list[Message]) -> int:
    """Index of the last real user request: everything before it (after the system prompt)
    can be summarised without cutting a tool call from its result."""
    for i in range(len(messages) - 1, 0, -1):
        message = messages[i]
        if is_request(message):
            # Keep the injection reminder attached to its request.
            if i > 1 and messages[i - 1].get(KIND) == INJECTION:
                return i - 1
            return i
    return 1


def render(messages: list[Message]) -> str:
    lines = []
    for message in messages:
        role = message.get("role", "?")
        content = str(message.get("content") or "")
        if role == "tool":
            content = content[:1500]
        lines.append(f"[{role}] {content}")
        for call in message.get("tool_calls") or ():
            fn = call.get("function", {})
            lines.append(f"[tool call] {fn.get('name')}({str(fn.get('arguments'))[:300]})")
    return "\n".join(lines)


async def summarise(model: ModelClient, older: list[Message]) -> str:
    completion = await model.complete(
        [
            {"role": "system", "content": SUMMARY_PROMPT},
            {"role": "user", "content": render(older)},
        ]
    )
    return completion.text.strip()


def summary_message(summary: str) -> Message:
    return {
        "role": "user",
        "content": "<conversation-summary>\nEarlier turns of this conversation were compacted "
        f"into this summary:\n{summary}\n</conversation-summary>",
        KIND: SUMMARY,
    }
