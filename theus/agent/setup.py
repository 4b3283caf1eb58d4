"""Everything an agent needs, wired once, for both front ends (chat app and `theus -p`):
the model client, the shared project memory (recall, watcher, episodes) and the session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from theus.agent.injection import Injector
from theus.agent.loop import Agent
from theus.agent.ports import Memory, open_memory
from theus.config import AgentSettings, ModelSettings
from theus.model import ModelClient
from theus.protocol import Event, Message, Sink, ToolCallStarted, null_sink
from theus.sessions import Session
from theus.tools.base import Approver

# How long a one-shot run's first request waits for the graph to load, before its deadline.
ONE_SHOT_GRAPH_WAIT_S = 3.0


@dataclass
class Runtime:
    agent: Agent
    memory: Memory
    model: ModelClient

    async def close(self) -> None:
        """End of the conversation: the session episode, the watcher, the HTTP client."""
        self.agent.end_session()
        self.memory.close()
        await self.model.close()


def start_agent(
    root: Path,
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
) -> Runtime:
    """Blocking (opens the project store): call it from a worker thread in an async app.
    `approver=None` means: emit ApprovalRequest events and wait for their futures.

    A headless run knows its `first_request`: its block is recalled while the model client
    is built, and the watcher (whose catch-up walk would compete for the one interpreter)
    starts only when the agent first runs a tool; a run that only answers never needs it."""
    memory, settings, injector = _open_memory(root, settings, headless, first_request)
    model = ModelClient(model_settings)
    if headless:
        sink = _watching_from_first_tool(sink, memory)
    agent = Agent(
        model, root, sink=sink, approver=approver, settings=settings, injector=injector,
        session=session, episodes=memory.episodes, max_turns=max_turns,
        refuse_protected=headless, allow_config_edits=allow_config_edits,
        denied_hint=denied_hint, messages=messages or None)
    return Runtime(agent, memory, model)


def _open_memory(root: Path, settings: AgentSettings | None, headless: bool,
                 first_request: str | None) -> tuple[Memory, AgentSettings, Injector]:
    memory = open_memory(root, one_shot=headless, watch=not headless)
    settings = settings or AgentSettings.from_env(semantic_on=memory.semantic_on)
    injector = Injector(settings, memory.recaller, memory.injection_stats())
    memory.on_stale = injector.forget_recaller
    if first_request is not None:
        injector.prefetch(first_request, ONE_SHOT_GRAPH_WAIT_S)
    else:
        injector.warm()
    return memory, settings, injector


def _watching_from_first_tool(sink: Sink, memory: Memory) -> Sink:
    def relay(event: Event) -> None:
        if isinstance(event, ToolCallStarted):
            memory.start_watcher()
        sink(event)

    return relay
