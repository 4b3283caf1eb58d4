"""Read one file and turn it into an `Extract`, deciding what to skip and why.

Runs inside worker processes: plain functions, picklable results, never raises.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from dataclasses import dataclass

from knowledge.core.beneath import read_beneath
from knowledge.core.filetext import text_of
from knowledge.core.redact import redact
from knowledge.index.model import Extract

MAX_BYTES = 1_000_000
BINARY_PROBE = 8000
_MINIFIED_LINE = 2000  # a line this long in a source file is generated, not written
_MINIFIED_AVG = 300
# PEP 263 coding declaration on one of the first two lines.
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.MULTILINE)
_WORD = re.compile(r"[\w$]+")


@dataclass(slots=True)
class Analysed:
    rel: str
    size: int
    mtime_ns: int
    sha1: str
    status: str  # ok | partial | skipped
    reason: str
    extract: Extract | None  # None: no content indexed (file node only, or nothing at all)
    keep_node: bool = True  # False for binaries and unreadable files
    # The file's text as recall reads it (`filetext.text_of`), redacted ("" when it reads
    # none), for the content index to take instead of reading the file again; None: not read.
    text: str | None = None


def language_of(rel: str) -> str:
    from knowledge.index.extract import language_for

    return language_for(rel)


def analyse(root: str, rel: str, size: int, mtime_ns: int, data: bytes | None = None) -> Analysed:
    """`data`, when given, is the content already read (and hashed) by the caller."""
    if size > MAX_BYTES:
        return Analysed(rel, size, mtime_ns, "", "skipped", "too-large", None)
    if data is None:
        try:
            data = read_beneath(root, rel)
        except OSError:
            return Analysed(rel, size, mtime_ns, "", "skipped", "unreadable", None, False)
    sha1 = hashlib.sha1(data).hexdigest()
    if len(data) > MAX_BYTES:  # grew between stat and read
        return Analysed(rel, len(data), mtime_ns, sha1, "skipped", "too-large", None)
    text, reason = _decode(data)
    if text is None:
        return Analysed(rel, len(data), mtime_ns, sha1, "skipped", reason, None, False)
    if _minified(text):
        return Analysed(rel, len(data), mtime_ns, sha1, "skipped", "minified", None)
    from knowledge.index.extract import extract_file

    content = text.encode("utf-8") if reason == "utf-16" else data
    clean = redact(text)
    recalled = text_of(rel, data)
    if recalled is not None and recalled != text:  # another decoding than the index's
        recalled = redact(recalled)
    elif recalled is not None:
        recalled = clean
    try:
        # The file as written is parsed (a placeholder where a secret was can break its
        # syntax and lose every symbol); what the graph keeps of it is redacted.
        extract = _redacted(extract_file(rel, content), text, clean)
    except Exception as exc:  # an extractor bug must not lose the rest of the index
        return Analysed(
            rel,
            len(data),
            mtime_ns,
            sha1,
            "partial",
            f"extractor error: {type(exc).__name__}",
            Extract(language=language_of(rel), lines=text.count("\n") + 1),
            text=recalled or "",
        )
    why = extract.partial or (reason if reason == "invalid-utf8" else "")
    status = "partial" if why else "ok"
    return Analysed(rel, len(data), mtime_ns, sha1, status, why, extract, text=recalled or "")


def _redacted(extract: Extract, text: str, clean: str) -> Extract:
    """`extract` (of `text`) with every text it keeps redacted, and only the identifiers that
    `clean` (the redacted text) still holds: a piece of a key is no name."""
    if clean == text:
        return extract
    words = set(_WORD.findall(clean))
    extract.identifiers = {
        i for i in extract.identifiers if all(w in words for w in _WORD.findall(i))
    }
    extract.summary = redact(extract.summary)
    for symbol in extract.symbols:
        symbol.signature, symbol.doc = redact(symbol.signature), redact(symbol.doc)
    for found in extract.imports:
        found.module = redact(found.module)  # a URL import can carry a password
    for section in extract.sections:
        section.title, section.summary = redact(section.title), redact(section.summary)
    for table in extract.tables:
        table.summary = redact(table.summary)
        for column in table.columns:
            column.type = redact(column.type)
    return extract


def _decode(data: bytes) -> tuple[str | None, str]:
    """Text and a note; None when the file is binary."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            return None, "binary"
    if b"\x00" in data[:BINARY_PROBE]:
        return None, "binary"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        pass
    cookie = _COOKIE.search(data[:400])
    if cookie:
        try:
            return data.decode(cookie.group(1).decode("ascii")), ""
        except (LookupError, UnicodeDecodeError):
            pass
    return data.decode("utf-8", errors="replace"), "invalid-utf8"


def _minified(text: str) -> bool:
    head = text[:200_000]
    lines = head.count("\n") + 1
    longest = max((len(line) for line in head.split("\n", 200)[:200]), default=0)
    return longest > _MINIFIED_LINE and (len(head) / lines > _MINIFIED_AVG or lines < 5)
