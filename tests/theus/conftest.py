"""Fixtures for the agent tests: a scripted model server, a small repository, and an agent
wired to both with the real openai client (nothing else is faked)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from tests.conftest import write_tree
from tests.scripted_server import ScriptedServer
from theus.agent.injection import Injector, RecallerFactory
from theus.agent.loop import Agent
from theus.config import AgentSettings, ModelSettings
from theus.model import ModelClient
from theus.protocol import ApprovalRequest, Event

CART = '''"""Shopping cart."""
from pricing import price_of


class Cart:
    def total(self, items):
        """Sum of line prices."""
        return sum(price_of(i) for i in items)
'''
PRICING = '''def price_of(item):
    """Unit price with discounts."""
    return item["price"]
'''


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    return write_tree(
        root,
        {
            "cart.py": CART,
            "pricing.py": PRICING,
            "README.md": "# Shop\n\nA shopping cart service.\n",
        },
    )


def model_settings(url: str, **kw: Any) -> ModelSettings:
    base: dict[str, Any] = {
        "base_url": url,
        "api_key": "k",
        "model": "test-model",
        "source": "test",
        "timeout_s": 10.0,
        "max_retries": 3,
        "retry_base_s": 0.01,
    }
    base.update(kw)
    return ModelSettings(**base)


class Recorder:
    """A sink that keeps every event, and an approver with a fixed answer."""

    def __init__(self, approve: bool = True) -> None:
        self.events: list[Event] = []
        self.answer = approve
        self.asked: list[ApprovalRequest] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    async def approver(self, request: ApprovalRequest) -> bool:
        self.asked.append(request)
        return self.answer

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


class NoRecall:
    """A recaller for tests that are not about memory: recalls nothing."""

    graph = None

    def recall(self, query: str, top: int = 10, **options: Any) -> Any:
        raise RuntimeError("no memory in this test")

    def warm(self, budget_s: float | None = None) -> bool:
        return True


# `NoRecall` stands where the agent expects the memory's recaller.
NO_RECALL = cast("RecallerFactory", NoRecall)


MakeAgent = Callable[..., tuple[Agent, Recorder]]


@pytest.fixture
def make_agent(server: ScriptedServer, repo: Path) -> MakeAgent:
    def make(
        *,
        settings: AgentSettings | None = None,
        approve: bool = True,
        recaller_factory: Callable[[], Any] | None = None,
        **kw: Any,
    ) -> tuple[Agent, Recorder]:
        settings = settings or AgentSettings()
        recorder = Recorder(approve)
        client = ModelClient(model_settings(server.url))
        injector = Injector(settings, recaller_factory or NO_RECALL)
        agent = Agent(
            client,
            repo,
            sink=recorder,
            approver=recorder.approver,
            settings=settings,
            injector=injector,
            **kw,
        )
        return agent, recorder

    return make
