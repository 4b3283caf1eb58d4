"""Terms for recall: identifiers split into words, plurals folded, noise dropped.

No stemmer: it would turn identifiers into nonsense (``status`` -> ``statu``). Instead a cheap
singular/plural fold (tools ~ tool, entries ~ entry, classes ~ class) plus a looser *stem* used
only as a weaker second match (parsing ~ parse ~ parser), so the exact word always wins.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

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
def _run_terms(run: str) -> tuple[str, ...]:
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
    return [fold(w) for w in split_words(text) if w not in STOPWORDS and len(w) > 1]


def term_counts(text: str) -> Counter[str]:
    """``Counter(terms(text))``, counting each distinct run of ``text`` once."""
    out: dict[str, int] = {}
    get = out.get
    for run, n in Counter(_WORD.findall(text)).items():
        for term in _run_terms(run):
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
        for term in _run_terms(run):
            counts[term] = counts.get(term, 0) + n
            masks[term] = masks.get(term, 0) | held
    return Counter(counts), masks


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
