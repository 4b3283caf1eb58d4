"""`theus doctor` against scripted servers: what works, what Theus works around, exit codes."""

from __future__ import annotations

import io

import pytest

from entrypoint.cli import main
from tests.conftest import closed_port
from tests.scripted_server import Quirks, ScriptedServer, text, tool
from tests.theus.conftest import model_settings
from theus.model.doctor import check


async def test_a_llama_cpp_like_server_works_with_work_arounds() -> None:
    script = [text("ready"), tool("ping", {"text": "hello"}), text("pong received")]
    quirks = Quirks(
        no_streamed_tools=True, ignores_stream_options=True, strict_messages=True, props_n_ctx=4096
    )
    with ScriptedServer(script, quirks=quirks) as server:
        out = io.StringIO()
        assert await check(model_settings(server.url), out) == 0
    report = out.getvalue()
    assert "ok    models: test-model listed" in report
    assert "ok    streamed reply" in report and "'ready'" in report
    assert 'ok    tool call (non-streaming): ping({"text": "hello"})' in report
    assert "ok    tool result sent back: answered 'pong received'" in report
    assert "ok    context: 4,096 tokens (llama.cpp /props)" in report
    assert "warn  usage: not reported" in report
    workarounds = report.split("Theus will work around:\n")[1]
    assert "non-streaming requests" in workarounds and "usage is estimated" in workarounds


async def test_a_plain_openai_compatible_server_needs_nothing() -> None:
    script = [text("ready"), tool("ping", {"text": "hello"}), text("pong")]
    with ScriptedServer(script) as server:
        out = io.StringIO()
        assert await check(model_settings(server.url), out) == 0
    assert "tool call (streamed)" in out.getvalue()
    assert "Theus needs no work-arounds for this server." in out.getvalue()


async def test_an_unreachable_server_fails_with_the_real_cause() -> None:
    port = closed_port()
    out = io.StringIO()
    assert await check(model_settings(f"http://127.0.0.1:{port}/v1", max_retries=0), out) == 1
    assert "fail  streamed reply: cannot reach the model server" in out.getvalue()


def test_without_a_model_it_says_what_to_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 2
    assert "THEUS_MODEL" in capsys.readouterr().err
