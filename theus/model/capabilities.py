"""What one server (base URL + model) can do, learned from its answers, never from a probe
before a run: whether it streams tool calls, takes `tool_choice`, `stream_options`,
`max_tokens` and `response_format`, answers a structured request with JSON at all, reports
usage, its context size and how its token counts compare with our estimate.

Shared by every client of the process and kept in the Theus home (`servers.json`) for a day,
so a one-shot run does not pay again for what the last one learned. Fails open: a home that
cannot be read or written only means learning again."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from knowledge.core.paths import data_home

log = logging.getLogger(__name__)
# A server may be restarted with other settings: what was learned is trusted this long.
FRESH_FOR_S = 24 * 3600.0


@dataclass
class Capabilities:
    streams_tool_calls: bool | None = None  # None: not seen yet
    tool_choice: bool = True
    stream_options: bool = True
    reports_usage: bool | None = None
    # The parameter the output limit goes in ("" when the server refuses both names).
    max_tokens_param: str = "max_tokens"
    max_output_cap: int | None = None  # the most output tokens the server said it allows
    context_tokens: int | None = None
    context_source: str = ""
    # The server's prompt tokens per token of our estimate (learned from reported usage).
    token_ratio: float = 1.0
    # Structured output (the fact extraction): whether the server takes `response_format`
    # (else JSON is asked for in the prompt only), and whether what it answers is JSON at all
    # (else the extraction is not asked of it while this is fresh).
    response_format: bool = True
    answers_json: bool = True
    learned_at: float = 0.0
    # Notices already shown in this process (a work-around is said once, not every step).
    told: set[str] = field(default_factory=set, compare=False)

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data.pop("told")
        return data


_live: dict[str, Capabilities] = {}
_lock = threading.Lock()


def _key(base_url: str, model: str) -> str:
    return f"{base_url.rstrip('/')} {model}"


def _path() -> Path:
    return data_home() / "servers.json"


def _read() -> dict[str, Any]:
    try:
        data = json.loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def for_server(base_url: str, model: str) -> Capabilities:
    """This process's record for the server, else the saved one while fresh, else a new one."""
    key = _key(base_url, model)
    with _lock:
        if key in _live:
            return _live[key]
        caps = Capabilities()
        saved = _read().get(key)
        known = {f.name for f in fields(Capabilities)} - {"told"}
        with contextlib.suppress(KeyError, TypeError, ValueError):  # hand-edited: learn again
            if isinstance(saved, dict) and time.time() - saved["learned_at"] < FRESH_FOR_S:
                caps = Capabilities(**{k: v for k, v in saved.items() if k in known})
        _live[key] = caps
        return caps


def forget(base_url: str, model: str) -> None:
    """Start over for this server in this process (`theus doctor` learns it all again)."""
    with _lock:
        _live[_key(base_url, model)] = Capabilities()


def save(base_url: str, model: str, caps: Capabilities) -> None:
    caps.learned_at = time.time()
    path = _path()
    with _lock:
        data = _read()
        data[_key(base_url, model)] = caps.to_json()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".servers-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(data, out, indent=1)
                os.replace(tmp, path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        except OSError as exc:
            log.debug("cannot save what was learned about %s: %s", base_url, exc)
