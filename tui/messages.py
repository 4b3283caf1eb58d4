"""Typed messages between the app's workers and its widgets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message


@dataclass
class AgentEvent(Message):
    """One event of theus.protocol, handed from the agent's sink to the chat screen."""

    bubble = False
    event: Any


@dataclass
class TextBatch(Message):
    """Reply text that streamed in since the last batch was shown. The sink keeps appending
    to `pieces` until the chat takes it, so a UI behind the stream gets one message for many
    deltas instead of one each."""

    bubble = False
    pieces: list[str]


@dataclass
class GraphLoaded(Message):
    """The project's graph is loaded (or failed to: `error`)."""

    error: str = ""


@dataclass
class IndexChanged(Message):
    """The watcher or the memory bridge changed the graph; `line` says what happened."""

    line: str = ""


@dataclass
class RecallDone(Message):
    """A recall finished: for the status bar's last-recall figure."""

    took_ms: float


@dataclass
class InjectedTokens(Message):
    """Tokens injected in the turn that just started (and so in the session total)."""

    tokens: int
    took_ms: float
