"""What a model server sends is read within bounds (theus.model.bounds): one 64 MiB stream event
was accepted whole (338 MB of memory), a line that never ended grew the memory by 65 MB/s, and
a 200 body that was not UTF-8 ended the run in a traceback. Real servers (the scripted one),
the real openai client; memory measured in a child process, as VmHWM."""

from __future__ import annotations

import gzip
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from tests.conftest import write_tree
from tests.scripted_server import Reply, ScriptedServer, endless_line, huge_event
from tests.theus.conftest import model_settings
from tests.theus.test_headless import theus
from theus.model import MAX_ANSWER_CHARS, ModelClient, ModelError
from theus.model.bounds import MAX_BODY_BYTES, MAX_EVENT_BYTES, BoundedBody
from theus.model.errors import BodyCut, Unreadable

REPO = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024

CHILD = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from theus.config import ModelSettings
    from theus.model import ModelClient, ModelError

    async def main():
        client = ModelClient(ModelSettings(base_url=sys.argv[1], api_key="k", model="test-model",
                                           source="test", max_retries=0))
        try:
            answer = await client.complete([{"role": "user", "content": "talk"}])
            outcome = f"answered with {len(answer.text)} characters"
        except ModelError as exc:
            outcome = str(exc)
        await client.close()
        # VmHWM: this process's own peak resident memory
        status = Path("/proc/self/status").read_text()
        peak = next(line for line in status.splitlines() if line.startswith("VmHWM"))
        print(int(peak.split()[1]) // 1024)
        print(outcome)

    asyncio.run(main())
""")


def peak_and_outcome(reply: Reply) -> tuple[int, str]:
    """A child process's peak memory (MB) over one model call answered by `reply`, and the
    call's outcome: its answer's length or its error line."""
    with ScriptedServer([reply]) as server:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, server.url],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    peak, outcome = done.stdout.splitlines()
    return int(peak), outcome


@pytest.fixture(scope="module")
def baseline_mb() -> int:
    """The same child over a short answer: the interpreter, the SDK and Theus's imports."""
    peak, outcome = peak_and_outcome(huge_event(10))
    assert outcome == "answered with 10 characters"
    return peak


def test_one_huge_stream_event_is_refused_before_it_fills_the_memory(baseline_mb: int) -> None:
    peak, outcome = peak_and_outcome(huge_event(64 * MIB))
    assert "sent more than 8 MiB in one line: reading stopped there" in outcome
    # Accepted whole, the event cost 256 MB more than a short answer; cut at 8 MiB, 9 MB.
    assert peak - baseline_mb < 50, f"{peak} MB peak against {baseline_mb} MB for a short answer"


def test_a_line_that_never_ends_is_cut_at_its_bound(baseline_mb: int) -> None:
    peak, outcome = peak_and_outcome(endless_line(128 * MIB))
    assert "sent more than 8 MiB in one line: reading stopped there" in outcome
    assert peak - baseline_mb < 50, f"{peak} MB peak against {baseline_mb} MB for a short answer"


async def test_an_answer_in_one_event_is_cut_at_the_answer_bound_exactly() -> None:
    with ScriptedServer([huge_event(2 * MAX_ANSWER_CHARS)]) as server:
        client = ModelClient(model_settings(server.url))
        completion = await client.complete([{"role": "user", "content": "talk"}])
        await client.close()
    assert len(completion.text) == MAX_ANSWER_CHARS
    assert completion.finish_reason == "length"
    assert completion.cut == ("answer cut at 1,000,000 characters (Theus's bound on one answer)")


def test_a_body_that_is_not_utf8_is_one_error_line(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n"})
    garbage = b'data: {"choices": [{"delta": {"content": "\xff\xfe\x80"}}]}\n\n'
    with ScriptedServer([Reply(raw=garbage)]) as server:
        done = theus(["-p", "hello"], server, root, THEUS_NO_FACTS="1", THEUS_MAX_RETRIES="0")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("theus: error:")]
    assert errors == [
        f"theus: error: the model server at {server.url} sent a body that is not "
        "UTF-8 text: reading stopped there (check THEUS_BASE_URL points at an "
        "OpenAI-compatible /v1 endpoint, or see the server's log)"
    ]


async def test_a_compressed_body_is_refused_as_it_could_unpack_past_every_bound() -> None:
    bomb = gzip.compress(b"data: " + b"x" * (32 * MIB))  # 32 KiB on the wire
    with ScriptedServer([Reply(raw=bomb, headers={"Content-Encoding": "gzip"})]) as server:
        client = ModelClient(model_settings(server.url, max_retries=0))
        with pytest.raises(ModelError, match=r"sent a compressed body \(Content-Encoding: gzip"):
            await client.complete([{"role": "user", "content": "talk"}])
        await client.close()


class Pieces(httpx2.AsyncByteStream):
    """A transport's body, as the pieces it read."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


async def read(pieces: list[bytes]) -> int:
    """How many bytes of `pieces` a bounded body lets through."""
    return sum([len(piece) async for piece in BoundedBody(Pieces(pieces), utf8=True)])


async def test_events_are_counted_apart_whatever_their_line_ends() -> None:
    half = b"data: " + b"x" * (MAX_EVENT_BYTES // 2)
    # Events of half the bound each, ended by LF LF, CRLF CR, CR CR, or CRLF CRLF with each
    # CRLF split between two pieces: none is too large.
    pieces = [
        half + b"\n\n",
        half + b"\r\n\r",
        half + b"\r\r",
        half + b"\r",
        b"\n\r",
        b"\n",
        half + b"\n\n",
    ]
    assert await read(pieces) == sum(map(len, pieces))
    # An event of several lines is one event, bounded as a whole...
    with pytest.raises(Unreadable, match="more than 8 MiB in one event"):
        await read([half + b"\n", half + b"\n", half + b"\n\n"])
    # ...also when a CRLF ending one of its lines is split between two pieces.
    with pytest.raises(Unreadable, match="more than 8 MiB in one event"):
        await read([half + b"\r", b"\n" + half + b"\r", b"\n" + half + b"\r\n\r\n"])


async def test_a_stream_past_the_body_bound_is_cut() -> None:
    event = b"data: " + b"x" * MIB + b"\n\n"
    with pytest.raises(BodyCut, match="more than 64 MiB in one answer"):
        await read([event] * (MAX_BODY_BYTES // len(event) + 2))
