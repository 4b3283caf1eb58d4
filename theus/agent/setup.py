"""The agent, wired once for both front ends (chat app and `theus -p`): its model client, its
injector and its episodes port come from the project's `Memory` (knowledge.memory), which owns
the layers; the app makes one agent per chat over its one memory, a headless run one."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from knowledge.core.settings import is_off
from knowledge.memory import Memory
from theus.agent.block_child import ONE_SHOT_GRAPH_WAIT_S
from theus.agent.injection import Injector
from theus.config import AgentSettings, ModelSettings, load_facts_settings
from theus.protocol import (
    AssistantMessage,
    Error,
    Event,
    Message,
    Sink,
    TextDelta,
    ToolCallStarted,
    TurnFinished,
    is_request,
    null_sink,
    text_of,
)
from theus.sessions import Session
from theus.tools.base import Approver

if TYPE_CHECKING:  # the agent's loop and model client import the SDK (`make_agent` does)
    from knowledge.memory.block import Block
    from theus.agent.block_child import ChildBlock
    from theus.agent.loop import Agent
    from theus.mcp.client import McpHub

# How soon a thread holding the interpreter hands it to another that waits (CPython's default
# is 5 ms). The turn's time box wakes on the event loop while the memory opens and a recall
# runs beside it: at 5 ms a cold first request overshot its 150 ms box by 46 ms (median, 30
# runs under load), at 1 ms by 9 (bench/time_box.py).
SWITCH_INTERVAL_S = 0.001
# How long `theus -p` on a project never indexed waits for its first index (requests, 1.4 s;
# a 1,900-file repository, ~18 s): past it, the run answers without the project's context.
FIRST_INDEX_WAIT_S = 10.0


# The events that say the model is answering (or the run ends without it).
ANSWERING = (TextDelta, AssistantMessage, ToolCallStarted, TurnFinished)


class OpenWhenAnswering:
    """A one-shot run whose first block came from a child (`theus.agent.block_child`) opens
    its own memory, on a thread, at the first event after the block: the model is answering,
    and the first request never waited for it. `relay` wraps the run's sink."""

    def __init__(self, memory: Memory, child: ChildBlock) -> None:
        self.memory = memory
        memory.borrow_request_vector(child.known_vector)  # the child's, for the run's record
        self.thread: threading.Thread | None = None

    def relay(self, sink: Sink) -> Sink:
        def relay(event: Event) -> None:
            if self.thread is None and isinstance(event, ANSWERING):
                self.thread = threading.Thread(target=self._open, daemon=True, name="theus-opening")
                self.thread.start()
            sink(event)

        return relay

    def _open(self) -> None:
        self.memory.open()
        with contextlib.suppress(Exception):  # the record says why, when it is made
            self.memory.run_history()  # here, the wait for the child's vector, if it is late

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()


@dataclass
class Runtime:
    agent: Agent
    memory: Memory
    mcp: McpHub | None = None
    opening: OpenWhenAnswering | None = None

    async def close(self, interrupted: bool = False) -> None:
        """End of the conversation: extractions still running (bounded; dropped at once when
        the user interrupted), the session episode, the memory (once it is open), the HTTP
        client."""
        if self.opening is not None:
            await asyncio.to_thread(self.opening.join)
        if self.agent.facts is not None:
            await self.agent.facts.settle(0.0 if interrupted else None)
            await self.agent.facts.close()
        self.agent.end_session()
        self.memory.close(exiting=True)  # `theus -p` leaves with `exit_now`
        if self.mcp is not None:
            await asyncio.to_thread(self.mcp.close)
        await self.agent.model.close()


def make_agent(
    memory: Memory,
    model_settings: ModelSettings,
    session: Session | None,
    *,
    sink: Sink = null_sink,
    approver: Approver | None = None,
    settings: AgentSettings | None = None,
    messages: list[Message] | None = None,
    max_turns: int | None = None,
    headless: bool = False,
    first_request: str | None = None,
    allow_config_edits: bool = False,
    denied_hint: str = "the user declined",
    mcp: McpHub | None = None,
    injector: Injector | None = None,
) -> Agent:
    """An agent over `memory` (which may still be opening on another thread: recall then
    waits for it, within the injection deadline). `approver=None` means: emit ApprovalRequest
    events and wait for their futures.

    A headless run knows its `first_request`: its block is recalled at once, and the watcher
    (whose catch-up walk would compete for the one interpreter) starts only when the agent
    first runs a tool; a run that only answers never needs it. `injector`: one `open_one_shot`
    made (its block already on the way); it brings its own settings.

    `mcp`: the tools of its servers that are ready now are offered beside the built-in ones
    (`offer_mcp_tools` adds those of servers that come up later)."""
    from theus.agent.loop import Agent
    from theus.model import ModelClient

    if injector is None:
        injector = make_injector(memory, settings, messages, first_request)
    settings = injector.settings
    if headless:
        sink = _watching_from_first_tool(sink, memory)
    facts_settings = load_facts_settings(model_settings)
    agent = Agent(
        ModelClient(model_settings),
        memory.root,
        sink=sink,
        approver=approver,
        settings=settings,
        injector=injector,
        session=session,
        episodes=memory,
        max_turns=max_turns,
        refuse_protected=headless,
        allow_config_edits=allow_config_edits,
        denied_hint=denied_hint,
        messages=messages or None,
        facts=memory,
        facts_model=ModelClient(facts_settings) if facts_settings is not None else None,
        history=memory,
    )
    if mcp is not None:
        offer_mcp_tools(agent, mcp)
    return agent


def make_injector(
    memory: Memory,
    settings: AgentSettings | None,
    messages: list[Message] | None,
    first_request: str | None,
    block: Future[Block] | None = None,
) -> Injector:
    """The agent's injector over `memory`, its first request's block started, or on its way
    as `block` (or, with no first request known, the recall indexes warming)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    # The semantic re-ranker earns recall extra time, once the memory says it is on.
    settings = settings or AgentSettings.from_settings(
        semantic_on=memory.is_open and memory.semantic_on
    )
    said = _said(messages or [])
    injector = Injector(
        settings,
        memory.recaller,
        memory.injection_stats(),
        facts=lambda query: memory.fact_lines(query, said),
        examples=memory.examples,
        previous=next(
            (text_of(m.get("content")) for m in reversed(messages or []) if is_request(m)), ""
        ),
    )
    if first_request is not None:
        injector.prefetch(first_request, ONE_SHOT_GRAPH_WAIT_S, block)
    else:
        injector.warm()
    return injector


@dataclass(frozen=True)
class Opening:
    """A one-shot run's memory, and the injector that is building its first request's block."""

    memory: Memory
    injector: Injector
    child: ChildBlock | None = None  # the first block's child: this memory is not open yet


def open_one_shot(root: Path, first_request: str, messages: list[Message] | None) -> Opening:
    """The memory opened for a one-shot run (a project never indexed is indexed, within
    `FIRST_INDEX_WAIT_S`), and its first request's block started (blocking)."""
    memory = _one_shot_memory(root).open()
    return Opening(memory, make_injector(memory, None, messages, first_request))


def _one_shot_memory(root: Path, *, load_model: bool = True) -> Memory:
    """A one-shot run's memory, not opened yet (a project never indexed is indexed, within
    `FIRST_INDEX_WAIT_S`; no watcher until a tool runs)."""
    return Memory(
        root,
        one_shot=True,
        index_if_missing=True,
        index_wait_s=FIRST_INDEX_WAIT_S,
        watch=False,
        load_model=load_model,
    )


def start_opening(
    root: Path,
    first_request: str,
    messages: list[Message] | None,
    child: ChildBlock | None = None,
) -> Future[Opening]:
    """`open_one_shot` on a daemon thread, started before the model client's imports (the SDK,
    ~0.25 s of the interpreter): what of the opening and the recall leaves the interpreter
    (SQLite, file reads, the embedding model's load and run) goes on meanwhile. With `child`
    (the first request's block on its way from a forked child) the memory is left to open
    later (`OpenWhenAnswering`): nothing of it is on the first request's way."""
    opening: Future[Opening] = Future()
    opening.set_running_or_notify_cancel()
    if child is not None:
        # The child embedded the request; a follow-up request loads the model.
        memory = _one_shot_memory(root, load_model=False)
        # The child's layer says whether it re-ranks; the extra time only bounds the wait.
        settings = AgentSettings.from_settings(semantic_on=not is_off("embeddings"))
        opening.set_result(
            Opening(
                memory, make_injector(memory, settings, messages, first_request, child.block), child
            )
        )
        return opening

    def work() -> None:
        try:
            opening.set_result(open_one_shot(root, first_request, messages))
        except BaseException as exc:
            opening.set_exception(exc)

    threading.Thread(target=work, daemon=True, name="theus-opening").start()
    return opening


def offer_mcp_tools(agent: Agent, hub: McpHub) -> None:
    """Add the tools of `hub`'s ready servers the agent does not have yet (call it on the
    agent's event loop, between turns). Built-in tools keep their names."""
    from theus.mcp.tools import mcp_tools

    for name, tool in mcp_tools(hub).items():
        agent.tools.setdefault(name, tool)


def start_headless(
    root: Path,
    model_settings: ModelSettings,
    session: Session | None,
    first_request: str,
    *,
    sink: Sink = null_sink,
    approver: Approver | None = None,
    messages: list[Message] | None = None,
    max_turns: int | None = None,
    allow_config_edits: bool = False,
    denied_hint: str = "the user declined",
    mcp: McpHub | None = None,
    opening: Future[Opening] | None = None,
) -> Runtime:
    """`theus -p`: the memory opened for a one-shot run, and its agent (blocking: call it
    from a worker thread). `opening`: the memory already opening (`start_opening`).
    `mcp`'s servers, started before, come up while the memory opens; the first request waits
    for them (bounded: each has its start-up deadline), and each that failed is one
    warning."""
    if opening is None:
        opening = start_opening(root, first_request, messages)
    # The SDK's imports (the agent's loop and model client) while the memory opens.
    importlib.import_module("theus.agent.loop")
    opened = opening.result()
    memory = opened.memory
    later = None if opened.child is None else OpenWhenAnswering(memory, opened.child)
    if later is not None:
        sink = later.relay(sink)
    if memory.index_pending:
        sink(
            Error(
                f"this project was never indexed and its first index takes longer than "
                f"{FIRST_INDEX_WAIT_S:.0f} s: this run goes on without the project's "
                "context; run `theus index` once so later runs have it"
            )
        )
    if mcp is not None:
        mcp.wait_ready()
        for warning in mcp.warnings():
            sink(Error(warning))
    agent = make_agent(
        memory,
        model_settings,
        session,
        sink=sink,
        approver=approver,
        messages=messages,
        max_turns=max_turns,
        headless=True,
        allow_config_edits=allow_config_edits,
        denied_hint=denied_hint,
        mcp=mcp,
        injector=opened.injector,
    )
    return Runtime(agent, memory, mcp, later)


def _said(messages: list[Message]) -> str:
    """What a resumed conversation's requests and answers said: the facts it named are facts
    from this conversation."""
    return "\n".join(
        text_of(m.get("content")) for m in messages if is_request(m) or m.get("role") == "assistant"
    )


def _watching_from_first_tool(sink: Sink, memory: Memory) -> Sink:
    def relay(event: Event) -> None:
        if isinstance(event, ToolCallStarted):
            memory.start_watcher()
        sink(event)

    return relay
