"""The fact extraction's counters, for `theus status`: what the gate spared, what was asked,
and why an extraction did not happen or failed. The agent's process counts (`ExtractionStats`,
starting from what the file holds); `theus status` reads the file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowledge.core.paths import ProjectPaths
from knowledge.core.settings import is_off
from knowledge.recall.status import Counters

STATS_FILE = "facts-stats.json"


@dataclass
class ExtractionStats(Counters):
    not_asked: int = 0  # the gate read nothing durable in the request: no model call
    asked: int = 0  # an extraction request was answered
    skipped: int = 0  # not asked: the server was learned to answer no JSON
    failed: int = 0  # no answer in time, an error, an answer that was not JSON


def stats_path(paths: ProjectPaths) -> Path:
    return paths.home / STATS_FILE


def status_section(paths: ProjectPaths) -> dict[str, Any]:
    if is_off("facts"):
        return {"state": "off: THEUS_NO_FACTS=1"}
    return ExtractionStats.section(stats_path(paths))
