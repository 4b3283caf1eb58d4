"""The model server check behind `theus doctor`: its model list, a streamed reply, a tool call
and its result sent back, usage and context size, each reported as one line."""

from __future__ import annotations

import asyncio
import time
from typing import Any, TextIO

from theus.config import AgentSettings, ModelSettings

PING_TOOL = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Answers pong. Call it when asked to ping.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
}
# A check's own bound: a server this slow answers nothing useful to an agent either.
CHECK_TIMEOUT_S = 120.0


class _Report:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.failed = False

    def line(self, status: str, what: str) -> None:
        self.out.write(f"  {status:<5} {what}\n")
        self.out.flush()
        self.failed |= status == "fail"


async def check(settings: ModelSettings, out: TextIO) -> int:
    from theus.model import ModelClient, ModelError, capabilities

    capabilities.forget(settings.base_url, settings.model)  # learn it all again, here
    client = ModelClient(settings)
    report = _Report(out)
    out.write(f"theus doctor: {settings.base_url} ({settings.source}), model {settings.model}\n")
    try:
        await _models(client, settings.model, report)
        started = time.monotonic()
        try:
            reply = await _bounded(
                client.complete([{"role": "user", "content": "Reply with the single word: ready"}])
            )
        except ModelError as exc:
            report.line("fail", f"streamed reply: {exc}")
            return 1
        report.line(
            "ok",
            f"streamed reply in {time.monotonic() - started:.1f}s: "
            f"{_clip(reply.text)!r} (finish_reason {reply.finish_reason})",
        )
        await _tools(client, report)
        await client.discover_context()
        _usage_and_context(client, report)
    finally:
        await client.close()
    _workarounds(client, out)
    return 1 if report.failed else 0


async def _bounded(call: Any) -> Any:
    from theus.model import ModelError

    try:
        return await asyncio.wait_for(call, CHECK_TIMEOUT_S)
    except TimeoutError:
        raise ModelError(f"no answer within {CHECK_TIMEOUT_S:g}s", kind="timeout") from None


async def _models(client: Any, model: str, report: _Report) -> None:
    from theus.model import ModelError

    try:
        models = await _bounded(client.list_models())
    except ModelError as exc:
        report.line("warn", f"models: the server lists none ({exc})")
        return
    listed = "listed" if model in models else f"not among the {len(models)} listed"
    report.line(
        "ok" if model in models else "warn",
        f"models: {model} {listed}" + ("" if model in models else f" ({', '.join(models[:5])})"),
    )


async def _tools(client: Any, report: _Report) -> None:
    """A tool step as the agent takes it (streamed, or not where the server cannot), then
    the tool's result sent back the way the agent sends it."""
    from theus.model import ModelError

    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You can call tools. When asked to ping, call `ping`."},
        {"role": "user", "content": "Ping with the text 'hello'."},
    ]
    try:
        step = await _bounded(client.complete(messages, [PING_TOOL]))
    except ModelError as exc:
        report.line("fail", f"tool call: {exc}")
        return
    how = "non-streaming" if client.caps.streams_tool_calls is False else "streamed"
    if not step.tool_calls:
        report.line(
            "warn",
            f"tool call ({how}): the model answered without calling the tool "
            f"({_clip(step.text)!r}); a small model may not use tools",
        )
        return
    call = step.tool_calls[0]
    report.line("ok", f"tool call ({how}): {call.name}({_clip(call.arguments)})")
    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in step.tool_calls
            ],
        }
    )
    messages += [{"role": "tool", "tool_call_id": c.id, "content": "pong"} for c in step.tool_calls]
    try:
        after = await _bounded(client.complete(messages, [PING_TOOL]))
    except ModelError as exc:
        report.line("fail", f"tool result sent back: {exc}")
        return
    report.line(
        "ok",
        f"tool result sent back: answered {_clip(after.text)!r}"
        + (f", then called {after.tool_calls[0].name} again" if after.tool_calls else ""),
    )


def _usage_and_context(client: Any, report: _Report) -> None:
    from theus.model import limits

    caps = client.caps
    report.line(
        "ok" if caps.reports_usage else "warn",
        "usage: reported by the server"
        if caps.reports_usage
        else "usage: not reported in streams; Theus estimates it (marked estimated in JSON output)",
    )
    if caps.context_tokens and caps.context_source != limits.NOT_STATED:
        report.line("ok", f"context: {caps.context_tokens:,} tokens ({caps.context_source})")
    else:
        setting = AgentSettings.from_settings().context_tokens
        report.line(
            "warn",
            f"context: the server does not state it; Theus assumes "
            f"THEUS_CONTEXT_TOKENS={setting:,} until an overflow names it",
        )


def _workarounds(client: Any, out: TextIO) -> None:
    caps = client.caps
    notes = [
        note
        for on, note in (
            (
                caps.streams_tool_calls is False,
                "tool steps use non-streaming requests (the server cannot stream tool calls)",
            ),
            (not caps.stream_options, "no stream_options is sent (the server refused it)"),
            (caps.reports_usage is False, "token usage is estimated (the server reports none)"),
            (not caps.tool_choice, "no tool_choice is sent (the server refused it)"),
            (
                caps.max_tokens_param != "max_tokens",
                f"the output limit goes in {caps.max_tokens_param or 'no parameter'}",
            ),
            (
                caps.max_output_cap is not None,
                f"output is capped at {caps.max_output_cap} tokens (the server's limit)",
            ),
        )
        if on
    ]
    out.write(
        "Theus will work around:\n" + "".join(f"  - {n}\n" for n in notes)
        if notes
        else "Theus needs no work-arounds for this server.\n"
    )
    out.write("(learned from these answers; runs reuse it for a day)\n")


def _clip(text: str, size: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 1] + "…"
