"""The history's per-project settings (`theus history settings`): on by default, at most 3
examples, each at least 0.85 similar to the request (the store applies the threshold)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from knowledge.core import atomic

FILE = "history.json"


@dataclass(frozen=True, slots=True)
class HistorySettings:
    enabled: bool = True
    limit: int = 3
    threshold: float = 0.85

    def check(self) -> HistorySettings:
        if not 1 <= self.limit <= 20:
            raise ValueError(f"limit {self.limit}: give 1 to 20 examples")
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"threshold {self.threshold}: give a similarity above 0 and at most 1")
        return self


def load(home: Path) -> HistorySettings:
    """The project's settings; the defaults for any missing or unreadable value."""
    saved = atomic.read_state(home / FILE)
    default = HistorySettings()
    try:
        return HistorySettings(
            enabled=bool(saved.get("enabled", default.enabled)),
            limit=int(saved.get("limit", default.limit)),
            threshold=float(saved.get("threshold", default.threshold)),
        ).check()
    except (TypeError, ValueError):
        return default


def save(home: Path, settings: HistorySettings) -> None:
    """Durably, or raise OSError (a command must not report a change it did not make)."""
    home.mkdir(parents=True, exist_ok=True)
    atomic.write_text(home / FILE, json.dumps(asdict(settings.check())))
