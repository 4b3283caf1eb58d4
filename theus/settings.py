"""Theus's settings, typed: the memory's (`MemorySettings`) and the agent's own: the model,
the bounds on every wait, the shell, the MCP server and the price table.

Loaded once by the entry point (`entrypoint/settings.py`: flags, then `THEUS_*` variables,
then `config.toml`, then these defaults) and installed for the process; nothing below the
entry point reads a `THEUS_*` variable. A field `name` is the variable `THEUS_<NAME>` and the
key `name` in `config.toml`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from knowledge.core import settings as memory
from knowledge.core.settings import MemorySettings, doc


@dataclass(frozen=True, slots=True)
class Settings(MemorySettings):
    model: str = field(default="", metadata=doc("model name (`--model` overrides)"))
    timeout: float = field(default=120.0, metadata=doc("seconds until the first token"))
    idle_timeout: float = field(
        default=60.0, metadata=doc("seconds a stream may send nothing mid-answer")
    )
    max_retries: int = field(default=4, metadata=doc("retries of a failed model call"))
    retry_base: float = field(default=0.5, metadata=doc("first retry's wait, seconds"))
    retry_deadline: float = field(
        default=180.0, metadata=doc("no retry starts after this many seconds on one call")
    )
    max_output_tokens: int = field(
        default=8192, metadata=doc("the answer's token limit sent to the server (0: none)")
    )
    context_tokens: int = field(
        default=128_000, metadata=doc("context size when the server does not state one")
    )
    max_turns: int = field(
        default=50, metadata=doc("model turns per request (`--max-turns` overrides)")
    )
    turn_deadline: float = field(
        default=1800.0, metadata=doc("seconds one request may take in all")
    )
    recall_deadline_ms: float = field(
        default=150.0, metadata=doc("time box of the context block, milliseconds")
    )
    facts_timeout: float = field(default=30.0, metadata=doc("seconds one fact extraction may take"))
    # The fact extraction's own model: a small one does (default: the chat model).
    facts_model: str = field(default="", metadata=doc("fact extraction's model (default: chat)"))
    facts_base_url: str = field(
        default="", metadata=doc("fact extraction's endpoint (default: the chat endpoint)")
    )
    # Only ever sent to the facts endpoint; the chat key only to the chat endpoint.
    facts_api_key: str = field(
        default="", repr=False, metadata=doc("fact extraction's API key", secret=True)
    )
    no_sandbox: bool = field(
        default=False, metadata=doc("run shell commands unconfined, on purpose")
    )
    shell_network: bool = field(default=False, metadata=doc("sandboxed commands get a network"))
    shell_env: str = field(
        default="", metadata=doc("more variables passed to commands (comma-separated names)")
    )
    mcp_token: str = field(
        default="", repr=False, metadata=doc("`theus mcp --http`'s bearer token", secret=True)
    )
    mcp_start_timeout: float = field(
        default=10.0, metadata=doc("seconds an MCP server may take to start and list tools")
    )
    prices: str = field(default="", metadata=doc("price table (default: prices.json)"))


def current() -> Settings:
    """The settings the process runs with (the defaults until the entry point installs some)."""
    installed = memory.current()
    if isinstance(installed, Settings):
        return installed
    return Settings(**{f.name: getattr(installed, f.name) for f in fields(installed)})


def install(settings: Settings) -> None:
    """Make `settings` the process's own, for the agent and the memory alike."""
    memory.install(settings)


def described(settings: Settings) -> dict[str, dict[str, Any]]:
    """Every setting with its value (a secret only as set or unset) and where it came from,
    for `theus doctor` and `theus status --json`."""
    shown: dict[str, dict[str, Any]] = {}
    for f in fields(settings):
        if f.name == "origin":
            continue
        value = getattr(settings, f.name)
        if f.metadata.get("secret"):
            value = "set" if value else "unset"
        shown[f.name] = {"value": value, "source": settings.source(f.name)}
    return shown
