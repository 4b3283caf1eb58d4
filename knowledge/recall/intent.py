"""What kind of answer a request wants: the code itself, its tests, or its documentation.

Decided on the request's head (its first line, up to the first sentence end), where a request
says what it is about; a long body mentions tests and docs in passing ("added a test", "see
the docs") without asking for them, and a test that rides along with a change ("fix the
parser and add a test") leaves the change the subject. A change or a bug wants
implementation files first; a request about tests wants tests first; one about documentation
wants docs first; one about an example ("update the fileserver example") wants the examples
first. A request about the user's own world ("my projects", "what do we use") prefers what
the user said (the facts layer's PERSONAL entities) to world knowledge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.recall.tokens import head

_TESTS = re.compile(
    r"\b(tests?|testing|tested|specs?|pytest|unittests?|jest|vitest|mocha|junit|fixtures?|"
    r"test[ -]?cases?|test[ -]?suites?|flaky|coverage)\b",
    re.IGNORECASE,
)
# "Fix the parser and add a test", "(with tests)": the change is the subject, its test a rider.
_TESTS_IN_PASSING = re.compile(
    r"[(,]?\s*(\band|\bwith|\bplus|\+|&)\s+(add(s|ed|ing)?\s+)?"
    r"((an?|the|some|more|new)\s+)?(unit\s+)?(tests?|test ?cases?|specs?)\b\)?",
    re.IGNORECASE,
)
_EXAMPLES = re.compile(r"\b(examples?|samples?|demos?)\b", re.IGNORECASE)
_DOCS = re.compile(
    r"^\s*document\b|\b(docs|documentation|documented|readme|guides?|tutorials?|changelog|"
    r"release notes|manual)\b",
    re.IGNORECASE,
)

# English and Spanish (the facts layer takes both): first person, singular or plural.
_PERSONAL = re.compile(
    r"\b(my|mine|our|ours|we|us|i|me|i'm|we're|we've|mis?|mí[oa]s?|nuestr[oa]s?|yo|"
    r"nosotr[oa]s|tengo|tenemos|uso|usamos)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Intent:
    tests: bool = False  # the request is about tests
    docs: bool = False  # the request is about documentation
    examples: bool = False  # the request is about examples (or samples, demos)
    personal: bool = False  # the request is about the user's own world


def intent_of(query: str) -> Intent:
    first = head(query)
    return Intent(
        tests=bool(_TESTS.search(_TESTS_IN_PASSING.sub(" ", first))),
        docs=bool(_DOCS.search(first)),
        examples=bool(_EXAMPLES.search(first)),
        personal=bool(_PERSONAL.search(first)),
    )
