"""Terms for recall: identifiers split into words, plurals folded, noise dropped.

No stemmer: it would turn identifiers into nonsense (``status`` -> ``statu``). Instead a cheap
singular/plural fold (tools ~ tool, entries ~ entry, classes ~ class) plus a looser *stem* used
only as a weaker second match (parsing ~ parse ~ parser), so the exact word always wins.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import numpy as np

# Runs of letters/digits; camelCase and acronyms are split afterwards.
_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

# Words that carry no topic in a request or a docstring. Kept small on purpose: identifiers
# such as "get", "set", "type" or "file" stay, since IDF already weighs them down.
_STOPWORDS_TEXT = """
a an and are as at be been but by can could did do does doing done for from had has
have how i if in into is it its it's me my no not of on or our out over please so some
such than that the their them then there these they this those to too up us via was we
were what when where which while who why will with would you your yours also all any
each just more most only other own same should shall may might must very s t d ll m o re
ve y e g eg ie etc vs use used using make makes made instead now new still
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())

_NO_FOLD = ("ss", "us", "is", "ous", "ics", "sis", "xis")


def split_words(text: str) -> list[str]:
    """Lower-case words of ``text``: ``parseHTTPHeaders_v2`` -> parse, http, headers, v, 2."""
    out: list[str] = []
    for run in _WORD.findall(text):
        out.extend(_run_words(run))
    return out


# A project's identifiers repeat: each run of letters and digits is split (and its terms
# folded) once, not at every occurrence; that was most of the content index's build.
@lru_cache(maxsize=1 << 17)
def _run_words(run: str) -> tuple[str, ...]:
    if run.islower() or run.isupper() or run.isdigit():
        return (run.lower(),)
    return tuple(p.lower() for p in _CAMEL.findall(run))


@lru_cache(maxsize=1 << 17)
def run_terms(run: str) -> tuple[str, ...]:
    """The terms of one run of letters and digits (`terms` of it)."""
    return tuple(fold(w) for w in _run_words(run) if w not in STOPWORDS and len(w) > 1)


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """Singular form by a few safe suffix rules: entries->entry, classes->class, tools->tool."""
    n = len(word)
    if n <= 3 or word.isdigit():
        return word
    if word.endswith("ies") and n > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(_NO_FOLD):
        return word[:-1]
    return word


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A loose key shared by word forms (parse, parser, parsing, parsed -> pars).

    Only used for a weaker secondary match; never to build keys or identifiers.
    """
    w = fold(word)
    for suffix in ("ations", "ation", "ings", "ing", "ers", "er", "ed", "es", "e", "ly", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            w = w[: -len(suffix)]
            break
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # running -> run(n), mapped -> map(p)
    return w


def terms(text: str) -> list[str]:
    """Folded words worth matching, in order, duplicates kept (for term frequency)."""
    return [term for run in _WORD.findall(text) for term in run_terms(run)]


def term_counts(text: str) -> Counter[str]:
    """``Counter(terms(text))``, counting each distinct run of ``text`` once."""
    out: dict[str, int] = {}
    get = out.get
    for run, n in Counter(_WORD.findall(text)).items():
        for term in run_terms(run):
            out[term] = get(term, 0) + n
    return Counter(out)


def line_terms(lines: list[str]) -> tuple[Counter[str], dict[str, int]]:
    """`term_counts` of the lines together, and each term's lines as a bitmask (bit i: line
    i), in one pass."""
    runs: dict[str, list[int]] = {}  # run -> [count, lines]
    get = runs.get
    for i, line in enumerate(lines):
        bit = 1 << i
        for run in _WORD.findall(line):
            seen = get(run)
            if seen is None:
                runs[run] = [1, bit]
            else:
                seen[0] += 1
                seen[1] |= bit
    counts: dict[str, int] = {}
    masks: dict[str, int] = {}
    for run, (n, held) in runs.items():
        for term in run_terms(run):
            counts[term] = counts.get(term, 0) + n
            masks[term] = masks.get(term, 0) | held
    return Counter(counts), masks


def located_runs(texts: list[str]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Every run of letters and digits in `texts` (`_WORD`), found without a Python step per
    run: the distinct runs, and per occurrence (in text order) its run's number among them,
    its text's number and its line there (from 0, as `str.splitlines` numbers lines).
    The texts are joined by newlines and read as bytes where every other character is a
    space: the runs are what `bytes.split` finds, their lines the newlines before them."""
    normal = [_one_newline(text) for text in texts]
    data = "\n".join(normal).encode("utf-8", "surrogatepass").translate(_RUN_BYTES)
    tokens = data.split()
    distinct = list(dict.fromkeys(tokens))
    code = dict(zip(distinct, range(len(distinct)), strict=True))
    ids = np.fromiter(map(code.__getitem__, tokens), np.int64, len(tokens))
    chars = np.frombuffer(data, np.uint8)
    in_run = _IN_RUN[chars]
    starts = np.flatnonzero(in_run[1:] & ~in_run[:-1]) + 1
    if len(in_run) and in_run[0]:
        starts = np.r_[0, starts]
    line = np.searchsorted(np.flatnonzero(chars == _NEWLINE), starts)
    # Text k starts on the line after the k texts before it and their newlines.
    counts = np.array([t.count("\n") + 1 for t in normal], np.int64)
    first = np.cumsum(counts)
    text = np.searchsorted(first, line, side="right")
    return [r.decode("ascii") for r in distinct], ids, text, line - (first - counts)[text]


_LINE_BREAKS = "\r\v\f\x1c\x1d\x1e"  # `str.splitlines` breaks besides \n (and non-ASCII)
_NEWLINE = ord("\n")
_IN_RUN = np.array([chr(c).isascii() and chr(c).isalnum() for c in range(256)], bool)
# Bytes kept by `located_runs`: letters, digits and newlines; all others become spaces.
_RUN_BYTES = bytes(c if _IN_RUN[c] or c == _NEWLINE else 32 for c in range(256))


def _one_newline(text: str) -> str:
    """`text` with every line break `str.splitlines` knows made one newline."""
    if text.isascii() and not any(c in text for c in _LINE_BREAKS):
        return text
    return "\n".join(text.splitlines())


def query_terms(text: str) -> list[str]:
    """Distinct terms of a request, in order."""
    seen: dict[str, None] = {}
    for term in terms(text):
        seen.setdefault(term, None)
    return list(seen)


_HEAD_END = re.compile(r"\n|(?<=[.!?])\s")
# Identifiers a request names: snake_case, camelCase / PascalCase with two humps, CONSTANTS,
# dotted paths, or anything in backticks. A lone capitalised word is English more often.
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CODE_SPAN = re.compile(r"`([^`\n]{1,80})`")
_URL = re.compile(r"\bhttps?://\S+")


def head(text: str) -> str:
    """A request's first line, up to its first sentence end: where it says what it is about."""
    text = text.strip()
    found = _HEAD_END.search(text)
    return text[: found.start()] if found else text


def query_weights(text: str, head_weight: float) -> dict[str, float]:
    """Each term of a request with its weight: how often it occurs, plus `head_weight - 1`
    for each occurrence in the head. URLs are dropped (their words are hosts and paths)."""
    text = _URL.sub(" ", text)
    counts: dict[str, float] = dict(Counter(terms(text)))
    if head_weight != 1.0:
        for term in terms(head(text)):
            counts[term] = counts.get(term, 0.0) + head_weight - 1.0
    return counts


def _looks_like_code(word: str) -> bool:
    return (
        "_" in word.strip("_")
        or bool(re.search(r"[a-z][A-Z]", word))
        or (word.isupper() and len(word) >= 3)
    )


def mentioned_identifiers(text: str) -> list[str]:
    """Identifiers the request names, lower-cased, in order (see `_IDENT`)."""
    text = _URL.sub(" ", text)
    found: dict[str, None] = {}
    for span in _CODE_SPAN.findall(text):
        for word in _IDENT.findall(span):
            if len(word) > 2:
                found.setdefault(word.lower(), None)
    for word in _IDENT.findall(text):
        if len(word) > 2 and _looks_like_code(word):
            found.setdefault(word.lower(), None)
    return [w for w in found if w not in STOPWORDS]
