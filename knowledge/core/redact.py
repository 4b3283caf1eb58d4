"""One redaction step for everything that leaves the process or is persisted.

`redact(text)` replaces secret-shaped values with a placeholder naming their kind,
`[redacted:aws-access-key]`. The shapes are one table, `RULES`, each rule naming where it
comes from: provider key formats as gitleaks' and detect-secrets' rule sets define them, and
shapes of our own for what those rule sets, being line scanners of whole files, do not need:
PEM bodies without their BEGIN line (a key read from an offset, or grepped for `^MIIE`), URL
user parts (`https://TOKEN@host`), `Authorization` headers, values assigned to a name that
says it holds a secret, and long random-looking values assigned to any name.

detect-secrets itself was measured as the engine and dropped: its plugins import `requests`
(96 ms at start), its regexes ran at 2.5 MB/s (its keyword plugin at 1.0 MB/s) against about
25 MB/s here, and they find lines to report, not the span to cut.

It runs on raw text, before any encoding: `\\t` or `\\"` in JSON text breaks the shapes, so a
structure is redacted string by string (`redact_data`) and encoded after. Callers: indexing
(what graph.db keeps of a file), hosted embeddings, the injected block, tool results, sessions,
episodes, memories and their file names, facts, MCP answers and the dashboard. Tested against
a canary corpus and false-positive traps (lock-file hashes, UUIDs, base64 fixtures,
placeholders such as `${TOKEN}` or `os.environ["KEY"]`) in tests/security/test_canaries.py.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import string
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MARK = "[redacted:"  # what every placeholder starts with
PLACEHOLDER = MARK + "{}]"
_B64 = "A-Za-z0-9+/"

# Whether a captured value stays after all (a reference such as `${TOKEN}`, a hash under its
# name): called with the match and the name of the group that captured it.
Keep = Callable[[re.Match[str], str], bool]


@dataclass(frozen=True, slots=True)
class Rule:
    """A secret shape. Groups named `secret...` are what gets replaced (the whole match when
    the pattern has none). `hints`: one of them is in every match, or a test of the text that
    is true when one may be: cheap tests that spare the pattern most texts (a pattern scans at
    about 80 MB/s, unless it starts with a literal). `lines`: only the lines it finds in the
    lower-cased text go through the pattern; it is searched on the lines holding one of
    `line_hints`, of which every match of it holds one (`str.find` is many times faster)."""

    kind: str
    source: str
    pattern: re.Pattern[str]
    hints: tuple[str, ...] | Callable[[str], bool] = ()
    lines: re.Pattern[str] | None = None
    keep: Keep | None = None
    line_hints: tuple[str, ...] = ()
    # Hints of two characters or more, all of them: a long text is spared the rule when
    # none of them has its character pairs in it (`_possible`).
    paired: bool = False
    # Several hints that start with one character: one search that skips to it is several
    # times faster than a `str.find` per hint.
    any_of: re.Pattern[str] | None = None

    def sub(self, text: str) -> str:
        return self.pattern.sub(self._replace, text)

    def _replace(self, match: re.Match[str]) -> str:
        placeholder = PLACEHOLDER.format(self.kind)
        groups = [g for g in self.pattern.groupindex if g.startswith("secret")]
        if not groups:  # a block over several lines keeps its line breaks
            return placeholder + "\n" * match[0].count("\n")
        out, at = [], match.start()
        for group in groups:
            if match[group] is None or (self.keep is not None and self.keep(match, group)):
                continue
            out += [match.string[at : match.start(group)], placeholder]
            at = match.end(group)
        out.append(match.string[at : match.end()])
        return "".join(out)


# -- what decides whether a value is a secret ------------------------------------------------

# Values that name a secret instead of holding one.
_REFERENCE = re.compile(
    r"^(?:\$\{?[A-Za-z_]|%\(|\{\{|<[^>]*>$|os\.|process\.env|env\(|getenv|self\.|cls\.|"
    r"settings\.|config\.|args\.|options\.|kwargs|None$|null$|nil$|true$|false$|"
    r"(?:your|my|example|changeme|placeholder|dummy|fake|test|xxx+|\*+)(?:[_-]|$))",
    re.IGNORECASE,
)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_NUMBER = re.compile(r"^\d[\d_]*(?:\.\d[\d_]*)?(?:e[+-]?\d+)?$", re.I)  # 20_000, 1.5e3
_NAME_LIKE = re.compile(r"^[A-Za-z_][A-Za-z_.\[\]]*$")
_CLASSES = tuple(re.compile(p) for p in ("[a-z]", "[A-Z]", "[0-9]", r"[^A-Za-z0-9]"))
# The last word of a name whose value is a public digest or id, however random it looks.
_DIGEST_WORDS = frozenset(
    {
        "hash",
        "sha",
        "md",
        "digest",
        "checksum",
        "integrity",
        "etag",
        "h",
        "commit",
        "rev",
        "revision",
        "oid",
        "uuid",
        "guid",
        "id",
        "version",
        "fingerprint",
        "nonce",
    }
)
# A name before a value: `[A-Za-z_][A-Za-z0-9_.-]*`, then closing quotes or brackets, then
# blanks (`_name_before`).
_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")
_NAME_STARTS = frozenset(string.ascii_letters + "_")
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")  # Http, 2, Response; AES, 256


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _is_reference(value: str) -> bool:
    return value.startswith(MARK) or _REFERENCE.match(value) is not None


def _looks_secret(value: str) -> bool:
    """A value worth hiding after a secret's name: a password-like literal, or a long
    random-looking string; not a number, a path, a UUID or a name (`Optional[str]`)."""
    if _NUMBER.match(value) or _UUID.match(value) or _NAME_LIKE.match(value):
        return False
    if "/" in value and not any(c.isdigit() for c in value):
        return False  # a path or URL without credentials
    classes = sum(p.search(value) is not None for p in _CLASSES)
    return classes >= 2 and (len(value) < 20 or entropy(value) >= 3.0)


def _random_looking(value: str) -> bool:
    """A token nobody typed: mixed case in short runs (`q8Xv2LrT9mWp`), not an identifier
    made of words (`parseHttp2Response`: 80% or more of it in runs of 3 or more), a hex
    digest, or base64 of some text. Misses 2% of random 20-character tokens, 0.4% at 32."""
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value)):
        return False
    worded = sum(len(w) for w in _WORDS.findall(value) if len(w) >= 3)
    return worded < 0.8 * len(value) and entropy(value) >= 3.5 and not _encodes_text(value)


def _encodes_text(value: str) -> bool:
    """Base64 of readable text: a test fixture, not a key."""
    stripped = value.rstrip("=")
    try:
        raw = base64.b64decode(
            stripped + "=" * (-len(stripped) % 4),
            altchars=b"-_" if "-" in value or "_" in value else None,
            validate=True,
        )
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return sum(c.isprintable() or c.isspace() for c in decoded) >= 0.95 * max(len(decoded), 1)


def _keep_reference(match: re.Match[str], group: str) -> bool:
    return _is_reference(match[group])


def _keep_assignment(match: re.Match[str], group: str) -> bool:
    value = match[group]
    return _is_reference(value) or not _looks_secret(value)


def _keep_unnamed(match: re.Match[str], group: str) -> bool:
    """A long value assigned to a name that does not say secret: kept unless random-looking,
    and always under a digest's name (`integrity`, `sha256`, `commit`)."""
    value = match[group]
    if value.startswith("/") or _is_reference(value) or not _random_looking(value):
        return True
    line_start = match.string.rfind("\n", 0, match.start()) + 1
    name = _name_before(match.string, line_start, match.start())
    words = [w.lower() for w in _WORDS.findall(name) if not w.isdigit()]
    last = words[-1] if words else ""  # sha256 -> sha, requestId -> id, apiKeySID -> sid
    return last in _DIGEST_WORDS or (last.endswith("s") and last[:-1] in _DIGEST_WORDS)


def _name_before(text: str, start: int, end: int) -> str:
    """The name that `text[start:end]` ends with, before closing quotes and blanks (`"":
    none): read backwards from `end`, as far as the name goes. A pattern searched over the
    line tried every start in it: a minute for an SVG's long lines of `attr=value`."""
    at = end
    while at > start and text[at - 1] in " \t":
        at -= 1
    while at > start and text[at - 1] in "\"'`]":
        at -= 1
    first = at
    while first > start and text[first - 1] in _NAME_CHARS:
        first -= 1
    while first < at and text[first] not in _NAME_STARTS:
        first += 1
    return text[first:at]


def _keep_url_user(match: re.Match[str], group: str) -> bool:
    """A URL's password goes unless it is a reference; its user (`git@`, `deploy@`) only
    when it looks like a token, long and with digits: `https://TOKEN@github.com` logs in
    with the user part."""
    value = match[group]
    if group == "secret_pw":
        return _is_reference(value) or value.startswith(("{", "%"))
    return len(value) < 16 or not any(c.isdigit() for c in value)


def _keep_header(match: re.Match[str], group: str) -> bool:
    """Kept: a reference, or a short word (`Authorization: Bearer token` in prose)."""
    value = match[group]
    return _is_reference(value) or (len(value) < 20 and not any(c.isdigit() for c in value))


# -- PEM bodies by the shape of their lines -------------------------------------------------

# A line of a PEM body: 64 base64 characters (70 in OpenSSH keys, 76 in MIME), alone on its
# line but for what tools put around it: a line number (`read`, `grep -n`), a path (`grep`),
# quotes. A shorter line right after one is the body's last.
_LINE_HEAD = r"^[ \t]*(?:[^\s:]*:(?:\d+:)?[ \t]?|\d+[\t:][ \t]?)?[ \t]*[\"'`]?"
_LINE_TAIL = r"(?:\\n)?[\"'`]?[ \t]*[,;+)]?[ \t]*$"
_FULL_LINE = rf"[{_B64}]{{64}}(?:[{_B64}]{{6}}|[{_B64}]{{12}})?"
_B64_BYTES = frozenset((string.ascii_letters + string.digits + "+/").encode())
_B64_MARKS = bytes(ord("a") if b in _B64_BYTES else ord(" ") for b in range(256))
_FULL_RUN = b"a" * 64


def _has_full_line(text: str) -> bool:
    """Whether 64 base64 characters follow each other somewhere: 10 times faster than a
    pattern, on the bytes with each base64 character marked."""
    return len(text) >= 64 and _FULL_RUN in text.encode("utf-8", "surrogatepass").translate(
        _B64_MARKS
    )


def _keep_pem_line(match: re.Match[str], group: str) -> bool:
    """Kept, with the short line after it, unless the full line mixes case and digits (a hex
    digest of 64 characters is one case) and is no base64 of text (a fixture)."""
    line = match["secret"]
    mixed = (
        any(c.isupper() for c in line)
        and any(c.islower() for c in line)
        and any(c.isdigit() for c in line)
    )
    return not mixed or _encodes_text(line)


# -- the table ---------------------------------------------------------------------------------

_SECRET_NAME = (
    r"(?:pass(?:word|wd|phrase)?|pwd|pw|secret|token|api[_-]?key|apikey"
    r"|access[_-]?key|auth[_-]?key|account[_-]?key|service[_-]?key|priv(?:ate)?[_-]?key"
    r"|client[_-]?secret|credentials?|signing[_-]?key|contrase[ñn]a)"
)


def _rule(
    kind: str,
    source: str,
    pattern: str,
    hints: tuple[str, ...] | str | Callable[[str], bool] = (),
    keep: Keep | None = None,
    flags: int = 0,
    lines: str = "",
    line_hints: tuple[str, ...] = (),
) -> Rule:
    if isinstance(hints, str):
        hints = (hints,)
    literal = hints if isinstance(hints, tuple) else ()
    return Rule(
        kind,
        source,
        re.compile(pattern, flags),
        hints,
        re.compile(lines) if lines else None,
        keep,
        line_hints,
        paired=bool(literal) and all(len(h) > 1 for h in literal),
        any_of=(
            re.compile("|".join(map(re.escape, literal)))
            if len(literal) > 1 and len({h[0] for h in literal}) == 1
            else None
        ),
    )


_GITLEAKS, _DS = "gitleaks", "detect-secrets"
RULES: tuple[Rule, ...] = (
    # Private keys: the whole block, or from BEGIN to a blank line or the end when the text
    # was cut inside it; then body lines whose BEGIN line was not in the text at all.
    _rule(
        "private-key",
        f"{_GITLEAKS}:private-key, {_DS}:PrivateKeyDetector",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]{0,16384}?"
        r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[^\n]*(?:\n(?![ \t]*\d*\t?[ \t]*\n)"
        r"[^\n]*){0,200})",
        "-----BEGIN ",
    ),
    _rule(
        "private-key",
        "theus: PEM body lines by shape",
        rf"{_LINE_HEAD}(?P<secret>{_FULL_LINE}){_LINE_TAIL}"
        rf"(?:\n{_LINE_HEAD}(?P<secret_tail>[{_B64}]{{1,63}}={{0,2}}(?![{_B64}])){_LINE_TAIL})?",
        _has_full_line,
        _keep_pem_line,
        re.MULTILINE,
    ),
    _rule(
        "private-key",
        "theus: a PEM body's last line, before its END line",
        rf"{_LINE_HEAD}(?P<secret>[{_B64}]{{1,63}}={{0,2}}){_LINE_TAIL}"
        rf"(?=\n{_LINE_HEAD}-----END [A-Z0-9 ]*PRIVATE KEY)",
        "-----END ",
        flags=re.MULTILINE,
    ),
    _rule(
        "aws-access-key",
        f"{_GITLEAKS}:aws-access-token, {_DS}:AWSKeyDetector",
        r"(?<![A-Za-z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![0-9A-Z])",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
    ),
    _rule(
        "aws-secret-key",
        f"{_DS}:AWSKeyDetector",
        r"aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?['\"](?P<secret>[0-9a-zA-Z/+]{40})"
        r"['\"]",
        ("aws", "AWS", "Aws"),
        flags=re.IGNORECASE,
    ),
    _rule(
        "anthropic-key",
        f"{_GITLEAKS}:anthropic-api-key",
        r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}",
        "sk-ant-",
    ),
    _rule(
        "openai-key",
        f"{_GITLEAKS}:openai-api-key, {_DS}:OpenAIDetector",
        r"(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        "sk-",
    ),
    _rule(
        "github-token",
        f"{_GITLEAKS}:github-pat, {_DS}:GitHubTokenDetector",
        r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _rule(
        "github-token",
        f"{_GITLEAKS}:github-fine-grained-pat",
        r"github_pat_[A-Za-z0-9_]{40,}",
        "github_pat_",
    ),
    _rule(
        "gitlab-token",
        f"{_GITLEAKS}:gitlab-pat, {_DS}:GitLabTokenDetector",
        r"gl(?:pat|dt|rt|ptt|ft|cbt|soat|agent)-[A-Za-z0-9_-]{20,}",
        "gl",
    ),
    _rule(
        "slack-token",
        f"{_GITLEAKS}:slack-bot-token, {_DS}:SlackDetector",
        r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}",
        "xox",
    ),
    _rule(
        "slack-webhook",
        f"{_GITLEAKS}:slack-webhook-url, {_DS}:SlackDetector",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_+-]{20,}",
        "hooks.slack.com",
    ),
    _rule(
        "google-api-key",
        f"{_GITLEAKS}:gcp-api-key",
        r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}",
        "AIza",
    ),
    _rule(
        "huggingface-token",
        f"{_GITLEAKS}:huggingface-access-token",
        r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}",
        "hf_",
    ),
    _rule(
        "npm-token",
        f"{_GITLEAKS}:npm-access-token, {_DS}:NpmDetector",
        r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}",
        "npm_",
    ),
    _rule(
        "npm-token",
        f"{_DS}:NpmDetector",
        r":_auth(?:Token)?\s*=\s*(?P<secret>[^\s\"']{8,})",
        ":_auth",
        _keep_reference,
    ),
    _rule(
        "pypi-token",
        f"{_GITLEAKS}:pypi-upload-token, {_DS}:PypiTokenDetector",
        r"pypi-AgE[A-Za-z0-9_-]{50,}",
        "pypi-",
    ),
    _rule(
        "stripe-key",
        f"{_GITLEAKS}:stripe-access-token, {_DS}:StripeDetector",
        r"(?<![A-Za-z0-9])[rs]k_(?:live|test)_[A-Za-z0-9]{20,}",
        ("_live_", "_test_"),
    ),
    _rule(
        "sendgrid-key",
        f"{_GITLEAKS}:sendgrid-api-token, {_DS}:SendGridDetector",
        r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
        "SG.",
    ),
    _rule(
        "mailchimp-key",
        f"{_GITLEAKS}:mailchimp-api-key, {_DS}:MailchimpDetector",
        r"(?<![A-Za-z0-9])[0-9a-f]{32}-us[0-9]{1,2}(?![0-9])",
        "-us",
    ),
    _rule(
        "shopify-token",
        f"{_GITLEAKS}:shopify-access-token",
        r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
        "shp",
    ),
    _rule(
        "digitalocean-token", f"{_GITLEAKS}:digitalocean-pat", r"do[opr]_v1_[a-f0-9]{64}", "_v1_"
    ),
    _rule(
        "jwt",
        f"{_GITLEAKS}:jwt, {_DS}:JwtTokenDetector",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        "eyJ",
    ),
    _rule(
        "azure-storage-key",
        f"{_DS}:AzureStorageKeyDetector",
        r"(?:AccountKey|SharedAccessKey)\s*=\s*(?P<secret>[A-Za-z0-9+/=]{20,})",
        ("AccountKey", "SharedAccessKey"),
    ),
    _rule(
        "azure-client-secret",
        f"{_GITLEAKS}:azure-ad-client-secret",
        r"(?:^|(?<=[\\'\"`\s>=:(,)]))(?P<secret>[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34})"
        r"(?=$|[\\'\"`\s<),])",
        "Q~",
        flags=re.MULTILINE,
    ),
    # Credentials in a URL, a header, a command line.
    _rule(
        "url-credentials",
        f"theus; {_DS}:BasicAuthDetector for user:password",
        r"(?<=://)(?P<secret_user>[^/\s:@\"'`<>\[\]]+)(?::(?P<secret_pw>[^/\s@\"'`<>]+))?@"
        r"(?=[\w\[])",
        "://",
        _keep_url_user,
        # Within a line (no blank in it): a pattern that starts looking behind scans a whole
        # text slowly, the lines holding "://" are found at once.
        lines="://",
        line_hints=("://",),
    ),
    _rule(
        "authorization",
        f"theus; {_GITLEAKS}:curl-auth-header",
        r"(?:[Aa]uthorization|AUTHORIZATION)[\"']?[ \t]*[:=][ \t]*[\"']?(?:(?i:bearer|basic|"
        r"token|digest|bot|apikey|sso-key)[ \t]+)?(?P<secret>[A-Za-z0-9._~+/=:-]{8,})",
        ("uthorization", "UTHORIZATION"),
        _keep_header,
    ),
    _rule(
        "url-credentials",
        f"{_GITLEAKS}:curl-auth-user",
        r"(?:^|\s)(?:-u|--user)[ =][\"']?[^\s:\"']+:(?P<secret>[^\s\"']{3,})",
        ("-u ", "--user"),
        _keep_reference,
    ),
    _rule(
        "netrc-password",
        "theus: .netrc lines",
        r"machine\s+\S+(?:\s+login\s+\S+)?\s+password\s+(?P<secret>\S+)",
        "machine",
    ),
    # NAME = value, NAME: value, "NAME": "value" in code, config, env and YAML files, where
    # NAME says it holds a secret (`OPENAI_API_KEY`, `db_password`, `pw`; not `passwords`,
    # `bypass`, `tokens`). Only lines naming one go through the pattern.
    _rule(
        "secret",
        f"theus; names from {_DS}:KeywordDetector",
        r"(?<![a-z0-9])" + _SECRET_NAME + r"(?![a-z])[A-Za-z0-9_.-]*[\"']?"
        r"\s*(?::=|=>|=|:)\s*[\"'`]?(?P<secret>[^\s\"'`,;(){}\[\]]{6,}+)(?![(\[])",
        ("=", ":"),
        _keep_assignment,
        re.IGNORECASE,
        _SECRET_NAME,
        ("pw", "pass", "secret", "token", "key", "credential", "contrase"),
    ),
    # A long random-looking value assigned to any name (`ZORBLAX = "q8Xv2LrT..."`).
    _rule(
        "high-entropy",
        "theus: entropy of assigned values",
        # Alternatives that each start with a character: the engine skips to the next "=" or
        # ":" instead of trying the pattern at every character (twice as fast).
        r"(?:=>|=|:)[ \t]*[\"'`]?(?P<secret>[A-Za-z0-9+/_=-]{20,}+)(?![\w(\[]|\.\w)",
        ("=", ":"),
        _keep_unnamed,
    ),
)


_SHORTEST = 8  # no shape fits in fewer characters: a structure's many short strings cost nothing


# The hints of two characters or more, each as the codes of its character pairs (a byte, then
# the next), one hint's after the other's: each from its offset in `_HINT_STARTS`.
_PAIRED = sorted(
    {h for rule in RULES if rule.paired and isinstance(rule.hints, tuple) for h in rule.hints}
)
_HINT_PAIRS = [
    b[i] << 8 | b[i + 1] for h in _PAIRED for b in [h.encode()] for i in range(len(b) - 1)
]
_HINT_STARTS = [sum(len(h) - 1 for h in _PAIRED[:i]) for i in range(len(_PAIRED))]
# From this length a text's pairs are found first: below, a search per hint costs less.
_PAIRS_FROM = 2048


def redact(text: str) -> str:
    """`text` with every secret-shaped value replaced by its placeholder."""
    if len(text) < _SHORTEST:
        return text
    possible = _possible(text) if len(text) >= _PAIRS_FROM else None
    for rule in RULES:
        if _may_match(rule, text, possible):
            text = _by_line(rule, text) if rule.lines is not None else rule.sub(text)
    return text


def _possible(text: str) -> set[str]:
    """The hints of `_PAIRED` whose every pair of adjacent characters is somewhere in `text`:
    the others are not in it. A long text's pairs are found at once (numpy), where a search
    per hint reads the whole text each time: on sympy's files (32 MB), those searches were
    1.0 s of redaction's 2.3 s, the pairs and the searches left 0.3 s. The hints are ASCII:
    one is in the text's UTF-8 when it is in the text."""
    import numpy as np

    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8)
    seen = np.zeros(1 << 16, bool)
    seen[(data[:-1].astype(np.uint16) << 8) | data[1:]] = True
    found = np.logical_and.reduceat(seen[_HINT_PAIRS], _HINT_STARTS)
    return {_PAIRED[i] for i in np.flatnonzero(found)}


def redact_data(value: Any) -> Any:
    """A JSON-ready structure with every string in it redacted (keys are field names and
    stay): redact before encoding, never the encoded text."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v) for v in value]
    return value


def _may_match(rule: Rule, text: str, possible: set[str] | None) -> bool:
    """Whether `rule` may match `text` (`possible`: the paired hints that may be in it, or
    None when they were not looked for)."""
    hints = rule.hints
    if callable(hints):
        return hints(text)
    if possible is not None and rule.paired and possible.isdisjoint(hints):
        return False
    if rule.any_of is not None:
        return rule.any_of.search(text) is not None
    for hint in hints:  # a loop, not any(): this runs for every rule on every string
        if hint in text:
            return True
    return not hints


def _by_line(rule: Rule, text: str) -> str:
    """The rule on the lines its `lines` pattern finds in the lower-cased text (much faster
    than the whole text through an IGNORECASE pattern)."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a letter lower-cased to two: the offsets would not match
        return rule.sub(text)
    out, done = [], 0
    for start, end in _lines(rule, lowered):
        out += [text[done:start], rule.sub(text[start:end])]
        done = end
    out.append(text[done:])
    return "".join(out)


def _lines(rule: Rule, lowered: str) -> list[tuple[int, int]]:
    """Where each line of `lowered` that `rule.lines` finds starts and ends (after its
    newline), in order. Its matches never hold a newline: searched line by line, on the
    lines holding one of its `line_hints`, it finds the same lines."""
    assert rule.lines is not None
    spans = set()
    for hint in rule.line_hints:
        at = lowered.find(hint)
        while at >= 0:
            start = lowered.rfind("\n", 0, at) + 1
            end = lowered.find("\n", at) + 1 or len(lowered)
            spans.add((start, end))
            at = lowered.find(hint, end)
    return [span for span in sorted(spans) if rule.lines.search(lowered, *span)]
