"""What a tool is, and what it may use while it runs."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import threading
import typing
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from enum import Enum
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from knowledge.core.errors import TheusError
from theus.protocol import ApprovalRequest
from theus.tools.jail import Jail

if TYPE_CHECKING:
    from knowledge.memory import Memory
    from knowledge.recall.recaller import Recaller

T = TypeVar("T")
Approver = Callable[[ApprovalRequest], Awaitable[bool]]
# spawn(description, prompt, fork) -> the subagent's final answer.
SpawnFn = Callable[[str, str, bool], Awaitable[str]]


class ToolError(TheusError):
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
    # The project memory's recaller (its graph and ranking): recall, outline. None: no memory.
    recaller: Callable[[], Recaller] | None = None
    # The project's memory itself, where the tools that `theus mcp` serves alone reach it.
    memory: Memory | None = None
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


class Effect(Enum):
    """What a tool may do; whether a call asks for approval follows from it (`approval`), and
    so do the permission modes and rules of `theus.tool_rules`."""

    READ = "read"  # reads the project
    MEMORY = "memory"  # reads or adds to the project's memory (`knowledge`)
    EDIT = "edit"  # changes files
    SHELL = "shell"  # runs commands
    NETWORK = "network"  # reaches another program: an MCP server's tool

    @property
    def approval(self) -> str:
        """The `ApprovalRequest.kind` a call asks for ("" when it never asks)."""
        return {Effect.EDIT: "edit", Effect.SHELL: "shell", Effect.NETWORK: "mcp"}.get(self, "")

    @property
    def changes(self) -> bool:
        """Whether it changes the project (plan mode takes such tools away)."""
        return self in (Effect.EDIT, Effect.SHELL)


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any], ToolContext], Coroutine[Any, Any, Any]]
    # Microcompact may clear old results of this tool (never recall/memory results).
    clearable: bool = True
    effect: Effect = Effect.READ
    agent: bool = True  # offered to the agent's model
    mcp: bool = False  # served by `theus mcp`
    # Offered only while this says so (a layer switched off); None: always.
    when: Callable[[], bool] | None = None
    module: str = ""  # where it is declared (`declared_in`)
    # The model's text for a JSON-ready result, where the agent wants less than `theus mcp`.
    to_text: Callable[[dict[str, Any]], str] | None = None

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    @property
    def offered(self) -> bool:
        return self.when is None or self.when()

    async def answer(self, args: dict[str, Any], ctx: ToolContext) -> str:
        """The call's result as the agent's model reads it."""
        result = await self.run(args, ctx)
        if isinstance(result, str):
            return result
        return self.to_text(result) if self.to_text else json.dumps(result, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Bounds:
    """An integer argument's range: a value outside it is clamped, as models overshoot."""

    low: int = 0
    high: int = 10**9


@dataclass(frozen=True, slots=True)
class _Param:
    name: str
    kind: type
    default: Any
    required: bool
    description: str
    bounds: Bounds

    def schema(self) -> dict[str, Any]:
        found: dict[str, Any] = {"type": _JSON_TYPES[self.kind]}
        if self.description:
            found["description"] = self.description
        return found

    def value(self, args: dict[str, Any]) -> Any:
        """The argument as the function takes it; ToolError (one line for the model) when it
        cannot be."""
        raw = args.get(self.name)
        if raw is None:
            if self.required:
                raise ToolError(f"missing required argument '{self.name}'")
            return self.default
        if self.kind is str:
            if not isinstance(raw, str):
                raise ToolError(f"argument '{self.name}' must be a string")
            return raw
        if self.kind is bool:
            return (
                raw.strip().lower() in ("1", "true", "yes") if isinstance(raw, str) else bool(raw)
            )
        if isinstance(raw, bool) or not isinstance(raw, int | float | str):
            raise ToolError(f"argument '{self.name}' must be an integer")
        try:
            number = int(raw)
        except ValueError:
            raise ToolError(f"argument '{self.name}' must be an integer") from None
        return max(self.bounds.low, min(self.bounds.high, number))


_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", bool: "boolean"}


def tool(
    effect: Effect,
    *,
    name: str = "",
    clearable: bool = True,
    agent: bool = True,
    mcp: bool = False,
    when: Callable[[], bool] | None = None,
    to_text: Callable[[dict[str, Any]], str] | None = None,
) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a tool: `fn(ctx, ...)`, async or not (a plain one runs on a thread of its own),
    named after the function unless `name` says otherwise. Its description is the docstring's
    first paragraph; its parameters come from the signature: `str`, `int`, `bool` (or
    `X | None`), described by `Annotated[X, "what it is"]`, an `int` bounded by
    `Annotated[int, Bounds(...)]`; one without a default is required. The result is a `str`
    (text for the model) or a JSON-ready `dict`."""

    def declare(fn: Callable[..., Any]) -> Tool:
        params = _params(fn)
        run_fn = fn if inspect.iscoroutinefunction(fn) else None

        async def run(args: dict[str, Any], ctx: ToolContext) -> Any:
            values = {p.name: p.value(args) for p in params}
            # The tool's own view of the context: the run's sets and lists are shared (tools
            # add to them), its approver asks only what the effect allows.
            ctx = replace(ctx, approve=_asking(effect, name or fn.__name__, ctx.approve))
            if run_fn is not None:
                return await run_fn(ctx, **values)
            return await in_thread(fn, ctx, *values.values())  # in the signature's order

        doc = inspect.cleandoc(fn.__doc__ or "").split("\n\n")[0]
        return Tool(
            name or fn.__name__,
            " ".join(doc.split()),
            {
                "type": "object",
                "properties": {p.name: p.schema() for p in params},
                "required": [p.name for p in params if p.required],
            },
            run,
            clearable=clearable,
            effect=effect,
            agent=agent,
            mcp=mcp,
            when=when,
            module=fn.__module__,
            to_text=to_text,
        )

    return declare


def _params(fn: Callable[..., Any]) -> list[_Param]:
    hints = typing.get_type_hints(fn, include_extras=True)
    found: list[_Param] = []
    for param in list(inspect.signature(fn).parameters.values())[1:]:  # after the context
        hint = hints[param.name]
        extras: tuple[Any, ...] = ()
        if typing.get_origin(hint) is Annotated:
            hint, *rest = typing.get_args(hint)
            extras = tuple(rest)
        kinds = [k for k in typing.get_args(hint) if k is not type(None)] or [hint]
        if len(kinds) != 1 or kinds[0] not in _JSON_TYPES:
            raise TypeError(f"{fn.__name__}: parameter {param.name} is not str, int or bool")
        required = param.default is inspect.Parameter.empty
        found.append(
            _Param(
                param.name,
                kinds[0],
                None if required else param.default,
                required,
                next((e for e in extras if isinstance(e, str)), ""),
                next((e for e in extras if isinstance(e, Bounds)), Bounds()),
            )
        )
    return found


def _asking(effect: Effect, name: str, approve: Approver) -> Approver:
    """`approve` for a tool of `effect`: a request of another kind is a bug in the tool (a
    read tool that asks, an edit that asks as a command), never a question for the user."""

    async def asking(request: ApprovalRequest) -> bool:
        if request.kind != effect.approval:
            raise RuntimeError(f"the {effect.value} tool {name} asked a {request.kind} approval")
        return await approve(request)

    return asking


def declared_in(module: ModuleType) -> list[Tool]:
    """The tools `module` declares, in their order there."""
    return [t for t in vars(module).values() if isinstance(t, Tool) and t.module == module.__name__]


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
