"""What a tool is, and what it may use while it runs."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from theus.protocol import ApprovalRequest
from theus.tools.jail import Jail

T = TypeVar("T")
Approver = Callable[[ApprovalRequest], Awaitable[bool]]
# recall(query, top) -> compact lines (already formatted), run off the event loop by the tool.
RecallFn = Callable[[str, int], list[str]]
# spawn(description, prompt, fork) -> the subagent's final answer.
SpawnFn = Callable[[str, str, bool], Awaitable[str]]


class ToolError(Exception):
    """The tool cannot do what was asked; the message goes back to the model, not to a crash."""


@dataclass(slots=True)
class ToolContext:
    jail: Jail
    approve: Approver
    # Headless: writes to .git/, .env*, the data dir and editor/agent config are refused outright.
    refuse_protected: bool = False
    allow_config_edits: bool = False  # headless --allow-config-edits: lifts the liftable ones
    # Said to the model when an approval is refused, e.g. which flag would allow it.
    denied_hint: str = "the user declined"
    recall: RecallFn | None = None
    # Keeps a file as it was before an edit or write (`theus.checkpoints`; None: not kept).
    checkpoint: Callable[[str, bytes | None], None] | None = None
    spawn: SpawnFn | None = None
    shell_timeout_s: float = 120.0
    # What happened, for the session's episode (`knowledge.core.runs.RunSummary`).
    files_changed: set[str] = field(default_factory=set)  # edits and writes applied
    files_read: set[str] = field(default_factory=set)  # reads that succeeded
    commands: list[str] = field(default_factory=list)  # commands that ran
    warned: set[str] = field(default_factory=set)  # warnings already given this session

    def refusal(self, request: ApprovalRequest) -> str:
        """What the model is told about a refused `request`: the refuser's reason, else the
        run's hint (which flag would allow it, or that the user declined)."""
        return request.reason or self.denied_hint


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any], ToolContext], Awaitable[str]]
    # Microcompact may clear old results of this tool (never recall/memory results).
    clearable: bool = True

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def string_arg(args: dict[str, Any], name: str, *, required: bool = True, default: str = "") -> str:
    value = args.get(name)
    if value is None:
        if required:
            raise ToolError(f"missing required argument '{name}'")
        return default
    if not isinstance(value, str):
        raise ToolError(f"argument '{name}' must be a string")
    return value


def int_arg(
    args: dict[str, Any], name: str, default: int, *, low: int = 0, high: int = 10**9
) -> int:
    value = args.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ToolError(f"argument '{name}' must be an integer")
    try:
        number = int(value)
    except ValueError:
        raise ToolError(f"argument '{name}' must be an integer") from None
    return max(low, min(high, number))


def bool_arg(args: dict[str, Any], name: str, default: bool = False) -> bool:
    value = args.get(name, default)
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes")
    return bool(value)


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on a daemon thread of its own. Awaiting it can be stopped (the turn's
    deadline, Ctrl-C) even while a system call blocks, as with asyncio.to_thread; unlike a
    thread of asyncio's executor, which the process waits for as it exits, one that never
    returns (an open() raced onto a FIFO) cannot keep the process from exiting."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(set_outcome: Callable[[Any], None], value: Any) -> None:
        if not done.done():  # the awaiting turn may have stopped meanwhile
            set_outcome(value)

    def work() -> None:
        try:
            outcome: tuple[Callable[[Any], None], Any] = (done.set_result, fn(*args))
        except BaseException as exc:  # handed to the awaiting task, as to_thread does
            outcome = (done.set_exception, exc)
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(
        target=work, name=f"tool-{getattr(fn, '__name__', 'call')}", daemon=True
    ).start()
    return await done
