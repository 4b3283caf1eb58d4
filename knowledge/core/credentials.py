"""Saved chat-endpoint credentials (`theus login`): config_home()/credentials.json, mode 0600."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

from knowledge.core import atomic
from knowledge.core.paths import config_home

log = logging.getLogger(__name__)

FILE_NAME = "credentials.json"


@dataclass(frozen=True, slots=True)
class ChatCredentials:
    base_url: str
    # Kept out of repr so a logged or printed object never shows the secret.
    api_key: str = field(repr=False)
    model: str


def credentials_path() -> Path:
    return config_home() / FILE_NAME


def load_credentials(path: Path | None = None) -> ChatCredentials | None:
    """The saved credentials, or None when there are none or the file is unusable (logged)."""
    path = path or credentials_path()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable credentials file %s: %s", path, exc)
        return None
    fields = ("base_url", "api_key", "model")
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in fields):
        log.warning("ignoring credentials file %s: expected string fields %s", path, fields)
        return None
    return ChatCredentials(raw["base_url"], raw["api_key"], raw["model"])


def save_credentials(credentials: ChatCredentials, path: Path | None = None) -> Path:
    """Write atomically with mode 0600: readers see the old file or the new one, never a part,
    and the secret is never readable by others, not even for the instant before a chmod."""
    path = path or credentials_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    payload = json.dumps(asdict(credentials), indent=2).encode("utf-8")
    # The temp file is created 0600 (mkstemp) and renamed over the target: the key is never
    # readable by others, not even for the instant before a chmod.
    atomic.write_bytes(path, payload, mode=0o600)
    return path
