"""Files as they were before the agent changed them, turn by turn: `/undo` puts back what the
last turn's edits and writes changed, byte for byte, and `/diff` shows what the session
changed. Kept beside the session's transcript, so a resumed session (`-c`, `-r`) keeps them.
Only the edit and write tools are tracked: a shell command's changes are not (as in Claude
Code), so the answer says which files it put back."""

from __future__ import annotations

import difflib
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from knowledge.core import atomic
from theus.sessions import Session

INDEX = "index.json"


class Checkpoints:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.turn = max((int(p.name) for p in self._turns()), default=0)

    @classmethod
    def of(cls, session: Session) -> Checkpoints:
        """The session's, beside its transcript."""
        return cls(session.path.with_name(f"{session.id}.checkpoints"))

    def next_turn(self) -> None:
        self.turn = max([self.turn, *(int(p.name) for p in self._turns())]) + 1

    def save(self, rel: str, before: bytes | None) -> None:
        """Keep `rel` as it is now (`None`: it does not exist), once per turn: the first
        change of a turn is the one to go back to. Raises OSError."""
        turn = self.folder / f"{self.turn:06d}"
        index = _index(turn)
        if rel in index:
            return
        turn.mkdir(parents=True, exist_ok=True)
        blob = None
        if before is not None:
            blob = hashlib.sha256(rel.encode()).hexdigest()[:24]
            atomic.write_bytes(turn / blob, before, 0o600)
        index[rel] = blob
        atomic.write_text(turn / INDEX, json.dumps(index), 0o600)

    def undo(self, put: Callable[[str, bytes | None], None]) -> list[str]:
        """Put back the files of the last turn that changed any (`put(rel, None)` removes a
        file that turn created) and forget that turn; the files, [] when nothing is left."""
        turns = [t for t in self._turns() if _index(t)]
        if not turns:
            return []
        last = turns[-1]
        index = _index(last)
        for rel, blob in index.items():
            put(rel, (last / blob).read_bytes() if blob else None)
        shutil.rmtree(last, ignore_errors=True)
        return sorted(index)

    def diff(self, now: Callable[[str], bytes | None]) -> str:
        """What the session's edits and writes changed, as one unified diff (each file from
        before its first change to now); "" when nothing is."""
        first: dict[str, bytes | None] = {}
        for turn in self._turns():
            for rel, blob in _index(turn).items():
                if rel not in first:
                    first[rel] = (turn / blob).read_bytes() if blob else None
        parts: list[str] = []
        for rel, before in sorted(first.items()):
            after = now(rel)
            if after == before:
                continue
            parts += difflib.unified_diff(
                _lines(before),
                _lines(after),
                fromfile=f"a/{rel}" if before is not None else "/dev/null",
                tofile=f"b/{rel}" if after is not None else "/dev/null",
            )
        return "".join(parts)

    def _turns(self) -> list[Path]:
        try:
            return sorted(p for p in self.folder.iterdir() if p.is_dir() and p.name.isdigit())
        except OSError:
            return []


def _index(turn: Path) -> dict[str, str | None]:
    try:
        found = json.loads((turn / INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else data.decode("utf-8", "replace").splitlines(keepends=True)
