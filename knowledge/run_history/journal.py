"""The history's local record: one JSON file per run in the project's data folder.

It is what `theus history list` shows and what a strict operation changes after the store did;
the vector store is the searchable copy. Writes are atomic (a crash leaves the old file or the
new one, never half of one).
"""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

from knowledge.core import atomic
from knowledge.core.errors import TheusError
from knowledge.run_history.record import RunRecord

log = logging.getLogger(__name__)

WAITING = "waiting"


class NoSuchRun(TheusError, LookupError):
    pass


class AmbiguousRun(TheusError, LookupError):
    pass


class Journal:
    """`<id>.json` per run; `waiting/<id>` marks a valid run the vector store does not hold
    yet, so a later run finds the few to store without reading every record."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def write(self, record: RunRecord) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic.write_text(self._path(record.id), json.dumps(record.to_json(), sort_keys=True))
        mark = self.folder / WAITING / str(uuid.UUID(record.id))
        if record.stored or record.invalid:
            mark.unlink(missing_ok=True)
        else:
            mark.parent.mkdir(exist_ok=True)
            mark.touch()

    def remove(self, run_id: str) -> bool:
        (self.folder / WAITING / str(uuid.UUID(run_id))).unlink(missing_ok=True)
        return atomic.remove(self._path(run_id))

    def waiting(self, limit: int) -> list[RunRecord]:
        """Up to `limit` runs marked as not in the store yet."""
        marks = self.folder / WAITING
        found = []
        for mark in sorted(marks.iterdir())[:limit] if marks.is_dir() else []:
            try:
                found.append(self._read(self._path(mark.name)))
            except (OSError, ValueError, TypeError):
                mark.unlink(missing_ok=True)  # its record is gone or unreadable
        return found

    def records(self) -> list[RunRecord]:
        """Every run, newest first (an unreadable file is skipped with a log line)."""
        if not self.folder.is_dir():
            return []
        found = []
        for path in self.folder.glob("*.json"):
            try:
                found.append(self._read(path))
            except (OSError, ValueError, TypeError) as exc:
                log.warning("run record %s unreadable: %s", path.name, exc)
        return sorted(found, key=lambda r: r.created, reverse=True)

    def find(self, ref: str) -> RunRecord:
        """The run whose id is `ref` or starts with it (at least 4 characters)."""
        ref = ref.strip().lower()
        matches = [r for r in self.records() if len(ref) >= 4 and r.id.startswith(ref)]
        if not matches:
            raise NoSuchRun(ref)
        if len(matches) > 1:
            raise AmbiguousRun(f"{ref!r} matches {len(matches)} runs: give more of the id")
        return matches[0]

    @staticmethod
    def _read(path: Path) -> RunRecord:
        return RunRecord.from_json(json.loads(path.read_text(encoding="utf-8")))

    def _path(self, run_id: str) -> Path:
        return self.folder / f"{uuid.UUID(run_id)}.json"  # a UUID: never a path elsewhere
