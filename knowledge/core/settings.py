"""The memory's settings, typed: where data lives, the kill switches, the embedding endpoint,
the run-history store and the chat endpoint the semantic layer may fall back on.

The entry point loads them once (flags, then `THEUS_*` variables, then `config.toml`, then
these defaults) and installs them with `install`; every part of the memory reads `current()`,
never the environment. The parts a caller may want under other settings than the process's
(the semantic layer, the run history's store, their status) take them as an argument that
defaults to `current()`. A field `name` is the variable `THEUS_<NAME>` and the config key
`name`; `secret` fields are shown as set or unset, never by value.

A kill switch, `no_<layer>` (`THEUS_NO_<LAYER>=1`), turns one layer off: the layer is not
opened, and what it would add is skipped, not failed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

# The layers a kill switch turns off, in the order `theus status` lists them.
LAYERS = ("knowledge_inject", "embeddings", "episodes", "watch", "memdir", "facts", "history")


def doc(text: str, *, secret: bool = False) -> dict[str, object]:
    """The metadata of a setting: what it does, in one line (the README's Settings table says
    more), and whether its value is secret (shown only as set or unset)."""
    return {"doc": text, "secret": secret}


@dataclass(frozen=True, slots=True)
class MemorySettings:
    home: str = field(default="", metadata=doc("data folder (default: the platform's)"))
    no_knowledge_inject: bool = field(
        default=False, metadata=doc("no context block before model calls")
    )
    no_embeddings: bool = field(default=False, metadata=doc("semantic layer off"))
    no_episodes: bool = field(default=False, metadata=doc("no episodes recorded or recalled"))
    no_watch: bool = field(default=False, metadata=doc("no file watcher"))
    no_memdir: bool = field(default=False, metadata=doc("no MEMORY.md bridge"))
    no_facts: bool = field(default=False, metadata=doc("no facts from the conversation"))
    no_history: bool = field(default=False, metadata=doc("no few-shot history of past runs"))
    embeddings_url: str = field(default="", metadata=doc("hosted embedding endpoint"))
    embeddings_key: str = field(default="", repr=False, metadata=doc("its API key", secret=True))
    embeddings_model: str = field(
        default="", metadata=doc("hosted embedding model (default text-embedding-3-small)")
    )
    qdrant_url: str = field(default="", metadata=doc("Qdrant server for the run history"))
    qdrant_api_key: str = field(default="", repr=False, metadata=doc("its API key", secret=True))
    qdrant_collection: str = field(default="", metadata=doc("collection name prefix"))
    qdrant_dim: int = field(default=0, metadata=doc("expected vector size (0: the embedder's)"))
    # The chat endpoint, taken whole from one source (THEUS_*, else OPENAI_*): the model's
    # server, and the semantic layer's last resort.
    base_url: str = field(default="", metadata=doc("OpenAI-compatible /v1 endpoint"))
    api_key: str = field(default="", repr=False, metadata=doc("its API key", secret=True))
    # Where each setting came from ("default", "THEUS_MODEL", "config.toml", "--model"): for
    # `theus doctor` and the model's diagnostics.
    origin: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def is_off(self, layer: str) -> bool:
        """Whether `layer` (one of LAYERS, any case) is switched off."""
        return bool(getattr(self, f"no_{layer.lower()}"))

    def switched_off(self) -> list[str]:
        """The variables of the layers that are off, e.g. ["THEUS_NO_WATCH"]."""
        return [f"THEUS_NO_{layer.upper()}" for layer in LAYERS if self.is_off(layer)]

    def source(self, name: str) -> str:
        return self.origin.get(name, "default")


_lock = threading.Lock()
_current = MemorySettings()


def current() -> MemorySettings:
    """The settings the process runs with (the defaults until the entry point installs some)."""
    return _current


def install(settings: MemorySettings) -> None:
    """Make `settings` the process's own; the entry point calls this once, tests per test."""
    global _current
    with _lock:
        _current = settings


def is_off(layer: str) -> bool:
    """Whether the process runs with `layer` switched off."""
    return _current.is_off(layer)
