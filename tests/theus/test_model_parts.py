"""The model client's pure parts: answer assembly from chunks, and the retry policy."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from theus.model.answer import StreamedAnswer, whole_answer
from theus.model.bounds import MAX_ANSWER_CHARS
from theus.model.retry import MAX_DELAY_S, delay_s, may_retry, retry_after_s


def chunk(
    content: str | None = None,
    calls: list[dict[str, Any]] | None = None,
    finish: str | None = None,
    usage: dict[str, int] | None = None,
) -> ChatCompletionChunk:
    delta: dict[str, Any] = {"content": content}
    if calls is not None:
        delta["tool_calls"] = calls
    choices = [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return ChatCompletionChunk.model_validate(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": choices,
            "usage": usage,
        }
    )


def test_text_and_tool_calls_in_pieces_add_up_in_index_order() -> None:
    shown: list[str] = []
    answer = StreamedAnswer(shown.append)
    pieces = [
        chunk("Let me "),
        chunk("look."),
        chunk(calls=[{"index": 1, "id": "b", "function": {"name": "grep", "arguments": '{"p'}}]),
        chunk(calls=[{"index": 0, "id": "a", "function": {"name": "read", "arguments": "{}"}}]),
        chunk(calls=[{"index": 1, "function": {"arguments": 'attern": "x"}'}}]),
        chunk(finish="tool_calls"),
        chunk(usage={"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}),
    ]
    assert all(answer.add(p) for p in pieces)
    result = answer.completion()
    assert shown == ["Let me ", "look."] and result.text == "Let me look."
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("a", "read", "{}"),
        ("b", "grep", '{"pattern": "x"}'),
    ]
    assert result.finish_reason == "tool_calls" and answer.usage_seen
    assert (result.prompt_tokens, result.completion_tokens) == (12, 7)


def test_an_answer_past_the_bound_is_cut_there_and_marked() -> None:
    answer = StreamedAnswer(lambda _: None)
    assert answer.add(chunk("x" * (MAX_ANSWER_CHARS - 10)))
    assert not answer.add(chunk("y" * 50))
    result = answer.completion()
    assert len(result.text) == MAX_ANSWER_CHARS and result.finish_reason == "length"
    assert result.cut is not None and "bound on one answer" in result.cut


def test_nothing_arrived_is_not_started_and_a_missing_id_gets_one() -> None:
    answer = StreamedAnswer(lambda _: None)
    assert not answer.started
    answer.add(chunk(calls=[{"index": 0, "function": {"name": "list", "arguments": "{}"}}]))
    assert answer.started and answer.completion().tool_calls[0].id == "call_0"


def test_a_whole_reply_is_read_with_its_function_calls() -> None:
    reply = ChatCompletion.model_validate(
        {
            "id": "r",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "",
                                "type": "function",
                                "function": {"name": "read", "arguments": ""},
                            }
                        ],
                    },
                }
            ],
        }
    )
    result = whole_answer(reply)
    assert result is not None and result.text == ""
    assert [(c.id, c.name) for c in result.tool_calls] == [("call_0", "read")]
    empty = ChatCompletion.model_validate({**reply.model_dump(), "choices": []})
    assert whole_answer(empty) is None


def status_error(code: int, headers: dict[str, str]) -> openai.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx2.Response(code, headers=headers, request=request)
    return openai.APIStatusError("failed", response=response, body=None)


def test_only_transient_kinds_are_retried_and_never_after_text_or_past_the_count() -> None:
    ok: dict[str, Any] = {"transient": True, "emitted": False, "attempt": 0, "most": 4}
    assert all(may_retry(k, **ok) for k in ("rate_limit", "server", "network", "timeout"))
    assert not may_retry("auth", **ok) and not may_retry("request", **ok)
    assert not may_retry("server", **{**ok, "transient": False})
    assert not may_retry("server", **{**ok, "emitted": True})
    assert not may_retry("server", **{**ok, "attempt": 4})


def test_backoff_doubles_honours_retry_after_and_is_capped() -> None:
    plain = ValueError("x")
    assert [delay_s(a, 0.5, plain, jitter=1.0) for a in range(3)] == [0.5, 1.0, 2.0]
    assert delay_s(0, 0.5, plain, jitter=0.0) == 0.25  # half, at the least jitter
    assert retry_after_s(status_error(429, {"retry-after": "7"})) == 7.0
    assert delay_s(0, 0.5, status_error(429, {"retry-after": "7"}), jitter=1.0) == 7.0
    assert retry_after_s(status_error(429, {"retry-after": "soon"})) is None
    assert delay_s(10, 0.5, plain, jitter=1.0) == MAX_DELAY_S
