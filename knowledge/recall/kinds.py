"""What kind of file a path is, and how much each kind counts for a request.

A change or a bug is made in code: tests repeat the words of the code they test, docs and
changelogs mention every feature, declaration files (`.d.ts`, stubs) repeat every name of the
implementation beside them, and configuration and data say little. So each kind counts by a
factor, set by what the request wants (`intent`): a request about tests counts tests fully,
one about docs counts docs fully.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from knowledge.index.languages import LANGUAGES
from knowledge.recall.intent import Intent

CODE, TEST, EXAMPLE, DOC, DECLARATION, CHANGELOG, DATA = (
    "code",
    "test",
    "example",
    "doc",
    "declaration",
    "changelog",
    "data",
)
KINDS = (CODE, TEST, EXAMPLE, DOC, DECLARATION, CHANGELOG, DATA)

DECLARATION_SUFFIXES = (".d.ts", ".d.mts", ".d.cts", ".pyi")
DOC_SUFFIXES = frozenset({*LANGUAGES["markdown"].suffixes, ".rst", ".txt", ".adoc", ".org"})
# Every indexed language but markdown, and code in languages without a spec.
CODE_SUFFIXES = (
    frozenset(
        {
            *(suffix for spec in LANGUAGES.values() for suffix in spec.suffixes),
            ".kt",
            ".scala",
            ".c",
            ".h",
            ".cc",
            ".cpp",
            ".hpp",
            ".cs",
            ".rb",
            ".php",
            ".swift",
            ".vue",
            ".svelte",
            ".lua",
            ".sh",
            ".ex",
            ".exs",
            ".dart",
            ".zig",
        }
    )
    - DOC_SUFFIXES
)
# Tests by folder or by a name any file can have, then each language's own convention. Some of
# those overlap the names here, which also catch the data beside tests (`test_data.json`).
_SHARED_TESTS = (
    r"(^|/)(tests?|__tests__|__mocks__|testing|testdata|test-data|spec|specs|e2e|fixtures)/",
    r"(^|/)test_[^/]*$",
    r"[._-](test|spec)s?\.[^/]*$",
    r"Tests?\.(kt|cs)$",  # Kotlin and C#, which have no spec
)
_TEST = re.compile(
    "|".join(
        f"(?:{pattern})"
        for pattern in (*_SHARED_TESTS, *(p for spec in LANGUAGES.values() for p in spec.tests))
    )
)
# A leading underscore is Go's way to keep a folder out of the build (`_examples/`).
_EXAMPLE = re.compile(r"(^|/)_?(examples?|samples?|demos?|benchmarks?|bench)/", re.IGNORECASE)
_DOC_DIR = re.compile(r"(^|/)(docs?|documentation)/", re.IGNORECASE)
_CHANGELOG = re.compile(
    r"(^|/)(changelog|changes|history|news|releases?|release-notes)([-_.][^/]*)?$",
    re.IGNORECASE,
)

# How much a file of each kind counts against code, by what the request wants.
FACTORS = {
    CODE: 1.0,
    TEST: 0.3,
    EXAMPLE: 0.3,
    DOC: 0.3,
    DECLARATION: 0.5,
    CHANGELOG: 0.1,
    DATA: 0.3,
}
WANTED = 1.0  # tests for a request about tests, docs for one about docs, examples...


@lru_cache(maxsize=65536)
def kind_of(path: str) -> str:
    lower = path.rpartition("/")[2].lower()
    if _CHANGELOG.search(path):
        return CHANGELOG
    if _TEST.search(path):  # test data too: a stub under test-data/ is a fixture
        return TEST
    if lower.endswith(DECLARATION_SUFFIXES):
        return DECLARATION
    dot = lower.rfind(".")
    suffix = lower[dot:] if dot > 0 else ""
    if suffix in DOC_SUFFIXES or _DOC_DIR.search(path):
        return DOC
    if suffix not in CODE_SUFFIXES:
        return DATA
    if _EXAMPLE.search(path):
        return EXAMPLE
    return CODE


def asked_for(kind: str, intent: Intent) -> bool:
    """Whether the request is about files of this kind: tests, docs or examples."""
    return (
        (kind == TEST and intent.tests)
        or (kind == DOC and intent.docs)
        or (kind == EXAMPLE and intent.examples)
    )


def factor(kind: str, intent: Intent) -> float:
    return WANTED if asked_for(kind, intent) else FACTORS[kind]


CODES = {k: i for i, k in enumerate(KINDS)}  # a kind's index in `factors` arrays


def factors(intent: Intent) -> np.ndarray:
    """`factor` of every kind, by `CODES`, with a trailing 0.0 for dead slots (index -1)."""
    return np.array([*(factor(k, intent) for k in KINDS), 0.0])


def wanted_kinds(intent: Intent) -> tuple[str, ...]:
    """The kinds a request is answered in: their words set the rarity (IDF) of a term."""
    return (CODE, *(kind for kind in (TEST, DOC, EXAMPLE) if asked_for(kind, intent)))
