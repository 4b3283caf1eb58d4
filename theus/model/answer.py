"""Answer assembly: what a chat-completions server sent, as one `Completion`. Streamed chunks
are folded in as they arrive (text, tool-call pieces by index, usage, the finish), within
Theus's bound on one answer (`MAX_ANSWER_CHARS`); a non-streaming reply is read whole. No I/O:
the transport reads, this only adds up."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import openai

from theus.model.bounds import MAX_ANSWER_CHARS
from theus.protocol import ToolCall

TextCallback = Callable[[str], None]


@dataclass(slots=True)
class Completion:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    # The server reported no usage: the counts above are our estimate.
    usage_estimated: bool = False
    # Work-arounds started by this call, each said once per process (for the status line).
    notices: list[str] = field(default_factory=list)
    # Why the client cut the answer (finish_reason "length" then), when it was not the server.
    cut: str | None = None

    def cut_here(self, why: str) -> None:
        """The answer ends here, as if the server had stopped at its output limit."""
        self.finish_reason, self.cut = "length", f"{why} (Theus's bound on one answer)"


class StreamedAnswer:
    """A streamed answer as it arrives: each text piece goes to `on_text` at once."""

    def __init__(self, on_text: TextCallback) -> None:
        self._on_text = on_text
        self._text: list[str] = []
        self._calls: dict[int, dict[str, str]] = {}
        self._size = 0
        self.usage_seen = False
        self.result = Completion(text="")

    def add(self, chunk: Any) -> bool:
        """Fold in one chunk; False once the answer reached the bound (it is cut there)."""
        if chunk.usage is not None:
            self.usage_seen = True
            self.result.prompt_tokens = chunk.usage.prompt_tokens or 0
            self.result.completion_tokens = chunk.usage.completion_tokens or 0
        for choice in chunk.choices or ():
            delta = choice.delta
            if delta is not None:
                self._add_text(delta.content or "")
                for call in delta.tool_calls or ():
                    self._add_call(call)
            if choice.finish_reason:
                self.result.finish_reason = choice.finish_reason
        if self._size >= MAX_ANSWER_CHARS:
            self.result.cut_here(f"answer cut at {MAX_ANSWER_CHARS:,} characters")
            return False
        return True

    @property
    def text(self) -> str:
        """The text so far (a partial answer, when the stream fails)."""
        return "".join(self._text)

    @property
    def started(self) -> bool:
        """Whether anything of the answer (text or a tool call) has arrived."""
        return bool(self._text or self._calls)

    def completion(self) -> Completion:
        """The whole answer: its text and its tool calls in index order."""
        self.result.text = self.text
        self.result.tool_calls = [
            ToolCall(id=c["id"] or f"call_{i}", name=c["name"], arguments=c["arguments"])
            for i, c in sorted(self._calls.items())
        ]
        return self.result

    def _add_text(self, content: str) -> None:
        if content:
            piece = self._take(content)
            self._text.append(piece)
            self._on_text(piece)

    def _add_call(self, call: Any) -> None:
        slot = self._calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
        if call.id:
            slot["id"] = call.id
        if call.function is not None:
            for part in ("name", "arguments"):
                slot[part] += self._take(getattr(call.function, part) or "")

    def _take(self, piece: str) -> str:
        piece = piece[: MAX_ANSWER_CHARS - self._size]
        self._size += len(piece)
        return piece


def whole_answer(reply: openai.types.chat.ChatCompletion) -> Completion | None:
    """A non-streaming reply's answer (usage left to the caller); None without a choice."""
    choice = reply.choices[0] if reply.choices else None
    if choice is None:
        return None
    result = Completion(text=choice.message.content or "", finish_reason=choice.finish_reason)
    result.tool_calls = [
        ToolCall(id=c.id or f"call_{i}", name=c.function.name, arguments=c.function.arguments or "")
        for i, c in enumerate(choice.message.tool_calls or ())
        if isinstance(c, openai.types.chat.ChatCompletionMessageFunctionToolCall)
    ]
    return result
