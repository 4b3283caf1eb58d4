"""Conversation transcripts: one JSONL file per session in the project's data folder.

Records are appended as they happen (a crash loses at most the line being written):
`meta` (first line), `message` (one chat message), `microcompact` (which tool results were
cleared and the placeholders), `compaction` (the message list that replaced the history).
Replaying them in order rebuilds the conversation for `--continue` / `--resume`.

Failing open: a transcript that cannot be written (full disk, read-only data folder) is one
warning, and the conversation goes on without it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowledge.core.errors import TheusError
from knowledge.core.paths import ProjectPaths, report_unwritable
from knowledge.core.redact import redact_data
from theus.agent import microcompact
from theus.protocol import Message, is_request

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,80}$")
log = logging.getLogger(__name__)


class SessionNotFound(TheusError):
    pass


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    path: Path
    created: float
    updated: float
    title: str
    messages: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created": self.created,
            "updated": self.updated,
            "title": self.title,
            "messages": self.messages,
            "path": str(self.path),
        }


class Session:
    def __init__(self, session_id: str, path: Path) -> None:
        self.id = session_id
        self.path = path
        self.unsaved = ""  # why the transcript stopped being written ("" while it is)

    def append(self, record: dict[str, Any]) -> None:
        """Append `record`, redacted: what the user typed and what the model said are kept
        as they were sent, less the secrets in them."""
        if self.unsaved:
            return
        line = json.dumps(redact_data(record), ensure_ascii=False, default=str) + "\n"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError as exc:
            self.fail(exc)

    def fail(self, exc: OSError) -> None:
        """Stop writing the transcript, with one warning; the conversation goes on."""
        self.unsaved = exc.strerror or str(exc)
        if not report_unwritable(exc):
            log.warning(
                "the session transcript is not being saved (%s): %s", self.unsaved, self.path
            )

    def records(self) -> list[dict[str, Any]]:
        out = []
        try:
            with self.path.open(encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue  # a torn last line after a crash
                    if isinstance(record, dict):
                        out.append(record)
        except FileNotFoundError:  # never written (a read-only data folder)
            return []
        return out

    def messages(self) -> list[Message]:
        """The conversation as it stood at the end of the transcript."""
        messages: list[Message] = []
        for record in self.records():
            kind = record.get("type")
            if kind == "message" and isinstance(record.get("message"), dict):
                messages.append(record["message"])
            elif kind == "microcompact":
                microcompact.apply(messages, record.get("placeholders") or {})
            elif kind == "compaction" and isinstance(record.get("messages"), list):
                messages = list(record["messages"])
        return messages


class SessionStore:
    def __init__(self, root: Path) -> None:
        self.dir = ProjectPaths.for_root(root).sessions

    def create(self, **meta: Any) -> Session:
        session_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        session = Session(session_id, self.dir / f"{session_id}.jsonl")
        try:
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            session.fail(exc)
        session.append({"type": "meta", "id": session_id, "created": time.time(), **meta})
        return session

    def open(self, session_id: str) -> Session:
        if not _ID.match(session_id):
            raise SessionNotFound(f"not a session id: {session_id!r}")
        path = self.dir / f"{session_id}.jsonl"
        if path.is_file():
            return Session(session_id, path)
        # A unique prefix will do, as with git's commit ids.
        matches = sorted(p.stem for p in self.dir.glob(f"{session_id}*.jsonl"))
        if len(matches) == 1:
            return Session(matches[0], self.dir / f"{matches[0]}.jsonl")
        if matches:
            raise SessionNotFound(
                f"{len(matches)} sessions start with {session_id}: "
                + ", ".join(matches[:5])
                + " (give more of the id)"
            )
        raise SessionNotFound(f"no session {session_id} in this project (see `theus sessions`)")

    def choose(
        self, *, resume: str | None = None, continue_last: bool = False, **meta: Any
    ) -> Session:
        """What `-r ID` / `-c` / neither mean: the given session, the latest, or a new one."""
        if resume == "":  # `-r` with no id: only the app has a picker to choose with
            raise SessionNotFound(
                "-r needs a session id here (see `theus sessions`; a unique prefix will do)"
            )
        if resume:
            return self.open(resume)
        if continue_last:
            session = self.last()
            if session is None:
                raise SessionNotFound(
                    "no earlier session in this project to continue (drop -c to start one)"
                )
            return session
        return self.create(**meta)

    def last(self) -> Session | None:
        infos = self.list()
        return self.open(infos[0].id) if infos else None

    def list(self) -> list[SessionInfo]:
        """Newest first."""
        if not self.dir.is_dir():
            return []
        infos = []
        for path in self.dir.glob("*.jsonl"):
            session = Session(path.stem, path)
            try:
                records = session.records()
                updated = path.stat().st_mtime
            except OSError:
                continue
            created = next((r.get("created") for r in records if r.get("type") == "meta"), updated)
            messages = [
                r["message"]
                for r in records
                if r.get("type") == "message" and isinstance(r.get("message"), dict)
            ]
            title = next((str(m.get("content") or "") for m in messages if is_request(m)), "")
            infos.append(
                SessionInfo(
                    path.stem,
                    path,
                    float(created or updated),
                    updated,
                    " ".join(title.split())[:80],
                    len(messages),
                )
            )
        infos.sort(key=lambda i: (i.updated, i.id), reverse=True)
        return infos
