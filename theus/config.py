"""Model settings: which OpenAI-compatible server, key and model the agent talks to.

Sources, in order: the settings' endpoint (THEUS_BASE_URL / THEUS_API_KEY or config.toml,
else the standard OPENAI_BASE_URL / OPENAI_API_KEY), then the credentials saved by `theus
login`. Each source is taken whole for the endpoint and key: a saved key is only ever sent to
the saved server, so setting THEUS_BASE_URL alone cannot leak it (or OPENAI_API_KEY) to
another host. The model comes from the settings (`--model`, THEUS_MODEL, config.toml), then
the saved credentials.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from theus.settings import Settings, current

log = logging.getLogger(__name__)

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
MISSING_MODEL_HELP = (
    "no model configured: set THEUS_MODEL and THEUS_BASE_URL (and THEUS_API_KEY if the server "
    "needs one; OPENAI_BASE_URL / OPENAI_API_KEY, or model and base_url in config.toml, work "
    "too), or run `theus login`"
)
# Placeholder key for local servers that need none; the openai client refuses an empty key.
NO_KEY = "not-needed"


@dataclass(frozen=True, slots=True)
class ModelSettings:
    base_url: str
    api_key: str = field(repr=False)
    model: str
    source: str  # where the endpoint came from, for diagnostics (never the key)
    timeout_s: float = 120.0  # until the first token (a local server may think long)
    max_retries: int = 4
    retry_base_s: float = 0.5
    idle_timeout_s: float = 60.0  # a stream that sends nothing this long has failed
    retry_deadline_s: float = 180.0  # no retry starts after this much time spent on a call
    # Sent as `max_tokens`: a model that loops stops here (0 sends none).
    max_output_tokens: int = 8192


def _saved_credentials() -> object | None:
    try:
        from knowledge.core.credentials import load_credentials

        return load_credentials()
    except Exception as exc:  # a broken config must not stop the memory commands
        log.warning("cannot read saved credentials: %s", exc)
        return None


def load_model_settings(settings: Settings | None = None) -> ModelSettings | None:
    """The configured model, or None when there is none (callers print MISSING_MODEL_HELP)."""
    settings = settings or current()
    model, base_url, api_key = settings.model, settings.base_url, settings.api_key
    # The settings took the endpoint whole from one place: saved credentials only fill in
    # when no place set it, so a key from one place is never sent to a URL from another.
    source = settings.source("base_url" if base_url else "api_key")
    if not (base_url or api_key):
        saved = _saved_credentials()
        if saved is None:
            return None
        base_url = getattr(saved, "base_url", "")
        api_key = getattr(saved, "api_key", "")
        model = model or getattr(saved, "model", "")
        source = "saved credentials"
    if not model:
        return None
    return ModelSettings(
        base_url=(base_url or OPENAI_DEFAULT_URL).rstrip("/"),
        api_key=api_key or NO_KEY,
        model=model,
        source=source,
        timeout_s=settings.timeout,
        max_retries=max(0, settings.max_retries),
        retry_base_s=settings.retry_base,
        idle_timeout_s=settings.idle_timeout,
        retry_deadline_s=settings.retry_deadline,
        max_output_tokens=max(0, settings.max_output_tokens),
    )


def load_facts_settings(
    chat: ModelSettings, settings: Settings | None = None
) -> ModelSettings | None:
    """The fact extraction's own model (THEUS_FACTS_MODEL, THEUS_FACTS_BASE_URL,
    THEUS_FACTS_API_KEY), or None when it is the chat's. On another endpoint the key is
    THEUS_FACTS_API_KEY or none: the chat key is never sent to a URL it was not set for."""
    settings = settings or current()
    base_url = settings.facts_base_url.strip().rstrip("/") or chat.base_url
    elsewhere = base_url != chat.base_url
    api_key = settings.facts_api_key or (NO_KEY if elsewhere else chat.api_key)
    model = settings.facts_model or chat.model
    if (base_url, api_key, model) == (chat.base_url, chat.api_key, chat.model):
        return None
    source = settings.source("facts_base_url") if elsewhere else chat.source
    return replace(chat, base_url=base_url, api_key=api_key, model=model, source=source)


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """How the loop behaves: from the settings (`from_settings`), overridable in tests."""

    inject: bool = True
    semantic_on: bool = False
    deadline_ms: float = 150.0
    semantic_extra_ms: float = 800.0
    subagent_seed_tokens: int = 500
    microcompact_after_s: float = 3600.0
    microcompact_keep: int = 5
    # The context size when the server does not state its own (THEUS_CONTEXT_TOKENS).
    context_tokens: int = 128_000
    # Model turns per request before the agent stops and says so: a model that keeps calling
    # tools must not loop unwatched (`--max-turns`, THEUS_MAX_TURNS).
    max_turns: int = 50
    # Compaction starts when the conversation passes this share of the context size.
    compact_ratio: float = 0.8
    # How long one fact extraction (S1, S1.5) may take before it is dropped.
    facts_timeout_s: float = 30.0
    # A whole request (every model step and tool) stops after this long (THEUS_TURN_DEADLINE):
    # a model that keeps streaming, or keeps calling tools, is not left running unwatched.
    turn_deadline_s: float = 1800.0

    @property
    def injection_deadline_ms(self) -> float:
        return self.deadline_ms + (self.semantic_extra_ms if self.semantic_on else 0.0)

    @classmethod
    def from_settings(
        cls, settings: Settings | None = None, *, semantic_on: bool = False
    ) -> AgentSettings:
        settings = settings or current()
        return cls(
            inject=not settings.no_knowledge_inject,
            semantic_on=semantic_on,
            deadline_ms=settings.recall_deadline_ms,
            context_tokens=settings.context_tokens,
            max_turns=max(1, settings.max_turns),
            facts_timeout_s=settings.facts_timeout,
            turn_deadline_s=settings.turn_deadline,
        )
