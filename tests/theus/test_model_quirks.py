"""The model client against servers with real local servers' quirks (llama.cpp,
llama-cpp-python, vLLM), through the real openai client and streaming path."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.scripted_server import Quirks, ScriptedServer, error, text, tool
from tests.theus.conftest import model_settings
from theus.model import ModelClient, ModelError, limits

MESSAGES = [{"role": "user", "content": "hi"}]
READ = {
    "type": "function",
    "function": {
        "name": "read",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


async def test_content_null_is_never_sent_to_a_strict_server() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "look"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
        {"role": "assistant", "content": None},  # an empty answer in an old session
        {"role": "user", "content": "and now?"},
    ]
    with ScriptedServer([text("fine")], quirks=Quirks(strict_messages=True)) as server:
        client = ModelClient(model_settings(server.url))
        assert (await client.complete(history, [READ])).text == "fine"
        sent = server.requests[0]["messages"]
        assert [m["content"] for m in sent if m["role"] == "assistant"] == ["", ""]
        assert history[1]["content"] is None  # the conversation itself is left as it was


async def test_a_500_validation_error_is_not_retried() -> None:
    # llama-cpp-python's answer to a message it does not accept, as a 500.
    refusal = error(
        500,
        "1 validation error: {'type': 'string_type', 'loc': ('body', "
        "'messages', 1, 'content'), 'msg': 'Input should be a valid string'}",
    )
    with ScriptedServer([refusal, text("never")]) as server:
        client = ModelClient(model_settings(server.url, max_retries=4))
        with pytest.raises(ModelError) as info:
            await client.complete(MESSAGES)
        assert info.value.kind == "validation" and len(server.requests) == 1
        assert "refused the request as invalid (500)" in str(info.value)


async def test_tool_steps_fall_back_to_non_streaming_once_learned(theus_home: Path) -> None:
    script = [tool("read", {"path": "a.py"}), tool("read", {"path": "b.py"})]
    with ScriptedServer(script, quirks=Quirks(no_streamed_tools=True)) as server:
        client = ModelClient(model_settings(server.url))
        first = await client.complete(MESSAGES, [READ])
        assert [c.arguments for c in first.tool_calls] == ['{"path": "a.py"}']
        assert len(first.notices) == 1 and "cannot stream tool calls" in first.notices[0]
        second = await client.complete(MESSAGES, [READ])
        assert second.tool_calls and second.notices == []  # said once
        assert [r.get("stream", False) for r in server.requests] == [True, False, False]
        assert {r["tool_choice"] for r in server.requests} == {"auto"}
        # What was learned is kept for the next run (another process reads this file).
        saved = json.loads((theus_home / "servers.json").read_text())
        assert [v["streams_tool_calls"] for v in saved.values()] == [False]


async def test_a_server_that_ignores_stream_options_gets_estimated_usage() -> None:
    with ScriptedServer(
        [text("an answer of some length")], quirks=Quirks(ignores_stream_options=True)
    ) as server:
        client = ModelClient(model_settings(server.url))
        reply = await client.complete(MESSAGES)
        assert reply.usage_estimated and reply.prompt_tokens > 0 and reply.completion_tokens > 0
        assert client.caps.reports_usage is False


async def test_an_empty_200_stream_is_one_clear_error_not_retried() -> None:
    with ScriptedServer([text("", empty=True, repeat=True)]) as server:
        client = ModelClient(model_settings(server.url, max_retries=3))
        with pytest.raises(ModelError) as info:
            await client.complete(MESSAGES)
        assert "ended the stream without an answer (no finish_reason)" in str(info.value)
        assert len(server.requests) == 1


async def test_a_length_finish_is_reported() -> None:
    with ScriptedServer([text("cut mid-sen", finish="length", completion_tokens=7)]) as server:
        client = ModelClient(model_settings(server.url, max_output_tokens=7))
        reply = await client.complete(MESSAGES)
        assert reply.finish_reason == "length" and reply.completion_tokens == 7
        assert server.requests[0]["max_tokens"] == 7


async def test_a_dropped_stream_keeps_the_partial_answer() -> None:
    with ScriptedServer(
        [text("the first part of a long answer", drop_after=3)], chunk_chars=4
    ) as server:
        client = ModelClient(model_settings(server.url))
        with pytest.raises(ModelError) as info:
            await client.complete(MESSAGES)
        assert info.value.kind == "dropped" and info.value.partial == "the firs"
        assert "dropped the connection mid-answer" in str(info.value)
        assert "THEUS_BASE_URL" not in str(info.value)  # not "cannot reach"


async def test_a_stream_that_keeps_sending_stops_at_the_deadline() -> None:
    with ScriptedServer(
        [text("a b c d e f g h", stall_after=3, stall_s=3.0)], chunk_chars=2
    ) as server:
        client = ModelClient(model_settings(server.url, idle_timeout_s=30.0))
        with pytest.raises(ModelError) as info:
            await client.complete(MESSAGES, deadline=time.monotonic() + 0.5)
        assert info.value.kind == "deadline" and info.value.partial == "a b "
        assert "THEUS_TURN_DEADLINE" in str(info.value)


async def test_the_context_size_is_read_from_props_and_an_overflow_names_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What is tested is how the answer is used: a loaded machine (CI) once took the probes
    # past their 2 s bound, and the client rightly went on without them.
    monkeypatch.setattr(limits, "DISCOVERY_TIMEOUT_S", 30.0)
    with ScriptedServer([text("one"), text("two")], quirks=Quirks(props_n_ctx=4096)) as server:
        client = ModelClient(model_settings(server.url))
        await client.complete(MESSAGES)  # the first request does not wait for /props
        assert server.requests[0]["max_tokens"] == 8192
        await client.complete(MESSAGES)
        assert (client.context_tokens, client.caps.context_source) == (4096, "llama.cpp /props")
        # The output room now fits the context: max_tokens shrinks to what is left of it.
        assert server.requests[1]["max_tokens"] < 4096
    big = [{"role": "user", "content": "word " * 400}]
    with ScriptedServer([text("fits")], quirks=Quirks(context_tokens=300)) as server:
        client = ModelClient(model_settings(server.url))
        with pytest.raises(ModelError) as info:
            await client.complete(big)
        assert info.value.kind == "context" and info.value.context_tokens == 300
        assert "THEUS_MODEL" not in str(info.value) and client.context_tokens == 300
        # The server's count of the refused prompt calibrates the estimate to it.
        counted = len(json.dumps(big) + json.dumps([])) // 4
        assert abs(client.estimate_tokens(big) - counted) <= 2


def test_the_limits_come_from_the_settings() -> None:
    from tests.conftest import from_env
    from theus.config import AgentSettings, load_model_settings

    env = {"THEUS_BASE_URL": "http://127.0.0.1:9/v1", "THEUS_MODEL": "m"}
    model = load_model_settings(from_env(env))
    assert model is not None and model.max_output_tokens == 8192
    limited = from_env({**env, "THEUS_MAX_OUTPUT_TOKENS": "512", "THEUS_TURN_DEADLINE": "60"})
    model = load_model_settings(limited)
    assert model is not None and model.max_output_tokens == 512
    assert AgentSettings.from_settings(limited).turn_deadline_s == 60.0
