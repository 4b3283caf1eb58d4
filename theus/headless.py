"""`theus -p PROMPT`: the agent without a UI, for scripts and CI.

stdout carries only the answer (text), one JSON result object (json), or JSON lines that
always end with a `result` event (stream-json, errors included); diagnostics go to stderr.
Exit 0 on success, 1 on a failed run (model or tool failure, max turns), 2 on a usage error.
Never imports Textual.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from theus.commands.common import UsageError, project_root, to_devnull
from theus.config import MISSING_MODEL_HELP, load_model_settings
from theus.printable import printable
from theus.protocol import (
    ApprovalRequest,
    AssistantMessage,
    Compacted,
    Error,
    Event,
    InjectionInfo,
    MicrocompactCleared,
    SubagentFinished,
    SubagentStarted,
    ToolCallFinished,
    ToolCallStarted,
    Usage,
)

log = logging.getLogger("theus")
HEADLESS_DENIED = "headless runs need --allow-edits for edits and --allow-shell for commands"


class Printer:
    """Turns agent events into the chosen output format. When the reader of stdout goes away
    (`| head -1`), `gone` is set, stdout points at /dev/null and `on_gone` stops the run."""

    def __init__(self, fmt: str, out: Any = None, err: Any = None) -> None:
        self.fmt = fmt
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.gone = False
        self.on_gone: Callable[[], object] | None = None

    def line(self, payload: dict[str, Any]) -> None:
        self.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")

    def write(self, text: str) -> None:
        if self.gone:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except BrokenPipeError:
            self.gone = True
            with contextlib.suppress(OSError, ValueError):  # a test's stream has no fd
                to_devnull(self.out)
            if self.on_gone is not None:
                self.on_gone()

    def __call__(self, event: Event) -> None:
        if isinstance(event, Error):
            self.err.write(f"theus: {'error' if event.fatal else 'warning'}: "
                           f"{printable(event.message)}\n")
        if self.fmt != "stream-json":
            return
        payload = _event_json(event)
        if payload is not None:
            self.line(payload)


def _event_json(event: Event) -> dict[str, Any] | None:
    if isinstance(event, AssistantMessage):
        return {"type": "assistant", "text": event.text,
                "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                               for c in event.tool_calls]}
    if isinstance(event, ToolCallStarted):
        return {"type": "tool_use", "id": event.id, "name": event.name, "input": event.arguments}
    if isinstance(event, ToolCallFinished):
        return {"type": "tool_result", "id": event.id, "name": event.name,
                "content": event.result, "is_error": event.is_error}
    if isinstance(event, InjectionInfo):
        return {"type": "injection", "tokens": event.tokens, "took_ms": round(event.took_ms, 2),
                "dropped": event.dropped, "best_score": round(event.best_score, 3),
                "attached": bool(event.block), "reason": event.reason}
    if isinstance(event, MicrocompactCleared):
        return {"type": "microcompact", "cleared": event.cleared, "kept": event.kept,
                "tokens_saved": event.tokens_saved}
    if isinstance(event, Compacted):
        return {"type": "compaction", "messages_replaced": event.messages_replaced,
                "tokens_before": event.tokens_before, "tokens_after": event.tokens_after}
    if isinstance(event, SubagentStarted):
        return {"type": "subagent_start", "id": event.id, "description": event.description,
                "fork": event.fork, "seeded_tokens": event.seeded_tokens}
    if isinstance(event, SubagentFinished):
        return {"type": "subagent_end", "id": event.id, "is_error": event.is_error}
    if isinstance(event, Error):
        return {"type": "error", "message": event.message, "fatal": event.fatal}
    return None


def result_payload(*, subtype: str, text: str, session_id: str | None, num_turns: int,
                   usage: Usage, started: float, error: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "type": "result",
        "subtype": subtype,
        "is_error": subtype != "success",
        "result": text,
        "session_id": session_id,
        "num_turns": num_turns,
        "usage": usage.as_dict(),
        "injected_tokens": usage.injected_tokens,
        "duration_ms": round((time.monotonic() - started) * 1000),
    }
    if error:
        payload["error"] = error
    return payload


def _read_prompt(raw: str) -> str:
    prompt = sys.stdin.read() if raw == "-" else raw
    if not prompt.strip():
        raise UsageError("empty prompt: give one after -p, or pipe it on stdin")
    return prompt


def _setup_logging() -> None:
    root = logging.getLogger()
    if any(getattr(h, "theus_headless", False) for h in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("theus: %(levelname)s: %(message)s"))
    handler.theus_headless = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.WARNING)


def run_headless(args: argparse.Namespace) -> int:
    started = time.monotonic()
    fmt = getattr(args, "output_format", "text") or "text"
    printer = Printer(fmt)
    _setup_logging()
    try:
        root = project_root(getattr(args, "path", "."))
        prompt = _read_prompt(args.prompt)
        max_turns = getattr(args, "max_turns", None)
        if max_turns is not None and max_turns < 1:
            raise UsageError("--max-turns must be at least 1")
        settings = load_model_settings(getattr(args, "model", None))
        if settings is None:
            raise UsageError(MISSING_MODEL_HELP)
        session, messages = _open_session(root, args, settings.model)
    except UsageError as exc:
        sys.stderr.write(f"theus: {exc}\n")
        if fmt != "text":
            printer.line(result_payload(subtype="error_usage", text="", session_id=None,
                                        num_turns=0, usage=Usage(), started=started,
                                        error=str(exc)))
        return 2
    return asyncio.run(_run(args, root, prompt, settings, session, messages, printer, started))


def _open_session(root: Path, args: argparse.Namespace, model: str) -> tuple[Any, list[Any]]:
    from theus.sessions import SessionNotFound, SessionStore

    try:
        session = SessionStore(root).choose(
            resume=getattr(args, "resume", None),
            continue_last=getattr(args, "continue_last", False),
            root=str(root), model=model, headless=True)
    except SessionNotFound as exc:
        raise UsageError(str(exc)) from None
    return session, session.messages()


async def _run(args: argparse.Namespace, root: Path, prompt: str, settings: Any, session: Any,
               messages: list[Any], printer: Printer, started: float) -> int:
    from theus.agent.setup import start_headless

    allow = {"edit": bool(args.allow_edits), "shell": bool(args.allow_shell)}

    async def approve(request: ApprovalRequest) -> bool:
        return allow[request.kind]

    if printer.fmt == "stream-json":
        printer.line({"type": "system", "subtype": "init", "session_id": session.id,
                      "model": settings.model, "cwd": str(root)})
    runtime = await asyncio.to_thread(
        start_headless, root, settings, session, prompt, sink=printer, approver=approve,
        messages=messages, max_turns=args.max_turns,
        allow_config_edits=bool(getattr(args, "allow_config_edits", False)),
        denied_hint=HEADLESS_DENIED)
    agent = runtime.agent
    turn = asyncio.current_task()
    if turn is not None:  # nobody reads the answer any more: stop working on it
        printer.on_gone = turn.cancel
    try:
        result = await agent.run_turn(prompt)
        text, stop, error = result.text, result.stop, result.error
        if printer.fmt == "text" and stop == "end":  # at once: extraction may still run
            printer.write(printable(text).rstrip("\n") + "\n")
    except asyncio.CancelledError:  # Ctrl-C: still end with a result event (exit 130)
        text, stop, error = "", "cancelled", "interrupted"
    except Exception as exc:  # a bug must still end with a result event and exit 1
        log.exception("the run failed")
        text, stop, error = "", "error", f"internal error: {exc!r}"
    finally:
        await runtime.close(interrupted=stop == "cancelled")
    subtype = {"end": "success", "max_turns": "error_max_turns",
               "cancelled": "error_interrupted"}.get(stop, "error_during_execution")
    payload = result_payload(subtype=subtype, text=text, session_id=session.id,
                             num_turns=agent.num_turns, usage=agent.usage, started=started,
                             error=error)
    if printer.fmt != "text":  # the result waits for extraction: its tokens count in usage
        printer.line(payload)
    if printer.gone:  # the reader stopped (`| head`): a quiet exit 0, as `git log | head`
        return 0
    if stop == "cancelled":
        sys.stderr.write("theus: interrupted\n")
        return 130
    return 0 if subtype == "success" else 1
