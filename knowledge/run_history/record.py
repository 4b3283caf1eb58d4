"""One finished run as the history keeps it: the local record and the vector store's payload.

The point id is the run id. `lineage` names the request a run answered (its normalised text),
so a request asked again never gets its own earlier runs back as examples. Text is redacted
before it is stored anywhere (the store may be a shared server).
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from knowledge.core.frontmatter import shorten
from knowledge.core.redact import redact
from knowledge.core.runs import RunSummary
from knowledge.vectors.port import Payload

VERSION = 1  # of the point's payload; bumped when its fields change meaning
MAX_REQUEST_CHARS = 2000
MAX_LISTED = 8
_SPACE = re.compile(r"\s+")


def lineage(request: str) -> str:
    """The same request, however it was spaced or cased, is one lineage."""
    normal = _SPACE.sub(" ", request).strip().lower()
    return hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def done_text(run: RunSummary) -> str:
    """What was done, in a few lines: files changed, commands run, outcome, the answer's start."""
    lines = []
    if run.files_changed:
        lines.append("files changed: " + ", ".join(run.files_changed[:MAX_LISTED]))
    if run.commands:
        lines.append("commands: " + "; ".join(shorten(c, 100) for c in run.commands[:MAX_LISTED]))
    if run.not_done:
        lines.append("not done: " + "; ".join(shorten(n, 100) for n in run.not_done[:3]))
    lines.append(f"outcome: {run.outcome}")
    if run.answer.strip():
        lines.append("answer: " + shorten(run.answer, 300))
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class RunRecord:
    id: str  # the run id (a UUID), also the point id
    request: str
    done: str  # what the run did (`done_text`)
    project: str
    session: str
    lineage: str
    model: str  # the chat model that ran it
    embed_model: str = ""  # the embedder of its vector, naming its collection
    dim: int = 0
    files_changed: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    outcome: str = ""
    invalid: bool = False
    score: float | None = None  # a judge's score, when one ran
    created: float = field(default_factory=time.time)
    version: int = VERSION
    stored: bool = False  # whether the vector store holds it (the local record only)

    @classmethod
    def of_run(
        cls,
        run: RunSummary,
        *,
        request: str,
        project: str,
        session: str,
        model: str,
        run_id: str | None = None,
    ) -> RunRecord:
        return cls(
            id=run_id or str(uuid.uuid4()),
            request=redact(request)[:MAX_REQUEST_CHARS],
            done=redact(done_text(run)),
            project=project,
            session=session,
            lineage=lineage(request),
            model=model,
            files_changed=run.files_changed,
            commands=tuple(redact(c) for c in run.commands),
            outcome=run.outcome,
        )

    def payload(self) -> Payload:
        """The point's payload: everything but the bookkeeping of this machine."""
        data: dict[str, Any] = asdict(self)
        for local in ("id", "stored", "embed_model", "dim"):
            data.pop(local)
        data["files_changed"] = list(self.files_changed)
        data["commands"] = list(self.commands)
        return data

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["files_changed"] = list(self.files_changed)
        data["commands"] = list(self.commands)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        known = {f: data[f] for f in cls.__dataclass_fields__ if f in data}
        known["files_changed"] = tuple(known.get("files_changed", ()))
        known["commands"] = tuple(known.get("commands", ()))
        return cls(**known)

    def but(self, **changes: Any) -> RunRecord:
        return replace(self, **changes)
