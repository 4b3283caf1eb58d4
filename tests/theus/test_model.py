"""The model client against the scripted server: retries, and one clear line per failure."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest
from openai.types.chat import ChatCompletionMessageFunctionToolCall, ChatCompletionMessageParam

from tests.conftest import closed_port
from tests.scripted_server import Reply, ScriptedServer, error, text, tool
from tests.theus.conftest import model_settings
from theus.model import ModelClient, ModelError

MESSAGES = [{"role": "user", "content": "hi"}]


async def test_streams_text_and_tool_calls() -> None:
    with ScriptedServer([text("hello there, streamed"), tool("read", {"path": "a.py"})]) as server:
        client = ModelClient(model_settings(server.url))
        pieces: list[str] = []
        first = await client.complete(MESSAGES, on_text=pieces.append)
        assert first.text == "hello there, streamed" and len(pieces) > 1
        assert first.prompt_tokens > 0 and first.finish_reason == "stop"
        second = await client.complete(MESSAGES)
        assert [(c.name, c.arguments) for c in second.tool_calls] == [("read", '{"path": "a.py"}')]


async def test_retries_429_and_5xx_then_succeeds() -> None:
    with ScriptedServer([error(429), error(502), error(500), text("ok")]) as server:
        client = ModelClient(model_settings(server.url))
        assert (await client.complete(MESSAGES)).text == "ok"
        assert len(server.requests) == 4


async def test_gives_up_after_the_retries() -> None:
    with ScriptedServer([error(503, "overloaded", repeat=True)]) as server:
        client = ModelClient(model_settings(server.url, max_retries=2))
        with pytest.raises(ModelError) as info:
            await client.complete(MESSAGES)
        assert info.value.kind == "server" and "failed (503): overloaded" in str(info.value)
        assert len(server.requests) == 3


async def test_wrong_key_is_one_clear_line_without_retrying() -> None:
    with ScriptedServer([text("never")], api_key="right") as server:
        client = ModelClient(model_settings(server.url, api_key="wrong"))
        with pytest.raises(ModelError) as info:
            await client.complete(MESSAGES)
        message = str(info.value)
        assert info.value.kind == "auth" and "\n" not in message
        assert "rejected the API key (401)" in message and "THEUS_API_KEY" in message
        assert "wrong" not in message  # the key itself is never echoed


async def test_unknown_model_names_the_model() -> None:
    with ScriptedServer([text("never")]) as server:
        client = ModelClient(model_settings(server.url, model="gpt-nope"))
        with pytest.raises(ModelError) as info:
            await client.complete(MESSAGES)
        assert info.value.kind == "model"
        assert "model 'gpt-nope' not found" in str(info.value) and "THEUS_MODEL" in str(info.value)


async def test_unreachable_server_is_one_clear_line() -> None:
    port = closed_port()
    client = ModelClient(model_settings(f"http://127.0.0.1:{port}/v1", max_retries=1))
    with pytest.raises(ModelError) as info:
        await client.complete(MESSAGES)
    assert info.value.kind == "network"
    assert f"cannot reach the model server at http://127.0.0.1:{port}/v1" in str(info.value)


async def test_a_slow_server_times_out() -> None:
    with ScriptedServer([text("late", delay_s=2.0, repeat=True)]) as server:
        client = ModelClient(model_settings(server.url, timeout_s=0.3, max_retries=0))
        with pytest.raises(ModelError) as info:
            await client.complete(MESSAGES)
        assert info.value.kind == "timeout" and "THEUS_TIMEOUT" in str(info.value)


async def test_a_stream_that_goes_silent_fails_after_the_idle_timeout() -> None:
    with ScriptedServer(
        [text("a long answer that stops", stall_after=2, stall_s=120.0)], chunk_chars=4
    ) as server:
        client = ModelClient(model_settings(server.url, idle_timeout_s=0.3, max_retries=3))
        pieces: list[str] = []
        start = time.monotonic()
        with pytest.raises(ModelError) as info:
            await client.complete(MESSAGES, on_text=pieces.append)
        assert time.monotonic() - start < 60.0  # not the 120 s stall
        assert info.value.kind == "timeout"
        assert "sent nothing for 0.3s mid-answer (THEUS_IDLE_TIMEOUT)" in str(info.value)
        assert pieces and len(server.requests) == 1  # text was shown: never retried


async def test_retries_stop_at_the_deadline_and_say_how_long_they_took() -> None:
    with ScriptedServer([error(503, "overloaded", repeat=True)]) as server:
        client = ModelClient(
            model_settings(server.url, max_retries=50, retry_base_s=0.2, retry_deadline_s=1.0)
        )
        start = time.monotonic()
        with pytest.raises(ModelError) as info:
            await client.complete(MESSAGES)
        assert time.monotonic() - start < 30.0  # 50 retries without the deadline: minutes
        assert "THEUS_RETRY_DEADLINE" in str(info.value)
        assert f"gave up after {len(server.requests)} attempts" in str(info.value)


async def test_a_server_that_never_answers_is_bounded_by_the_deadline() -> None:
    with ScriptedServer([text("never", delay_s=300.0, repeat=True)]) as server:
        client = ModelClient(model_settings(server.url, timeout_s=120.0, retry_deadline_s=2.0))
        start = time.monotonic()
        with pytest.raises(ModelError) as info:
            await client.complete(MESSAGES)
        assert time.monotonic() - start < 120.0  # not the 300 s delay
        assert info.value.kind == "timeout" and "did not start answering" in str(info.value)


async def test_non_streaming_endpoint_and_models_list() -> None:
    import openai

    with ScriptedServer([tool("grep", {"pattern": "x"})], models=["m1", "m2"]) as server:
        client = openai.AsyncOpenAI(base_url=server.url, api_key="k", max_retries=0)
        models = await client.models.list()
        assert [m.id for m in models.data] == ["m1", "m2"]
        asked = cast("list[ChatCompletionMessageParam]", MESSAGES)
        reply = await client.chat.completions.create(model="m1", messages=asked)
        calls = reply.choices[0].message.tool_calls
        assert calls is not None
        call = calls[0]
        assert isinstance(call, ChatCompletionMessageFunctionToolCall)
        assert call.function.name == "grep" and reply.choices[0].finish_reason == "tool_calls"
        assert server.requests[0]["model"] == "m1"


async def test_a_server_without_stream_options_still_works() -> None:
    def picky(body: dict[str, Any]) -> Reply:
        if "stream_options" in body:
            return error(400, "Unrecognized request argument supplied: stream_options", repeat=True)
        return text("fine", repeat=True)

    with ScriptedServer([picky]) as server:
        client = ModelClient(model_settings(server.url))
        assert (await client.complete(MESSAGES)).text == "fine"
        assert (await client.complete(MESSAGES)).text == "fine"
        assert ["stream_options" in r for r in server.requests] == [True, False, False]
