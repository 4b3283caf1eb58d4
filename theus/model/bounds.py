"""How much a model server may send, and the response hook that holds every body to it.

The openai SDK keeps what a server streams until a line, then an event, ends, with no limit:
one 64 MiB event cost 338 MB, and a line that never ended grew the memory by 65 MB/s. Every
response of the model client is read through `BoundedBody`, which counts its bytes in all, in
the line and in the event not yet ended, checks that a 2xx body is UTF-8, and fails with
`Unreadable` (or `BodyCut`, past the body bound) before the SDK buffers more.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncIterator

import httpx2
import openai

from theus.model.errors import BodyCut, Unreadable

# An answer's text and tool-call arguments are cut here: about 250k tokens, past any real
# reply, and what a session file keeps of one answer at most.
MAX_ANSWER_CHARS = 1_000_000
# One stream event, and so each of its lines: room for a whole MAX_ANSWER_CHARS answer sent in
# one event as JSON (a character escaped as \uXXXX is 6 bytes). A non-streamed reply is one.
MAX_EVENT_BYTES = 8 * 1024 * 1024
# One response body: room for a MAX_ANSWER_CHARS answer streamed a token an event (about 250
# bytes of JSON each). A stream is cut here as a too-long answer; a whole reply fails.
MAX_BODY_BYTES = 64 * 1024 * 1024
# Servers are asked for plain bodies: a compressed one could unpack past every bound above.
PLAIN_BODY = {"Accept-Encoding": "identity"}

_LINE_END = re.compile(rb"\r\n?|\n")  # as the SSE format has them: CRLF, CR or LF
_MIB = 1024 * 1024


class BoundedBody(httpx2.AsyncByteStream):
    """A response body that fails once it passes a bound. Checked after each piece the
    transport reads (at most 64 KiB), so a bound is passed by at most one piece."""

    def __init__(self, inner: httpx2.AsyncByteStream, utf8: bool) -> None:
        self._inner = inner
        self._utf8 = codecs.getincrementaldecoder("utf-8")() if utf8 else None
        self.total = 0
        self.line = 0  # bytes of the line not yet ended
        self.event = 0  # bytes of the event not yet ended (a blank line ends one)
        self._cr = False  # the last piece ended with CR: an LF first in the next completes it

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in self._inner:
            self.feed(piece)
            yield piece
        self._check_utf8(b"", final=True)  # no character left unfinished at the end

    async def aclose(self) -> None:
        await self._inner.aclose()

    def feed(self, piece: bytes) -> None:
        self._check_utf8(piece)
        self.total += len(piece)
        start = 0
        for end in _LINE_END.finditer(piece):
            if end.start() == 0 and self._cr and end.group() == b"\n":
                start = 1  # the LF of a CRLF split between two pieces
                continue
            part = end.start() - start
            self.event = 0 if self.line + part == 0 else self.event + part
            self.line = 0
            start = end.end()
        self._cr = piece.endswith(b"\r")
        self.line += len(piece) - start
        self.event += len(piece) - start
        if self.line > MAX_EVENT_BYTES:
            raise Unreadable(f"sent more than {MAX_EVENT_BYTES // _MIB} MiB in one line")
        if self.event > MAX_EVENT_BYTES:
            raise Unreadable(f"sent more than {MAX_EVENT_BYTES // _MIB} MiB in one event")
        if self.total > MAX_BODY_BYTES:
            raise BodyCut(f"sent more than {MAX_BODY_BYTES // _MIB} MiB in one answer")

    def _check_utf8(self, piece: bytes, final: bool = False) -> None:
        if self._utf8 is None:
            return
        try:
            self._utf8.decode(piece, final)
        except UnicodeDecodeError:
            raise Unreadable("sent a body that is not UTF-8 text") from None


async def bound_response(response: httpx2.Response) -> None:
    """httpx response hook: the body is read through `BoundedBody`; a compressed one (asked
    for none) is refused before any of it is read."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise Unreadable(
            f"sent a compressed body (Content-Encoding: {encoding[:40]}) though "
            "asked for a plain one; its size could not be bounded"
        )
    if isinstance(response.stream, httpx2.AsyncByteStream):
        response.stream = BoundedBody(response.stream, utf8=response.is_success)


def bounded_client(timeout: float, headers: dict[str, str] | None = None) -> httpx2.AsyncClient:
    """The openai SDK's default HTTP client (its pool limits, redirects), with every body
    bounded and plain bodies asked for."""
    return openai.DefaultAsyncHttpxClient(
        timeout=timeout,
        event_hooks={"response": [bound_response]},
        headers={**PLAIN_BODY, **(headers or {})},
    )
