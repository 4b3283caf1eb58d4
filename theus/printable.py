"""Text from the model or from files, made safe for a terminal.

A reply or a file may carry escape sequences that act on the terminal instead of being shown:
OSC 52 writes the clipboard, `ESC [2J` clears the screen, a hyperlink hides its target, a
carriage return overwrites the line, bidirectional overrides reorder what the user reads.
`printable` drops every sequence and control character except newline and tab, before the
headless text mode prints, before a command prints (`theus.service.command_line.out`), before a
log line reaches stderr (`PrintableFormatter`) and before the app renders. JSON keeps the text
as it came, with those characters escaped (`escape_controls`).
"""

from __future__ import annotations

import logging
import re

from knowledge.core.redact import redact

_SEQUENCES = re.compile(
    # Strings end at BEL or ST; one left open ends at the line's end here, not the text's.
    r"\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"  # OSC (clipboard, title, hyperlinks)
    r"|\x1b[P^_X][^\x1b\n]*(?:\x1b\\)?"  # DCS, PM, APC, SOS strings
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (cursor, erase, colours)
    r"|\x1b[ -/]*[0-~]?"  # the other escapes, or a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
# C0 and C1 controls but tab and newline; bidirectional embeddings, overrides and isolates.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    if text.isprintable():  # the common case costs one scan
        return text
    text = text.replace("\r\n", "\n")
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))


def escape_controls(json_text: str) -> str:
    """JSON text (`json.dumps(..., ensure_ascii=False)`) with the controls it leaves raw (DEL,
    C1, bidirectional overrides) written as `\\u` escapes: the same strings to a parser,
    nothing that acts on a terminal showing them. Outside strings JSON is ASCII without them."""
    if json_text.isprintable():
        return json_text
    return _CONTROLS.sub(lambda m: f"\\u{ord(m[0]):04x}", json_text)


class PrintableFormatter(logging.Formatter):
    """Log lines for a terminal or a log file: what a message quotes (a server's error body, a
    file name) cannot act on a terminal, nor carry a secret (`knowledge.core.redact`)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(redact(super().format(record)))


def printable_last_resort() -> None:
    """Warnings of a process that set no handler (a one-shot command) reach stderr through
    Python's last-resort handler: through `printable` too."""
    if logging.lastResort is not None:
        logging.lastResort.setFormatter(PrintableFormatter())


_COMPLETE = re.compile(
    r"\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\|(?=\n))|\x1b[P^_X][^\x1b\n]*(?:\x1b\\|(?=\n))"
    r"|\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b[ -/]*[0-OQ-WYZ\\`-~]|\x9b[0-?]*[ -/]*[@-~]"
)  # not the openers [ ] P X ^ _
HOLD = 4096  # a sequence still open after this many characters is dropped, not waited for


class PrintableStream:
    """`printable` for text that arrives in pieces (a streamed reply): a sequence cut between
    two pieces is held back until it is complete, so no half of it is shown."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        cut = _open_tail(text)
        self._held = text[cut:] if len(text) - cut <= HOLD else ""
        return printable(text[:cut])

    def end(self) -> str:
        held, self._held = self._held, ""
        return printable(held)


def _open_tail(text: str) -> int:
    """Where an unfinished escape sequence (or a carriage return that may precede a
    newline) starts at the end of `text`; len(text) when there is none."""
    start = max(text.rfind("\x1b"), text.rfind("\x9b"))
    if start >= 0 and _COMPLETE.match(text, start) is None:
        return start
    return len(text) - 1 if text.endswith("\r") else len(text)
