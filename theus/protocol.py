"""The agent's protocol, at the bottom of `theus`: the chat message record, tool calls, usage
and the events the loop tells its front end (chat app, headless printer, tests). `model`,
`tools`, `sessions` and `agent` import it; it imports nothing of theirs.

A chat message is an OpenAI-format dict (sent to the server and kept in session files as it
is); our metadata rides in keys that start with "_" and never reach the server (`wire`).

The loop calls `sink(event)` with one of the dataclasses below, in order. A sink is a plain
callable; it must not block (queue the event if rendering is slow). The agent knows nothing of
Textual: the chat app and `theus -p` are both just sinks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Required, TypedDict

# When an assistant message arrived (epoch seconds): microcompact's clock.
STAMP: Final = "_t"
# What a user-role message really is when the user did not write it.
KIND: Final = "_kind"
INJECTION: Final = "injection"  # a recalled context block (quoted data, re-sent with each request)
SUMMARY: Final = "summary"  # compaction's summary of older turns
CLEARED: Final = "_cleared"  # on a tool result microcompact replaced by a placeholder
# On an injected block: the tokens of its few-shot examples section, as quoted (the ledger
# counts them apart from the rest of the block).
EXAMPLES: Final = "_examples"


class Message(TypedDict, total=False):
    role: Required[Literal["system", "user", "assistant", "tool"]]
    content: str | list[dict[str, Any]] | None
    tool_calls: list[dict[str, Any]]
    tool_call_id: str
    _t: float
    _kind: Literal["injection", "summary"]
    _cleared: bool
    _examples: int


def is_request(message: Message) -> bool:
    """A request the user wrote (not an injected block or a summary)."""
    return message.get("role") == "user" and not message.get(KIND)


def text_of(content: object) -> str:
    """A message content's text: the string, or its text parts joined (others dropped)."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n\n".join(
        str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text"
    )


def wire(message: Message) -> dict[str, Any]:
    """The message as the server expects it: our metadata keys stripped."""
    return {k: v for k, v in message.items() if not k.startswith("_")}


# The parts of a request the ledger counts, in the order they are shown.
LEDGER_PARTS: Final = (
    "system",
    "instructions",
    "tool_schemas",
    "history",
    "block",
    "examples",
    "tool_results",
    "request",
    "framing",
)


@dataclass(slots=True)
class Ledger:
    """What the requests to the model carried, part by part, in tokens of the one estimator
    (`knowledge.core.token_count`), summed over a turn's (or a run's) model calls. The parts
    add up to the prompt a server counts: `framing` is the chat template's own tokens (per
    message, and the reply's opening). Built by `theus.agent.ledger`."""

    system: int = 0  # the system prompt, without the project's instructions
    instructions: int = 0  # AGENTS.md, CLAUDE.md… inside the system message
    tool_schemas: int = 0  # the tools' JSON schemas, which a server renders into the prompt
    history: int = 0  # earlier messages: requests, answers, tool calls, a compaction summary
    block: int = 0  # the <system-reminder> context blocks, their examples section aside
    examples: int = 0  # the blocks' few-shot examples of past runs
    tool_results: int = 0
    request: int = 0  # the request being answered
    framing: int = 0

    def add(self, other: Ledger) -> None:
        for part in LEDGER_PARTS:
            setattr(self, part, getattr(self, part) + getattr(other, part))

    def as_dict(self) -> dict[str, int]:
        return {part: getattr(self, part) for part in LEDGER_PARTS}


@dataclass(slots=True)
class Usage:
    """Token counts summed over the model calls of a turn (or a whole run)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Tokens of the injected context blocks attached (once each, by count_tokens).
    injected_tokens: int = 0
    model_calls: int = 0
    # Tokens of the facts layer's extraction calls (S1, S1.5), beside the conversation's.
    extraction_tokens: int = 0
    ledger: Ledger = field(default_factory=Ledger)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.injected_tokens += other.injected_tokens
        self.model_calls += other.model_calls
        self.extraction_tokens += other.extraction_tokens
        self.ledger.add(other.ledger)

    def as_dict(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "injected_tokens": self.injected_tokens,
            "model_calls": self.model_calls,
            "extraction_tokens": self.extraction_tokens,
            # The request's parts, and beside them (not in their sum) the memory's own calls.
            "ledger": {**self.ledger.as_dict(), "extraction": self.extraction_tokens},
        }


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the assistant's answer as it streams in."""

    text: str


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """One complete assistant message (after its stream ended): text and requested tools."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    # Raw JSON text as the model sent it; it may be malformed (the tool then reports an error).
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    id: str
    name: str
    result: str
    is_error: bool = False
    took_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class InjectionInfo:
    """The outcome of the per-request recall. `block` is empty when nothing was attached:
    below the score threshold, disabled, failed, or `dropped` (missed its deadline)."""

    tokens: int
    took_ms: float
    block: str
    dropped: bool = False
    best_score: float = 0.0
    reason: str = ""
    examples: int = 0  # past runs quoted as few-shot examples (knowledge.run_history)
    examples_tokens: int = 0  # their section's tokens, as quoted in the block's message


@dataclass(slots=True)
class ApprovalRequest:
    """The agent wants to edit a file, run a command or call an MCP server's tool.

    Approval goes through the agent's `approver` (an async callable returning bool). The default
    approver emits this event and awaits `future`: the front end resolves it with
    `future.set_result(True/False)`. `detail` is a unified diff (edit), the command (shell) or
    the call's arguments as JSON (mcp, whose `tool` is the namespaced `server__tool`).
    """

    kind: Literal["edit", "shell", "mcp"]
    summary: str
    detail: str
    path: str | None = None
    tool: str | None = None
    future: asyncio.Future[bool] | None = field(default=None, compare=False)
    # Why the target is risky (an edit of a file that runs code by itself): "always allow"
    # rules never cover such a request (`theus.permissions`).
    protected: str = ""
    # An MCP call's server, by the identity of its entry (`ServerConfig.identity`): "always"
    # rules name it, so a server of the same name elsewhere is asked again.
    server: str = ""
    # Set by whoever refused it, before answering: why, or what to do instead. The model is
    # told this instead of the run's general hint (`ToolContext.refusal`).
    reason: str = ""


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """The turn ended: `stop` is "end" (answer given), "max_turns", "error" or "cancelled"."""

    text: str
    usage: Usage
    num_turns: int
    stop: Literal["end", "max_turns", "error", "cancelled"] = "end"


@dataclass(frozen=True, slots=True)
class Compacted:
    """Older turns were replaced by a model-written summary (the context was nearly full)."""

    summary: str
    messages_replaced: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, slots=True)
class MicrocompactCleared:
    """Old tool results were cleared because the provider's prompt cache had surely expired."""

    cleared: int
    kept: int
    tokens_saved: int
    tool_call_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SubagentStarted:
    id: str
    description: str
    fork: bool
    seeded_tokens: int


@dataclass(frozen=True, slots=True)
class SubagentFinished:
    id: str
    text: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Error:
    """Something failed. `fatal` means the turn stopped; otherwise it is a notice (e.g. a memory
    layer that failed open)."""

    message: str
    fatal: bool = False


Event = (
    TextDelta
    | AssistantMessage
    | ToolCallStarted
    | ToolCallFinished
    | InjectionInfo
    | ApprovalRequest
    | TurnFinished
    | Compacted
    | MicrocompactCleared
    | SubagentStarted
    | SubagentFinished
    | Error
)
Sink = Callable[[Event], None]


def null_sink(event: Event) -> None:
    """A sink that ignores everything (subagents' inner deltas, benchmarks)."""
