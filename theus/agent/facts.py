"""What the user says joins the graph: one extraction per turn worth it, asked once the answer
is given, of the request and the answer together (strict JSON schema, `knowledge.facts`), the
memory's facts layer applying each part as said by its speaker.

Beside the turn, never in its way, and only when it can pay: the gate
(`knowledge.facts.can_carry_fact`, no model call) reads the request as the turn starts; "fix
the typo in the README" costs no call, "we moved to PostgreSQL" one, after the answer (so a
reply that restates or completes it is read in the same call). Answers are not gated: an
answer to a coding request often says what the project uses ("the project uses pytest, so I
added a test"), which the gate takes for a statement. Time-boxed, fails open (one log line, a
counter); `THEUS_NO_FACTS=1` turns the layer off. A server whose answer is not JSON is
learned once (`ModelClient.learned_not_json`, kept with the server's capabilities): one
warning, then its turns are skipped quietly while that record is fresh. What the gate spared,
what was asked, skipped or failed is counted for `theus status` (`ExtractionStats`). The
tokens count in the run's usage (`Usage.extraction_tokens`). The model is the chat's, or its
own (THEUS_FACTS_MODEL, THEUS_FACTS_BASE_URL: `theus.config.load_facts_settings`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from knowledge.core.settings import is_off
from knowledge.facts.extraction import (
    EXTRACTION_SCHEMA,
    NotJSON,
    extraction_prompt,
    parse_extraction,
    split_by_speaker,
)
from knowledge.facts.gate import can_carry_fact
from knowledge.facts.status import ExtractionStats
from theus.model import ModelClient, ModelError
from theus.protocol import Usage

if TYPE_CHECKING:  # opened by the memory, on first use
    from knowledge.facts.layer import FactsLayer

log = logging.getLogger(__name__)

# Faults of the server itself, which the turn's own call reports in its words: said once.
SHARED_FAULTS = frozenset({"auth", "model", "network"})


class FactsSource(Protocol):
    """The memory's side (`knowledge.memory.Memory`)."""

    facts: FactsLayer | None  # the layer once opened

    def facts_layer(self) -> FactsLayer | None: ...  # opens it: loads the whole graph

    def entity_labels(self, limit: int = 100) -> list[str]: ...  # cheap, for the prompt

    def extraction_stats(self) -> ExtractionStats: ...  # counters `theus status` reads


class FactExtractor:
    def __init__(
        self,
        model: ModelClient,
        source: FactsSource,
        usage: Usage,
        timeout_s: float,
        *,
        owns_model: bool = False,
    ) -> None:
        self.model = model
        self._owns_model = owns_model  # its own client (THEUS_FACTS_*): closed with it
        self._source = source
        self.usage = usage
        self.timeout_s = timeout_s
        self.stats = source.extraction_stats()
        self._pending: set[asyncio.Task[None]] = set()
        self._request: str | None = None  # this turn's request, when it can carry a fact
        self._cycle: asyncio.Task[None] | None = None  # this turn's ageing

    @property
    def on(self) -> bool:
        return not is_off("facts")

    def start_turn(self, request: str) -> None:
        """A turn begins: age what was said before (hot -> warm -> cold), and keep `request`
        for the extraction when the gate says it can carry a durable fact."""
        self._request = None
        if not self.on:
            return
        layer = self._source.facts  # an unopened layer has nothing hot to age
        self._cycle = self._spawn(asyncio.to_thread(layer.cycle)) if layer is not None else None
        if can_carry_fact(request):
            self._request = request
        else:
            self.stats.count("not_asked")

    def after_answer(self, answer: str) -> None:
        """The turn ended (`answer` is "" when it gave none): one extraction of its request and
        `answer` together, if the request passed the gate."""
        request, self._request = self._request, None
        if request is not None and self.on:
            self._spawn(self._extract(request, answer, self._cycle))

    async def settle(self, timeout_s: float | None = None) -> None:
        """Wait for the extractions still running (bounded); the late ones are cancelled (and
        said, unless the wait was none: the user interrupted)."""
        pending = set(self._pending)
        if not pending:
            return
        wait_s = self.timeout_s if timeout_s is None else timeout_s
        _, late = await asyncio.wait(pending, timeout=wait_s)
        for task in late:
            task.cancel()
        if late and wait_s > 0:
            self._failed(f"no answer within {wait_s:g}s")

    async def close(self) -> None:
        """Close the extractor's own model client (the chat's is the agent's to close)."""
        if self._owns_model:
            await self.model.close()

    def _spawn(self, job: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(job)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    async def _extract(self, request: str, answer: str, cycle: asyncio.Task[None] | None) -> None:
        if cycle is not None:
            await asyncio.wait({cycle})  # aged before this turn's facts are added
        try:
            known = await asyncio.to_thread(self._source.entity_labels)
            completion = await asyncio.wait_for(
                self.model.complete_json(
                    extraction_prompt(request, answer, known), EXTRACTION_SCHEMA, "extraction"
                ),
                self.timeout_s,
            )
            self.usage.extraction_tokens += completion.prompt_tokens + completion.completion_tokens
            self.stats.count("asked")
            try:
                extraction = parse_extraction(completion.text)
            except NotJSON:
                if completion.finish_reason != "length":  # a whole answer, not one cut short
                    self.model.learned_not_json()
                raise
            if extraction.empty:  # nothing said worth keeping: the graph is not even loaded
                return
            layer = await asyncio.to_thread(self._source.facts_layer)
            if layer is None:
                return
            users, assistants = split_by_speaker(extraction, request)
            if not users.empty:
                await asyncio.to_thread(layer.apply, users, request, "user")
            if not assistants.empty:
                await asyncio.to_thread(layer.apply, assistants, answer, "assistant")
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            self._failed(f"no answer within {self.timeout_s:g}s")
        except ModelError as exc:
            if exc.kind == "no_json":  # learned before, said then
                self.stats.count("skipped")
                log.info("fact extraction skipped: %s", exc)
            else:  # the conversation's own calls report a server it shares
                self._failed(str(exc), quiet=exc.kind in SHARED_FAULTS)
        except NotJSON as exc:
            where = f"{self.model.settings.base_url} ({self.model.model})"
            learned = (
                ""
                if self.model.caps.answers_json
                else (
                    f"; the model at {where} is not asked again for a day (point "
                    "THEUS_FACTS_MODEL / THEUS_FACTS_BASE_URL at one that answers JSON)"
                )
            )
            self._failed(f"{exc}{learned}")
        except Exception as exc:  # a model's garbage, a store error
            self._failed(f"{type(exc).__name__}: {exc}")

    def _failed(self, why: str, quiet: bool = False) -> None:
        self.stats.count("failed", why)
        log.log(logging.INFO if quiet else logging.WARNING, "fact extraction skipped: %s", why)
