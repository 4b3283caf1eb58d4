"""One redaction step for everything that leaves the process or is persisted.

`redact(text)` replaces secret-shaped values with a placeholder naming their kind,
`[redacted:aws-access-key]`: provider key prefixes, AWS keys, JWTs, PEM private-key blocks,
`password=` / `token=`-style assignments and high-entropy strings assigned to a name that says
it holds a secret. It runs before hosted embeddings, on the injected block, on the model's tool
results, on what `graph.db` keeps of a file (summaries, signatures, identifiers) and on
episodes. Tested against a canary corpus and a list of false-positive traps (lock-file hashes,
UUIDs, base64 fixtures, placeholders such as `${TOKEN}` or `os.environ["KEY"]`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

PLACEHOLDER = "[redacted:{}]"

# (kind, substrings one of which every match contains, pattern): the cheap test spares the
# pattern most texts. A key's start must not sit inside a word ("task-..." is no OpenAI key).
_SHAPES: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (kind, (hint,) if isinstance(hint, str) else hint, re.compile(pattern))
    for kind, hint, pattern in (
        ("private-key", "-----BEGIN ",
         r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]{0,16384}?"
         r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"),
        ("aws-access-key", ("AKIA", "ASIA", "ABIA", "ACCA"),
         r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![0-9A-Z])"),
        ("anthropic-key", "sk-ant-", r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}"),
        ("openai-key", "sk-", r"(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        ("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
         r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}"),
        ("github-token", "github_pat_", r"github_pat_[A-Za-z0-9_]{40,}"),
        ("gitlab-token", "glpat-", r"glpat-[A-Za-z0-9_-]{20,}"),
        ("slack-token", "xox", r"(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}"),
        ("slack-webhook", "hooks.slack.com",
         r"https://hooks\.slack\.com/services/[A-Za-z0-9/]{20,}"),
        ("google-api-key", "AIza", r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}"),
        ("huggingface-token", "hf_", r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}"),
        ("npm-token", "npm_", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}"),
        ("pypi-token", "pypi-", r"pypi-AgE[A-Za-z0-9_-]{50,}"),
        ("stripe-key", "_live_", r"(?<![A-Za-z0-9])[rs]k_live_[A-Za-z0-9]{20,}"),
        ("sendgrid-key", "SG.", r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
        ("jwt", "eyJ", r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\."
                       r"[A-Za-z0-9_-]{8,}"),
        ("url-password", "://", r"(?<=://)[^/\s:@\"']+:[^/\s@\"']{3,}(?=@)"),
    )
)
# NAME = value, NAME: value, "NAME": "value" in code, config, env and YAML files, where NAME
# has a word saying it holds a secret (`OPENAI_API_KEY`, `db_password`; not `passwords`,
# `bypass`, `tokens`). The value is what gets replaced.
_SECRET_NAME = (r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key"
                r"|auth[_-]?key|private[_-]?key|client[_-]?secret|credentials?|signing[_-]?key)")
_ASSIGNMENT = re.compile(
    r"(?<![a-z0-9])(?P<name>" + _SECRET_NAME + r"(?![a-z])[A-Za-z0-9_.-]*)[\"']?"
    r"(?P<sep>\s*(?::=|=>|=|:)\s*)(?P<quote>[\"'`]?)(?P<value>[^\s\"'`,;(){}\[\]]{6,}+)(?![(\[])",
    re.IGNORECASE)
_NAMED = re.compile(_SECRET_NAME)  # searched in lower-cased text: much faster than IGNORECASE
# Values that name a secret instead of holding one.
_REFERENCE = re.compile(
    r"^(?:\$\{?[A-Za-z_]|%\(|\{\{|<[^>]*>$|os\.|process\.env|env\(|getenv|self\.|cls\.|"
    r"settings\.|config\.|args\.|options\.|kwargs|None$|null$|nil$|true$|false$|"
    r"(?:your|my|example|changeme|placeholder|dummy|fake|test|xxx+|\*+)(?:[_-]|$))",
    re.IGNORECASE)


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_NUMBER = re.compile(r"^\d[\d_]*(?:\.\d[\d_]*)?(?:e[+-]?\d+)?$", re.I)  # 20_000, 1.5e3
_NAME_LIKE = re.compile(r"^[A-Za-z_][A-Za-z_.\[\]]*$")


def redact(text: str) -> str:
    """`text` with every secret-shaped value replaced by its placeholder."""
    if not text:
        return text
    for kind, hints, pattern in _SHAPES:
        if any(h in text for h in hints):
            text = pattern.sub(_placeholder(kind), text)
    if not _NAMED.search(text.lower()):
        return text
    # Only lines naming a secret go through the assignment pattern (a fast scan).
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if _NAMED.search(line.lower()):
            lines[i] = _ASSIGNMENT.sub(_assignment, line)
    return "".join(lines)


def _placeholder(kind: str) -> Callable[[re.Match[str]], str]:
    # A block over several lines keeps its line breaks: line numbers after it stay right.
    return lambda m: PLACEHOLDER.format(kind) + "\n" * m.group(0).count("\n")


def _assignment(match: re.Match[str]) -> str:
    value = match.group("value")
    if value.startswith("[redacted:") or _REFERENCE.match(value) or not _looks_secret(value):
        return match.group(0)
    start = match.start("value") - match.start()
    return match.group(0)[:start] + PLACEHOLDER.format("secret")


def _looks_secret(value: str) -> bool:
    """A value worth hiding: a password-like literal after `=`/`:`, or a long random-looking
    string; not a number, a path, a UUID or a name (`Optional[str]`, `settings.KEY`)."""
    if _NUMBER.match(value) or _UUID.match(value) or _NAME_LIKE.match(value):
        return False
    if "/" in value and not any(c.isdigit() for c in value):
        return False  # a path or URL without credentials
    classes = sum(bool(re.search(p, value)) for p in ("[a-z]", "[A-Z]", "[0-9]", r"[^A-Za-z0-9]"))
    return classes >= 2 and (len(value) < 20 or entropy(value) >= 3.0)


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
