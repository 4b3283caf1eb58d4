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
from collections.abc import Coroutine
from typing import Any, Literal, Protocol

from knowledge.core.settings import is_off
from knowledge.facts import EXTRACTION_SCHEMA, FactsLayer, extraction_prompt, parse_extraction
from theus.model import ModelClient, ModelError
from theus.protocol import Usage

log = logging.getLogger(__name__)

Speaker = Literal["user", "assistant"]
# Faults of the server itself, which the turn's own call reports in its words: said once.
SHARED_FAULTS = frozenset({"auth", "model", "network"})


class FactsSource(Protocol):
    """The memory's side (`knowledge.memory.Memory`)."""

    facts: FactsLayer | None  # the layer once opened

    def facts_layer(self) -> FactsLayer | None: ...  # opens it: loads the whole graph

    def entity_labels(self, limit: int = 100) -> list[str]: ...  # cheap, for the prompt


class FactExtractor:
    def __init__(
        self, model: ModelClient, source: FactsSource, usage: Usage, timeout_s: float
    ) -> None:
        self.model = model
        self._source = source
        self.usage = usage
        self.timeout_s = timeout_s
        self.failed = 0
        self._pending: set[asyncio.Task[None]] = set()
        self._s1: asyncio.Task[None] | None = None  # this turn's S1

    @property
    def on(self) -> bool:
        return not is_off("facts")

    def start_turn(self, request: str) -> None:
        """S1: age what was said before (hot -> warm -> cold), then extract from `request`."""
        if self.on:
            self._s1 = self._spawn(self._turn(request))

    def after_answer(self, answer: str) -> None:
        """S1.5: what the assistant said, once the answer is given (applied after the
        request's S1, as it was said after it)."""
        if self.on and answer.strip():
            self._spawn(self._after(self._s1, answer))

    async def _after(self, s1: asyncio.Task[None] | None, answer: str) -> None:
        if s1 is not None:
            await asyncio.wait({s1})  # its outcome is its own: failures are logged there
        await self._extract("assistant", answer)

    async def settle(self, timeout_s: float | None = None) -> None:
        """Wait for the extractions still running (bounded); the late ones are cancelled."""
        pending = set(self._pending)
        if not pending:
            return
        wait_s = self.timeout_s if timeout_s is None else timeout_s
        _, late = await asyncio.wait(pending, timeout=wait_s)
        for task in late:
            task.cancel()

    def _spawn(self, job: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(job)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    async def _turn(self, request: str) -> None:
        layer = self._source.facts  # an unopened layer has nothing hot to age
        if layer is not None:
            await asyncio.to_thread(layer.cycle)
        await self._extract("user", request)

    async def _extract(self, speaker: Speaker, text: str) -> None:
        try:
            known = await asyncio.to_thread(self._source.entity_labels)
            completion = await asyncio.wait_for(
                self.model.complete_json(
                    extraction_prompt(speaker, text, known), EXTRACTION_SCHEMA, "extraction"
                ),
                self.timeout_s,
            )
            self.usage.extraction_tokens += completion.prompt_tokens + completion.completion_tokens
            extraction = parse_extraction(completion.text)
            if extraction.empty:  # nothing said worth keeping: the graph is not even loaded
                return
            layer = await asyncio.to_thread(self._source.facts_layer)
            if layer is not None:
                await asyncio.to_thread(layer.apply, extraction, text, speaker)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            self._failed(speaker, f"no answer within {self.timeout_s:g}s")
        except ModelError as exc:  # the conversation's own calls report a server it shares
            self._failed(speaker, str(exc), quiet=exc.kind in SHARED_FAULTS)
        except Exception as exc:  # a model's garbage, a store error
            self._failed(speaker, f"{type(exc).__name__}: {exc}")

    def _failed(self, speaker: Speaker, why: str, quiet: bool = False) -> None:
        self.failed += 1
        stage = "S1" if speaker == "user" else "S1.5"
        log.log(
            logging.INFO if quiet else logging.WARNING,
            "fact extraction (%s) skipped: %s",
            stage,
            why,
        )
