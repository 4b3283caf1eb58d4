"""The pieces of a conversation: requests, streamed replies, tool calls, injected context."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownStream

from theus.printable import PrintableStream, printable
from theus.protocol import KIND, SUMMARY, Message, is_request
from tui.engine import RecallResult
from tui.widgets import fmt

if TYPE_CHECKING:
    from knowledge.recall.recaller import Hit

RESULT_CHARS = 4000  # a tool result shown expanded; the model saw all of it


class Plain(Static):
    """Text shown as it is (no markup), minus what would act on the terminal: the model's and
    the files' text may carry escape sequences (`theus.printable`)."""

    def __init__(self, text: str = "", **kw: Any) -> None:
        super().__init__(printable(text), markup=False, **kw)

    def update(self, content: Any = "", **kw: Any) -> None:
        super().update(printable(content) if isinstance(content, str) else content, **kw)


class UserRequest(Plain):
    """What the person typed."""

    DEFAULT_CLASSES = "chat-item"


class Notice(Plain):
    """A line from the app itself (errors, compaction, slash command output)."""

    DEFAULT_CLASSES = "chat-item"

    def __init__(self, text: str, *, error: bool = False) -> None:
        super().__init__(text)
        self.set_class(error, "-error")


class AssistantReply(Markdown):
    """The answer, streamed: `feed` writes to a MarkdownStream (re-rendering per chunk is
    quadratic), `end_stream` flushes it. (`append` is Markdown's own, used by the stream.)"""

    DEFAULT_CLASSES = "chat-item"

    def __init__(self, text: str = "") -> None:
        """`text`: an answer already complete (a resumed conversation), shown as it is."""
        text = printable(text)
        super().__init__(text)
        self._stream: MarkdownStream | None = None
        self._clean = PrintableStream()
        self.text = text

    async def feed(self, chunk: str) -> None:
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        await self._write(self._clean.feed(chunk))

    async def _write(self, chunk: str) -> None:
        if chunk and self._stream is not None:
            self.text += chunk
            await self._stream.write(chunk)

    async def end_stream(self) -> None:
        if self._stream is not None:
            await self._write(self._clean.end())
            await self._stream.stop()
            self._stream = None


class ToolCallView(Collapsible):
    """One tool call, one line until expanded to its arguments and result."""

    DEFAULT_CLASSES = "chat-item"

    def __init__(self, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        self.call_id = call_id
        self.tool_name = name
        self.arguments = arguments
        self._args = Plain(_arguments_text(arguments), classes="tool-args")
        self._result = Plain("running…", classes="tool-result")
        super().__init__(
            self._args, self._result, title=_title(name, arguments, "…"), collapsed=True
        )

    def finished(self, result: str, is_error: bool, took_ms: float | None) -> None:
        """`took_ms` None: a call replayed from a transcript, whose timing was not kept."""
        mark = "✗" if is_error else "✓"
        state = mark if took_ms is None else f"{mark} {fmt.ms(took_ms)}"
        self.title = _title(self.tool_name, self.arguments, state)
        shown = (
            result
            if len(result) <= RESULT_CHARS
            else (result[:RESULT_CHARS] + f"\n… ({len(result) - RESULT_CHARS} more characters)")
        )
        self._result.update(shown)
        self.set_class(is_error, "-error")


class InjectionView(Collapsible):
    """The context recalled for this request: tokens and recall time, expanding to the block."""

    DEFAULT_CLASSES = "chat-item injection"

    def __init__(
        self,
        tokens: int,
        took_ms: float,
        block: str,
        reason: str = "",
        dropped: bool = False,
        examples: int = 0,
    ) -> None:
        self.tokens = tokens
        self.block = block
        if block:
            title = f"context: {tokens} tokens injected · recall {fmt.ms(took_ms)}"
            if examples:  # past runs quoted as examples (`theus history`)
                title += f" · {examples} past run{'s' if examples > 1 else ''} as examples"
            body = block
        else:
            why = "dropped (deadline)" if dropped else (reason or "nothing relevant")
            title = f"context: none · recall {fmt.ms(took_ms)}"
            body = f"No block was attached: {why}."
        super().__init__(Plain(body, classes="block"), title=title, collapsed=True)


class RecallView(Vertical):
    """No-model mode (and /recall): ranked results and the block that would be injected."""

    DEFAULT_CLASSES = "chat-item recall-view"

    def __init__(self, query: str, result: RecallResult) -> None:
        super().__init__()
        self.query_text = query  # not `query`: that is Widget.query
        self.result = result

    def compose(self) -> ComposeResult:
        recall = self.result.recall
        hits = recall.hits
        head = (
            f"recall “{fmt.clip(self.query_text, 60)}”: {len(hits)} results · "
            f"{fmt.ms(recall.took_ms)}"
        )
        yield Plain(head, classes="recall-head")
        lines = [
            f"{i:>2}. {h.score:.2f}  {h.kind:<7} {_where(h)}  {h.name}"
            for i, h in enumerate(hits, 1)
        ]
        yield Plain("\n".join(lines) or "nothing found", classes="recall-hits")
        block = self.result.block
        title = (
            f"block that would be injected: {self.result.tokens} tokens"
            if block
            else "no block would be injected (best score below the threshold)"
        )
        yield Collapsible(Plain(block or "—", classes="block"), title=title, collapsed=not block)


def _where(hit: Hit) -> str:
    if not hit.path:
        return hit.key
    return f"{hit.path}:{hit.line}" if hit.line else hit.path


def _arguments_text(arguments: dict[str, Any]) -> str:
    try:
        return json.dumps(arguments, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(arguments)


def _title(name: str, arguments: dict[str, Any], state: str) -> str:
    first = next((str(v) for v in arguments.values() if isinstance(v, str | int)), "")
    return printable(f"⚙ {name} {fmt.clip(first, 60)} {state}".replace("  ", " "))


def replayed(messages: list[Message]) -> list[Widget]:
    """A resumed conversation as the chat shows it: requests, answers and tool calls (with
    their results); the system prompt and the recalled blocks are left out."""
    shown: list[Widget] = []
    calls: dict[str, ToolCallView] = {}
    for message in messages:
        role, content = message.get("role"), _content_text(message)
        if is_request(message):
            shown.append(UserRequest(content))
        elif role == "user" and message.get(KIND) == SUMMARY:
            shown.append(Notice("earlier turns were summarised (compacted)"))
        elif role == "assistant":
            if content.strip():
                shown.append(AssistantReply(content))
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                view = ToolCallView(
                    str(call.get("id", "")),
                    str(function.get("name", "")),
                    _parsed(function.get("arguments")),
                )
                calls[view.call_id] = view
                shown.append(view)
        elif role == "tool":
            found = calls.pop(str(message.get("tool_call_id", "")), None)
            if found is not None:
                found.finished(content, content.startswith("error:"), None)
    return shown


def _content_text(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _parsed(arguments: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
