"""The line above the request box while a turn runs: that the model is working, for how long,
how many tokens streamed so far, and how to stop it."""

from __future__ import annotations

import time

from textual.timer import Timer
from textual.widgets import Static

from knowledge.core.token_count import count_tokens

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK_S = 0.25


class BusyIndicator(Static):
    DEFAULT_CSS = """
    BusyIndicator { height: 1; padding: 0 1; color: $accent; display: none; }
    BusyIndicator.-on { display: block; }
    """
    HELP = """\
## Busy line

Shown while a turn runs: time since the request, tokens streamed so far (estimated until the
server reports the count), and **Esc** (or **Ctrl+C**) to interrupt.
"""

    def __init__(self) -> None:
        super().__init__("", id="busy", markup=False)
        self.started = 0.0
        self.tokens = 0  # estimated from the streamed text (the server counts at the end)
        self._timer: Timer | None = None

    def start(self) -> None:
        self.started = time.monotonic()
        self.tokens = 0
        self.add_class("-on")
        if self._timer is None:
            self._timer = self.set_interval(TICK_S, self._tick)
        self._tick()

    def streamed(self, text: str) -> None:
        self.tokens += count_tokens(text)
        self._tick()

    def stop(self) -> None:
        self.remove_class("-on")
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    @property
    def running(self) -> bool:
        return self.has_class("-on")

    def _tick(self) -> None:
        elapsed = time.monotonic() - self.started
        frame = SPINNER[int(elapsed / TICK_S) % len(SPINNER)]
        self.update(f"{frame} working · {elapsed:.0f}s · {self.tokens} tokens · Esc to interrupt")
