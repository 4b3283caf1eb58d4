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
import select
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from theus.config import MISSING_MODEL_HELP, load_model_settings
from theus.printable import PrintableFormatter, escape_controls, printable
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
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    Usage,
    text_of,
)
from theus.service.process import to_devnull
from theus.service.project import UsageError, project_root
from theus.tool_rules import ToolRules

if TYPE_CHECKING:
    from concurrent.futures import Future

    from theus.agent.setup import Opening
    from theus.mcp.allow import Allowance
    from theus.mcp.client import McpHub
    from theus.model.meter import Meter

log = logging.getLogger("theus")
HEADLESS_DENIED = (
    "headless runs need --allow-edits for edits, --allow-shell for commands "
    "and --allow-mcp or --allow-mcp-tool SERVER__TOOL for MCP tools"
)
FLAG_FOR = {
    "edit": "--allow-edits",
    "shell": "--allow-shell",
    "mcp": "--allow-mcp (or --allow-mcp-tool SERVER__TOOL)",
}
UNSANDBOXED_FLAG = "--allow-shell --allow-unsandboxed-shell (no sandbox on this machine)"
# With a prompt given, piped stdin is added to it; a pipe that sends nothing this long (a
# script's stdin left open) is not waited on further, as in Claude Code.
STDIN_WAIT_S = 3.0


class Printer:
    """Turns agent events into the chosen output format. When the reader of stdout goes away
    (`| head -1`), `gone` is set, stdout points at /dev/null and `on_gone` stops the run."""

    def __init__(self, fmt: str, out: Any = None, err: Any = None) -> None:
        self.fmt = fmt
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.gone = False
        self.on_gone: Callable[[], object] | None = None
        self.session_id: str | None = None  # on every stream-json event, once known
        self.model = ""  # in each assistant message, once known
        self.running: dict[str, ToolCallStarted] = {}  # tool calls started, not yet finished
        self.denials: list[dict[str, Any]] = []

    def line(self, payload: dict[str, Any]) -> None:
        if self.session_id is not None:
            payload.setdefault("session_id", self.session_id)
        if self.fmt == "stream-json":  # Claude Code's: every message has its own id
            payload.setdefault("uuid", str(uuid.uuid4()))
        self.write(escape_controls(json.dumps(payload, ensure_ascii=False, default=str)) + "\n")

    def deny(
        self, request: ApprovalRequest, flag: str | None = None, reason: str | None = None
    ) -> None:
        """An edit or command the run's permissions refused, for `permission_denials`. It
        belongs to the latest tool call still running: the conversation's own call (or, for a
        subagent's, the call that started the subagent)."""
        call = next(reversed(self.running.values()), None)
        where = (
            {"path": request.path}
            if request.kind == "edit"
            else {"tool": request.tool}
            if request.kind == "mcp"
            else {"command": request.detail}
        )
        self.denials.append(
            {
                "tool_name": call.name if call else request.kind,
                "tool_use_id": call.id if call else None,
                "tool_input": call.arguments if call else where,
                "reason": f"{request.summary}: "
                f"{reason or 'needs ' + (flag or FLAG_FOR[request.kind])}",
            }
        )

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
        if isinstance(event, ToolCallStarted):
            self.running[event.id] = event
        elif isinstance(event, ToolCallFinished):
            self.running.pop(event.id, None)
        if isinstance(event, Error):
            self.err.write(
                f"theus: {'error' if event.fatal else 'warning'}: {printable(event.message)}\n"
            )
        if self.fmt != "stream-json":
            return
        payload = _event_json(event, self.model)
        if payload is not None:
            self.line(payload)


def _event_json(event: Event, model: str = "") -> dict[str, Any] | None:
    """Claude Code's stream-json shapes: the model's messages as `assistant` messages of
    content blocks (text, tool_use), tool results as `user` messages of tool_result blocks,
    and Theus's own events as `system` events with their own subtype. Theus's extra fields
    ride inside (a tool_result block's `name` and `took_ms`)."""
    if isinstance(event, AssistantMessage):
        content: list[dict[str, Any]] = [{"type": "text", "text": event.text}] if event.text else []
        content += [_tool_use(call) for call in event.tool_calls]
        return {
            "type": "assistant",
            "parent_tool_use_id": None,
            "message": {
                "id": f"msg_{uuid.uuid4().hex}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_sequence": None,
                "stop_reason": "tool_use" if event.tool_calls else "end_turn",
            },
        }
    if isinstance(event, ToolCallFinished):
        return {
            "type": "user",
            "parent_tool_use_id": None,
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": event.id,
                        "content": event.result,
                        "is_error": event.is_error,
                        "name": event.name,
                        "took_ms": round(event.took_ms, 2),
                    }
                ],
            },
        }
    own = _theus_event(event)
    return {"type": "system", **own} if own is not None else None


def _tool_use(call: ToolCall) -> dict[str, Any]:
    """A tool_use block; arguments that are not a JSON object stay as sent, in `raw_input`."""
    try:
        given = json.loads(call.arguments or "{}")
    except ValueError:
        given = None
    block = {
        "type": "tool_use",
        "id": call.id,
        "name": call.name,
        "input": given if isinstance(given, dict) else {},
    }
    return block if isinstance(given, dict) else {**block, "raw_input": call.arguments}


def _theus_event(event: Event) -> dict[str, Any] | None:
    if isinstance(event, InjectionInfo):
        return {
            "subtype": "injection",
            "tokens": event.tokens,
            "took_ms": round(event.took_ms, 2),
            "dropped": event.dropped,
            "best_score": round(event.best_score, 3),
            "attached": bool(event.block),
            "reason": event.reason,
            "examples": event.examples,
        }
    if isinstance(event, MicrocompactCleared):
        return {
            "subtype": "microcompact",
            "cleared": event.cleared,
            "kept": event.kept,
            "tokens_saved": event.tokens_saved,
        }
    if isinstance(event, Compacted):
        return {
            "subtype": "compaction",
            "messages_replaced": event.messages_replaced,
            "tokens_before": event.tokens_before,
            "tokens_after": event.tokens_after,
        }
    if isinstance(event, SubagentStarted):
        return {
            "subtype": "subagent_start",
            "id": event.id,
            "description": event.description,
            "fork": event.fork,
            "seeded_tokens": event.seeded_tokens,
        }
    if isinstance(event, SubagentFinished):
        return {"subtype": "subagent_end", "id": event.id, "is_error": event.is_error}
    if isinstance(event, Error):
        return {"subtype": "error", "message": event.message, "fatal": event.fatal}
    return None


def result_payload(
    *,
    subtype: str,
    text: str,
    session_id: str | None,
    num_turns: int,
    usage: Usage,
    started: float,
    error: str | None = None,
    meter: Meter | None = None,
    model: str = "",
    denials: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The final `result` event. Claude Code's fields (`usage.input_tokens`…,
    `duration_api_ms`, `total_cost_usd`, `permission_denials`) sit beside Theus's own; the
    README documents both."""
    from theus.pricing import cost_usd

    spent = _spent(meter)
    payload: dict[str, Any] = {
        "type": "result",
        "subtype": subtype,
        "is_error": subtype != "success",
        "result": text,
        "session_id": session_id,
        "num_turns": num_turns,
        "usage": {**usage.as_dict(), **spent},
        "injected_tokens": usage.injected_tokens,
        "duration_ms": round((time.monotonic() - started) * 1000),
        "duration_api_ms": round(meter.api_seconds * 1000) if meter else 0,
        "total_cost_usd": cost_usd(model, meter.input_tokens, meter.output_tokens)
        if meter and model
        else None,
        "permission_denials": denials or [],
    }
    if error:
        payload["error"] = error
    return payload


def _spent(meter: Meter | None) -> dict[str, int | None]:
    """Claude Code's usage fields: every model call of the run, fact extraction included."""
    if meter is None:  # the run never started
        return {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_creation_input_tokens": None,
            "cache_read_input_tokens": None,
        }
    return {
        "input_tokens": meter.input_tokens,
        "output_tokens": meter.output_tokens,
        "cache_creation_input_tokens": meter.cache_creation_tokens,
        "cache_read_input_tokens": meter.cache_read_tokens,
    }


def _first_request(args: argparse.Namespace, fmt: str) -> str:
    """The words after -p (with piped stdin); with `--input-format stream-json`, the words
    or else the first message on stdin."""
    if not _stream_input(args):
        return _read_prompt(args.prompt, sys.stdin)
    if fmt != "stream-json":
        raise UsageError("--input-format stream-json needs --output-format stream-json")
    words = " ".join(w for w in args.prompt if w != "-").strip()
    try:
        first = words or StreamRequests(sys.stdin).next()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not first:
        raise UsageError("--input-format stream-json: stdin closed before any user message")
    return first


def _read_prompt(words: list[str], stdin: Any) -> str:
    """The words after -p, then what is piped on stdin (a terminal is never read). `-p` alone
    (or `-p -`) takes the whole prompt from stdin, however long it takes to come."""
    given = "" if words == ["-"] else " ".join(words).strip()
    piped = _piped(stdin, STDIN_WAIT_S if given else None)
    prompt = f"{given}\n\n{piped}" if given and piped.strip() else given or piped
    if not prompt.strip():
        raise UsageError("empty prompt: give one after -p, or pipe it on stdin")
    return prompt


def _piped(stdin: Any, wait_s: float | None) -> str:
    if stdin is None or stdin.isatty():
        return ""
    if wait_s is not None:
        try:
            ready = select.select([stdin], [], [], wait_s)[0]
        except (OSError, ValueError):  # not a selectable stream: read it as it is
            ready = [stdin]
        if not ready:
            sys.stderr.write(
                f"theus: warning: nothing came on stdin within {wait_s:g}s; going "
                "on with the prompt alone (redirect `< /dev/null` to skip the "
                "wait)\n"
            )
            return ""
    return str(stdin.read())


def _setup_logging() -> None:
    root = logging.getLogger()
    if any(getattr(h, "theus_headless", False) for h in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("theus: %(levelname)s: %(message)s"))
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
        prompt = _first_request(args, fmt)
        max_turns = getattr(args, "max_turns", None)
        if max_turns is not None and max_turns < 1:
            raise UsageError("--max-turns must be at least 1")
        rules = _tool_rules(args)
        _mcp_allowance(args, rules)
        for given in getattr(args, "mcp_config", None) or ():
            if not Path(given).is_file():
                raise UsageError(
                    f"--mcp-config {given}: no such file (give a JSON file "
                    'like .mcp.json: {"mcpServers": {...}})'
                )
        settings = load_model_settings()
        if settings is None:
            raise UsageError(MISSING_MODEL_HELP)
        session, messages = _open_session(root, args, settings.model)
    except UsageError as exc:
        sys.stderr.write(f"theus: {exc}\n")
        if fmt != "text":
            printer.line(
                result_payload(
                    subtype="error_usage",
                    text="",
                    session_id=None,
                    num_turns=0,
                    usage=Usage(),
                    started=started,
                    error=str(exc),
                )
            )
        return 2
    from theus.agent.block_child import fork_block
    from theus.service.interrupts import hand_over

    hand_over()  # asyncio's Ctrl-C from here: it cancels the turn, which still reports
    # The block is recalled in a child on the other core (forked before any thread), or
    # here, on a thread, beside the model client's imports.
    child = fork_block(root, prompt, messages)
    from theus.agent.setup import start_opening

    opening = start_opening(root, prompt, messages, child)
    return asyncio.run(
        _run(args, root, prompt, settings, session, messages, printer, started, rules, opening)
    )


def _open_session(root: Path, args: argparse.Namespace, model: str) -> tuple[Any, list[Any]]:
    from theus.sessions import SessionNotFound, SessionStore

    try:
        session = SessionStore(root).choose(
            resume=getattr(args, "resume", None),
            continue_last=getattr(args, "continue_last", False),
            root=str(root),
            model=model,
            headless=True,
        )
    except SessionNotFound as exc:
        raise UsageError(str(exc)) from None
    return session, session.messages()


async def _run(
    args: argparse.Namespace,
    root: Path,
    prompt: str,
    settings: Any,
    session: Any,
    messages: list[Any],
    printer: Printer,
    started: float,
    rules: ToolRules,
    opening: Future[Opening],
) -> int:
    from theus.agent.setup import start_headless

    allow = {
        "edit": bool(args.allow_edits) or "edit" in rules.kinds,
        "shell": bool(args.allow_shell) or "shell" in rules.kinds,
    }
    mcp_allowed, hub = _start_mcp(args, root, rules)

    async def approve(request: ApprovalRequest) -> bool:
        verdict = rules.verdict(request)
        if verdict is False:
            request.reason = f"refused by {_given(args)}"
            printer.deny(request, reason=request.reason)
            return False
        ok = verdict or (
            mcp_allowed.allows(request.tool or "") if request.kind == "mcp" else allow[request.kind]
        )
        unconfined = request.kind == "shell" and bool(request.protected)  # no sandbox here
        if ok and unconfined and not getattr(args, "allow_unsandboxed_shell", False):
            ok = False
            log.warning(
                "shell commands refused: %s; pass --allow-unsandboxed-shell to run them anyway",
                request.protected,
            )
        if not ok:
            printer.deny(request, UNSANDBOXED_FLAG if unconfined else None)
        return ok

    printer.session_id, printer.model = session.id, settings.model
    runtime = await asyncio.to_thread(
        start_headless,
        root,
        settings,
        session,
        prompt,
        sink=printer,
        approver=approve,
        messages=messages,
        max_turns=args.max_turns,
        allow_config_edits=bool(getattr(args, "allow_config_edits", False)),
        denied_hint=HEADLESS_DENIED,
        mcp=hub,
        opening=opening,
    )
    agent = runtime.agent
    extra = getattr(args, "append_system_prompt", None)
    if extra and agent.messages and agent.messages[0].get("role") == "system":
        # This run's wire only, as in Claude Code: the session keeps the prompt it began with.
        agent.messages[0] = {
            **agent.messages[0],
            "content": f"{agent.messages[0]['content']}\n\n{extra}",
        }
    for name in list(agent.tools):  # subagents get their tools from this set
        if name in rules.removed or any(fnmatchcase(name, n) for n in rules.mcp_denied):
            del agent.tools[name]
    if printer.fmt == "stream-json":
        printer.line(
            {
                "type": "system",
                "subtype": "init",
                "session_id": session.id,
                "model": settings.model,
                "cwd": str(root),
                "tools": sorted(agent.tools),
                "mcp_servers": [
                    {"name": c.name, "status": "connected" if c.state == "ready" else c.state}
                    for c in (hub.connections.values() if hub else ())
                ],
                "permissionMode": _permission_mode(allow, rules.mode),
                "apiKeySource": "none",
                "slash_commands": [],
                "allowed": sorted(kind for kind, on in allow.items() if on),
                "instructions": list(agent.instructions.files),
            }
        )
    turn = asyncio.current_task()
    if turn is not None:  # nobody reads the answer any more: stop working on it
        printer.on_gone = turn.cancel
    requests = StreamRequests(sys.stdin) if _stream_input(args) else None
    outcome = _Outcome("", "cancelled", "interrupted")
    try:
        while True:
            outcome = await _answer(agent, prompt, printer)
            if requests is None or outcome.stop == "cancelled" or printer.gone:
                break
            # The reader waits for each turn's result before it sends the next request.
            code = _report(outcome, agent, session, settings, printer, started)
            try:
                following = await asyncio.to_thread(requests.next)
            except ValueError as exc:
                printer.line(
                    {"type": "system", "subtype": "error", "message": str(exc), "fatal": True}
                )
                sys.stderr.write(f"theus: {exc}\n")
                return 1
            if following is None:  # stdin closed: the conversation is over
                return code
            prompt = following
    finally:
        await runtime.close(interrupted=outcome.stop == "cancelled")
    # The result waits for extraction: its tokens count in usage.
    return _report(outcome, agent, session, settings, printer, started)


@dataclass(frozen=True)
class _Outcome:
    text: str
    stop: str
    error: str | None = None
    incomplete: str | None = None


async def _answer(agent: Any, prompt: str, printer: Printer) -> _Outcome:
    try:
        result = await agent.run_turn(prompt)
    except asyncio.CancelledError:  # Ctrl-C: still end with a result event (exit 130)
        return _Outcome("", "cancelled", "interrupted")
    except Exception as exc:  # a bug must still end with a result event and exit 1
        log.exception("the run failed")
        return _Outcome("", "error", f"internal error: {exc!r}")
    if printer.fmt == "text" and result.stop == "end":  # at once: extraction may still run
        printer.write(printable(result.text).rstrip("\n") + "\n")
    return _Outcome(result.text, result.stop, result.error, result.incomplete)


def _report(
    outcome: _Outcome, agent: Any, session: Any, settings: Any, printer: Printer, started: float
) -> int:
    """Print a turn's result (json, stream-json) and give the exit code it means."""
    subtype = {
        "end": "success",
        "max_turns": "error_max_turns",
        "cancelled": "error_interrupted",
    }.get(outcome.stop, "error_during_execution")
    payload = result_payload(
        subtype=subtype,
        text=outcome.text,
        session_id=session.id,
        num_turns=agent.num_turns,
        usage=agent.usage,
        started=started,
        error=outcome.error,
        meter=agent.model.meter,
        model=settings.model,
        denials=printer.denials,
    )
    if outcome.incomplete:  # "answer cut at N tokens", a dropped connection (stderr said it)
        payload["incomplete"] = outcome.incomplete
    if agent.usage_estimated:  # the server reported no usage: these counts are ours
        payload["usage"]["estimated"] = True
    if printer.fmt != "text":
        printer.line(payload)
    if printer.gone:  # the reader stopped (`| head`): a quiet exit 0, as `git log | head`
        return 0
    if outcome.stop == "cancelled":
        sys.stderr.write("theus: interrupted\n")
        return 130
    return 0 if subtype == "success" else 1


class StreamRequests:
    """`--input-format stream-json`: Claude Code's user messages, one JSON object per line on
    stdin (`{"type": "user", "message": {"role": "user", "content": "..." or [text
    blocks]}}`); blank lines are skipped."""

    def __init__(self, stdin: Any) -> None:
        self.stdin = stdin

    def next(self) -> str | None:
        """The next request's text; None when stdin is closed. Raises ValueError (one line)
        for a line that is not a user message."""
        while True:
            line = self.stdin.readline()
            if not line:
                return None
            if line.strip():
                return user_text(line)


def user_text(line: str) -> str:
    try:
        event = json.loads(line)
    except ValueError:
        raise ValueError(f"--input-format stream-json: not JSON: {line.strip()[:80]!r}") from None
    message = event.get("message") if isinstance(event, dict) else None
    content = text_of(message.get("content")) if isinstance(message, dict) else ""
    if not isinstance(event, dict) or event.get("type") != "user" or not content.strip():
        raise ValueError(
            '--input-format stream-json reads lines like {"type": "user", '
            '"message": {"role": "user", "content": "..."}}, not '
            f"{line.strip()[:80]!r}"
        )
    return content


def _stream_input(args: argparse.Namespace) -> bool:
    return getattr(args, "input_format", "text") == "stream-json"


def _start_mcp(
    args: argparse.Namespace, root: Path, rules: ToolRules
) -> tuple[Allowance, McpHub | None]:
    """The run's MCP allowance, and the hub of the servers it names (None when it names
    none: nothing is started). Started now, so the servers come up while the memory opens."""
    from theus.mcp.client import start_hub

    allowed = _mcp_allowance(args, rules)
    given = tuple(Path(p) for p in getattr(args, "mcp_config", None) or ())
    return allowed, start_hub(root, allowed.starts, given) if allowed.any else None


def _mcp_allowance(args: argparse.Namespace, rules: ToolRules) -> Allowance:
    """`--allow-mcp`, `--allow-mcp-tool` and the `mcp__` rules of `--allowedTools`."""
    from theus.mcp.allow import Allowance

    try:
        return Allowance.parse(
            bool(getattr(args, "allow_mcp", False)),
            (getattr(args, "allow_mcp_tool", None) or []) + rules.mcp_allowed,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _tool_rules(args: argparse.Namespace) -> ToolRules:
    try:
        mode = getattr(args, "permission_mode", None)
        if getattr(args, "dangerously_skip_permissions", False):
            if mode not in (None, "bypassPermissions"):
                raise ValueError(
                    f"--dangerously-skip-permissions is --permission-mode "
                    f"bypassPermissions, not {mode}: give one of them"
                )
            mode = "bypassPermissions"
        rules = ToolRules.parse(
            getattr(args, "allowed_tools", None), getattr(args, "disallowed_tools", None), mode
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if rules.mode == "plan" and (
        getattr(args, "allow_edits", False) or getattr(args, "allow_shell", False)
    ):
        raise UsageError(
            "--permission-mode plan changes nothing: drop --allow-edits and "
            "--allow-shell, or choose another mode"
        )
    return rules


def _given(args: argparse.Namespace) -> str:
    """The run's Claude Code rule flags as given, for a refusal's reason."""
    parts = [
        f"--disallowedTools {' '.join(args.disallowed_tools)}"
        if getattr(args, "disallowed_tools", None)
        else "",
        f"--permission-mode {args.permission_mode}"
        if getattr(args, "permission_mode", None)
        else "",
    ]
    return "; ".join(p for p in parts if p) or "none"


def _permission_mode(allow: dict[str, bool], mode: str) -> str:
    """Claude Code's name for what the flags allow: both is `bypassPermissions` (Theus still
    refuses protected paths and sandboxes the shell where it can), edits alone `acceptEdits`."""
    if mode == "plan":
        return mode
    if allow["edit"] and allow["shell"]:
        return "bypassPermissions"
    return "acceptEdits" if allow["edit"] else "default"
