"""What the user says joins the graph: S1 on each request and S1.5 on each answer, the
configured model extracting entities, relations, facts and corrections with a strict JSON
schema (`knowledge.facts`), the memory's facts layer applying them.

Beside the turn, never in its way: S1 starts with the request and runs while the model
answers, S1.5 after the answer; at most one call of each per turn. Each is time-boxed and
fails open (one log line, a counter); `THEUS_NO_FACTS=1` turns the layer off. Their tokens
count in the run's usage (`Usage.extraction_tokens`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Literal

from knowledge.facts import EXTRACTION_SCHEMA, FactsLayer, extraction_prompt, parse_extraction
from knowledge.switches import is_off
from theus.model import ModelClient
from theus.protocol import Usage

log = logging.getLogger(__name__)

Speaker = Literal["user", "assistant"]
# The memory's facts layer, opened on first use (None when off or unavailable).
FactsSource = Callable[[], FactsLayer | None]


class FactExtractor:
    def __init__(self, model: ModelClient, layer: FactsSource,
                 usage: Usage, timeout_s: float) -> None:
        self.model = model
        self._layer = layer
        self.usage = usage
        self.timeout_s = timeout_s
        self.failed = 0
        self._pending: set[asyncio.Task[None]] = set()

    @property
    def on(self) -> bool:
        return not is_off("facts")

    def start_turn(self, request: str) -> None:
        """S1: age what was said before (hot -> warm -> cold), then extract from `request`."""
        if self.on:
            self._spawn(self._turn(request))

    def after_answer(self, answer: str) -> None:
        """S1.5: what the assistant said, once the answer is given."""
        if self.on and answer.strip():
            self._spawn(self._extract("assistant", answer))

    async def settle(self, timeout_s: float | None = None) -> None:
        """Wait for the extractions still running (bounded); the late ones are cancelled."""
        pending = set(self._pending)
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=timeout_s or self.timeout_s)
        for task in late:
            task.cancel()

    def _spawn(self, job: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(job)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _turn(self, request: str) -> None:
        layer = await self._open()
        if layer is not None:
            await asyncio.to_thread(layer.cycle)
            await self._extract("user", request, layer)

    async def _open(self) -> FactsLayer | None:
        try:
            return await asyncio.to_thread(self._layer)
        except Exception as exc:
            log.warning("facts layer unavailable: %s", exc)
            return None

    async def _extract(self, speaker: Speaker, text: str,
                       layer: FactsLayer | None = None) -> None:
        layer = layer or await self._open()
        if layer is None:
            return
        try:
            known = await asyncio.to_thread(layer.known_labels)
            completion = await asyncio.wait_for(
                self.model.complete_json(extraction_prompt(speaker, text, known),
                                         EXTRACTION_SCHEMA, "extraction"), self.timeout_s)
            self.usage.extraction_tokens += (completion.prompt_tokens
                                             + completion.completion_tokens)
            extraction = parse_extraction(completion.text)
            await asyncio.to_thread(layer.apply, extraction, text, speaker)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            self._failed(speaker, f"no answer within {self.timeout_s:g}s")
        except Exception as exc:  # a model's garbage, a refused call, a store error
            self._failed(speaker, f"{type(exc).__name__}: {exc}")

    def _failed(self, speaker: Speaker, why: str) -> None:
        self.failed += 1
        stage = "S1" if speaker == "user" else "S1.5"
        log.warning("fact extraction (%s) skipped: %s", stage, why)
