"""Fixtures for the app's tests: a small indexed repository, a scripted model server and an
app wired to both (the model is the only thing replaced)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.app import ScreenStackError
from textual.pilot import Pilot

from tests.conftest import configure, write_tree
from tests.scripted_server import ScriptedServer
from theus.config import AgentSettings, ModelSettings
from tui.app import DashboardStarter, TheusApp

CART = '''"""Shopping cart."""
from pricing import price_of


class Cart:
    """A customer's cart."""

    def total(self, items):
        """Sum of line prices."""
        return sum(price_of(i) for i in items)
'''
PRICING = '''"""Prices."""


def price_of(item):
    """Unit price with discounts."""
    return item["price"]
'''
README = "# Shop\n\nA shopping cart service.\n\n## Pricing\n\nDiscounts apply per item.\n"
# Generous: the machine is shared, and these tests are about the UI, not the deadline.
SETTINGS = AgentSettings(deadline_ms=10_000)


@pytest.fixture(autouse=True)
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """No watcher threads unless a test asks, no embeddings."""
    configure(monkeypatch, no_watch=True)
    configure(monkeypatch, no_embeddings=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    return write_tree(root, {"cart.py": CART, "pricing.py": PRICING, "README.md": README})


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


def model_settings(url: str) -> ModelSettings:
    return ModelSettings(
        base_url=url,
        api_key="k",
        model="test-model",
        source="test",
        timeout_s=10.0,
        max_retries=1,
        retry_base_s=0.01,
    )


MakeApp = Callable[..., TheusApp]


@pytest.fixture
def make_app(repo: Path, server: ScriptedServer) -> MakeApp:
    def make(
        *, model: bool = True, first_request: str = "", dashboard: DashboardStarter | None = None
    ) -> TheusApp:
        settings = model_settings(server.url) if model else None
        return TheusApp(
            repo,
            settings,
            agent_settings=SETTINGS,
            first_request=first_request,
            dashboard=dashboard,
        )

    return make


async def wait_for(pilot: Pilot[Any], condition: Callable[[], Any], timeout: float = 15.0) -> Any:
    """Let the app run until `condition()` is truthy (workers, messages, repaints)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except ScreenStackError:  # between two modes' screens for a tick: not there yet
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {condition}")
        await pilot.pause(0.02)


async def ready(pilot: Pilot[Any]) -> None:
    """The graph is loaded, the recall index warm and the status bar has counted it (the
    count waits for a busy graph on a later tick instead of blocking)."""
    app = pilot.app
    assert isinstance(app, TheusApp)
    await wait_for(pilot, lambda: app.engine.loaded)
    await app.workers.wait_for_complete()
    await wait_for(pilot, lambda: not app.status["indexing"])
    await pilot.pause()
