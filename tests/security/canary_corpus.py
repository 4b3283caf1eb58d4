"""Secret shapes for the canary suite, and the traps that look like them but are no secret.

Every canary is built here at run time from a seeded generator (so no key-shaped literal sits
in the repository) and planted in a file of a victim project, in the shape it has in the wild:
a key in settings, a token as a URL's user part, a PEM body that a read from an offset or a
`grep ^MIIE` returns without its BEGIN line, a remote URL in `.git/config`... `needles(c)` are
the fragments of it that must be found nowhere: in no request, no store, no file name, no
answer and no log.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

_rng = random.Random(34)
_ALNUM = string.ascii_letters + string.digits


def _pick(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _alnum(n: int) -> str:
    """Random letters and digits, with at least one of each case and a digit (as real
    tokens of this length nearly always have)."""
    while True:
        value = _pick(_ALNUM, n)
        if (
            any(c.isupper() for c in value)
            and any(c.islower() for c in value)
            and any(c.isdigit() for c in value)
        ):
            return value


def _b64(n_bytes: int, head: bytes = b"") -> str:
    return base64.b64encode(head + _rng.randbytes(n_bytes - len(head))).decode()


def _lines(body: str, width: int) -> list[str]:
    return [body[i : i + width] for i in range(0, len(body), width)]


@dataclass(frozen=True)
class Canary:
    name: str
    path: str  # where it is planted in the victim project
    content: str  # the whole file
    secret: str  # what must never be seen; for a PEM key, its body (lines joined by \n)


def _needles(secret: str) -> list[str]:
    """Fragments of `secret` to look for: each line's middle (a PEM body) or the value's
    middle, long enough to be found by nothing else, short enough that a cut-off still shows."""
    out = []
    for line in secret.split("\n"):
        line = line.strip()
        if len(line) >= 12:
            middle = len(line) // 2
            out.append(line[middle - 6 : middle + 6])
    return out or [secret]


# An RSA key's DER starts 30 82 04 xx: its base64 starts MIIE, which `grep ^MIIE` finds.
_RSA = _lines(_b64(1190, b"\x30\x82\x04\xa2\x02\x01\x00\x02\x82\x01\x01\x00"), 64)
_RSA_OFFSET = _lines(_b64(1190, b"\x30\x82\x04\xa3\x02\x01\x00\x02\x82\x01\x01\x00"), 64)
_RSA_GREP = _lines(_b64(1190, b"\x30\x82\x04\xa4\x02\x01\x00\x02\x82\x01\x01\x00"), 64)
_RSA_PY = _lines(_b64(1190, b"\x30\x82\x04\xa5\x02\x01\x00\x02\x82\x01\x01\x00"), 64)
_OPENSSH = _lines(_b64(1000, b"openssh-key-v1\x00"), 70)
_PKCS8 = _lines(_b64(1216, b"\x30\x82\x04\xbc\x02\x01\x00\x30\x0d"), 64)


def _pem(kind: str, lines: list[str]) -> str:
    return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----\n"


def _build() -> list[Canary]:
    found: list[Canary] = []

    def add(name: str, path: str, content: str, secret: str) -> None:
        assert secret in content or "\n" in secret, name
        found.append(Canary(name, path, content, secret))

    v = "AKIA" + _pick(string.ascii_uppercase + "234567", 16)
    add("aws-access-key", "config/aws.json", f'{{"aws_access_key_id": "{v}"}}\n', v)
    v = _b64(30)
    add("aws-secret-key", "app/aws.py", f'AWS_SECRET_ACCESS_KEY = "{v}"\n', v)
    v = "sk-proj-" + _alnum(48)
    add("openai-key", "app/settings.py", f'OPENAI_API_KEY = "{v}"\n', v)
    v = "sk-ant-api03-" + _pick(_ALNUM + "-_", 93) + "AA"
    add("anthropic-key", "app/llm.py", f'client = Anthropic(api_key="{v}")\n', v)
    v = "ghp_" + _alnum(36)
    add("github-token", "scripts/release.sh", f"export GITHUB_TOKEN={v}\n", v)
    v = "github_pat_" + _pick(_ALNUM, 22) + "_" + _pick(_ALNUM, 59)
    add("github-fine-grained", "ci/env.txt", f"GH_PAT={v}\n", v)
    v = "glpat-" + _pick(_ALNUM + "-_", 20)
    add("gitlab-token", ".gitlab/notes.md", f"Use the token `{v}` for the registry.\n", v)
    v = "xoxb-" + _pick(string.digits, 12) + "-" + _pick(string.digits, 13) + "-" + _alnum(24)
    add("slack-token", "bot/config.yml", f"slack:\n  bot: {v}\n", v)
    v = (
        "https://hooks.slack.com/services/T"
        + _pick(string.ascii_uppercase, 8)
        + "/B"
        + _pick(string.ascii_uppercase, 10)
        + "/"
        + _alnum(24)
    )
    add("slack-webhook", "bot/notify.py", f'WEBHOOK = "{v}"\n', v.rsplit("/", 1)[1])
    v = "AIza" + _pick(_ALNUM + "-_", 35)
    add("google-api-key", "web/maps.js", f'const mapsKey = "{v}";\n', v)
    v = "hf_" + _alnum(34)
    add(
        "huggingface-token",
        "train/README.md",
        f"Log in with `huggingface-cli login --token {v}`.\n",
        v,
    )
    v = "npm_" + _alnum(36)
    add("npm-token", "ci/npmrc.txt", f"//registry.npmjs.org/:_authToken={v}\n", v)
    v = "pypi-AgEIcHlwaS5vcmc" + _pick(_ALNUM + "-_", 70)
    add("pypi-token", "ci/publish.sh", f"twine upload -p {v} dist/*\n", v)
    v = "sk_live_" + _alnum(24)
    add("stripe-key", "billing/keys.rb", f'Stripe.api_key = "{v}"\n', v)
    v = "SG." + _pick(_ALNUM + "-_", 22) + "." + _pick(_ALNUM + "-_", 43)
    add("sendgrid-key", "mail/send.py", f'sg = SendGridAPIClient("{v}")\n', v)
    v = "SK" + _pick("0123456789abcdef", 32)
    add("twilio-key", "sms/twilio.go", f'const apiKeySID = "{v}"\n', v)
    v = "dop_v1_" + _pick("0123456789abcdef", 64)
    add(
        "digitalocean-token",
        "infra/main.tf",
        f'provider "digitalocean" {{\n  token = "{v}"\n}}\n',
        v,
    )
    v = _pick("0123456789abcdef", 32) + "-us14"
    add("mailchimp-key", "mail/list.php", f"$mc = new MailChimp('{v}');\n", v)
    v = "shpat_" + _pick("0123456789abcdef", 32)
    add("shopify-token", "shop/admin.ts", f'const admin = createAdmin("{v}");\n', v)
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = (
        base64.urlsafe_b64encode(
            b'{"sub":"deploy","n":' + str(_rng.randrange(10**9)).encode() + b"}"
        )
        .decode()
        .rstrip("=")
    )
    v = f"{header}.{claims}.{_pick(_ALNUM + '-_', 43)}"
    add(
        "jwt-bearer",
        "scripts/call.sh",
        f"curl -H 'Authorization: Bearer {v}' https://api.example.com/v1\n",
        v,
    )
    v = _alnum(40)
    add(
        "opaque-bearer",
        "docs/api.md",
        f"```\nGET /v1/orders HTTP/1.1\nAuthorization: Bearer {v}\n```\n",
        v,
    )
    v = base64.b64encode(b"deploy:" + _alnum(20).encode()).decode()
    add(
        "basic-auth",
        "tests/http_dump.txt",
        f"POST /upload HTTP/1.1\nHost: files.example.com\nAuthorization: Basic {v}\n",
        v,
    )
    v = _b64(64)
    add(
        "azure-account-key",
        "app/storage.cs",
        'var conn = "DefaultEndpointsProtocol=https;AccountName=shopdata;'
        f'AccountKey={v};EndpointSuffix=core.windows.net";\n',
        v,
    )
    v = _pick(_ALNUM, 3) + "8Q~" + _pick(_ALNUM + "_~.-", 34)
    add("azure-client-secret", "infra/aad.json", f'{{"clientSecret": "{v}"}}\n', v)
    v = _alnum(22)
    add("url-password", "app/db.py", f'DATABASE_URL = "postgres://shop:{v}@db:5432/shop"\n', v)
    v = _alnum(40)
    add(
        "url-user-token",
        "scripts/clone.sh",
        f"git clone https://{v}@github.com/acme/private-tools.git\n",
        v,
    )
    v = _alnum(40)
    add(
        "git-config-remote",
        ".git/config",
        '[core]\n\trepositoryformatversion = 0\n[remote "origin"]\n'
        f"\turl = https://x-access-token:{v}@github.com/acme/shop.git\n"
        "\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
        v,
    )
    v = _alnum(16)
    add("yaml-pw", "deploy/values.yaml", f"database:\n  user: shop\n  pw: {v}\n", v)
    v = _alnum(32)
    add("unusual-name", "app/vendor.py", f'ZORBLAX_BLOB = "{v}"\n', v)
    v = _alnum(14) + "!"
    add("json-password", "config/app.json", f'{{\n  "db": {{"password": "{v}"}}\n}}\n', v)
    v = _alnum(18)
    add(
        "compose-password",
        "docker-compose.yml",
        f"services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: {v}\n",
        v,
    )
    v = _alnum(18)
    add("curl-user", "docs/upload.md", f"    curl -u admin:{v} https://files.example.com\n", v)
    v = _alnum(20)
    add("netrc-line", "docs/ftp.txt", f"machine ftp.example.com login shop password {v}\n", v)
    body = "\n".join(_RSA)
    add(
        "pem-block",
        "README.md",
        "# Shop\n\nThe test server's key:\n\n" + _pem("RSA PRIVATE KEY", _RSA) + "\nThat's all.\n",
        body,
    )
    body = "\n".join(_RSA_OFFSET)
    add(
        "pem-read-from-offset",
        "fixtures/server_key.txt",
        _pem("RSA PRIVATE KEY", _RSA_OFFSET),
        body,
    )
    body = "\n".join(_RSA_GREP)
    add("pem-grep-miie", "fixtures/client_key.txt", _pem("RSA PRIVATE KEY", _RSA_GREP), body)
    body = "\n".join(_OPENSSH)
    add("openssh-key", "fixtures/deploy_key.txt", _pem("OPENSSH PRIVATE KEY", _OPENSSH), body)
    literal = "".join(f'               "{line}\\n"\n' for line in _RSA_PY)
    add(
        "pem-in-python",
        "app/keys.py",
        'SIGNING_KEY = ("-----BEGIN RSA PRIVATE KEY-----\\n"\n'
        + literal
        + '               "-----END RSA PRIVATE KEY-----\\n")\n\n\n'
        'def load_signing_key():\n    """Read the signing key."""\n    return SIGNING_KEY\n',
        "\n".join(_RSA_PY),
    )
    v = "\\n".join(_PKCS8)
    add(
        "pem-in-json",
        "fixtures/gcp.json",
        '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + v
        + '\\n-----END PRIVATE KEY-----\\n"}\n',
        "\n".join(_PKCS8),
    )
    return found


CANARIES: list[Canary] = _build()
FILES: dict[str, str] = {}
for _canary in CANARIES:
    FILES[_canary.path] = FILES.get(_canary.path, "") + _canary.content


def needles(canary: Canary) -> list[str]:
    return _needles(canary.secret)


ALL_NEEDLES: list[str] = [n for c in CANARIES for n in needles(c)]


def leaks(blob: str | bytes) -> list[str]:
    """The canaries of which a fragment is in `blob` (as it is, or lower-cased as a file
    name's slug would be)."""
    text = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
    lowered = text.lower()
    return [c.name for c in CANARIES if any(n in text or n.lower() in lowered for n in needles(c))]


# Text that looks like a secret and is none: each must come out of redaction unchanged.
TRAPS = [
    '"integrity": "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHf=="',
    'hash = "3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b"',
    'request_id = "123e4567-e89b-12d3-a456-426614174000"',
    'fixture = "SGVsbG8gd29ybGQhIFRoaXMgaXMgYSB0ZXN0IGZpeHR1cmU="',
    'password = os.environ["DB_PASSWORD"]',
    "api_key: str | None = None",
    "def login(self, token: Optional[str]) -> None:",
    'TOKEN = "${GITHUB_TOKEN}"',
    'password = "changeme"',
    "task-abcdefghijklmnopqrstuvwxyz0123",
    "secret_key = settings.SECRET_KEY",
    "passwords = load_passwords(path)",
    'auth_token = request.headers.get("X-Token")',
    'version = "1.2.3"',
    "The token is refreshed every 30 minutes.",
    "SECRET_SCAN_ENTRIES = 20_000",
    "token_ttl = 1.5e3",
    # Subresource integrity, a commit, a digest, a module sum: public, however random.
    '<script src="app.js" integrity="sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/'
    'uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC">',
    "commit: 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "image: python@sha256:7b8f1c3a9e2d4f6b8a0c2e4f6a8b0d2c4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b",
    "golang.org/x/text v0.3.7 h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk=",
    "   12\t3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b",
    # A base64 line of a fixture that encodes text, as long as a PEM line.
    "SGVsbG8gd29ybGQhIFRoaXMgaXMgYSB0ZXN0IGZpeHR1cmUgb2Ygc2l4dHktZm91",
    'handler = "buildSessionHandlerFactory"',
    'cipher: "AES256GCMKeyWrapV2Test"',
    # URLs without credentials, or naming them by reference.
    "git clone ssh://git@github.com/acme/shop.git",
    "https://deploy@example.com/releases",
    'url = f"postgres://{user}:{password}@{host}/shop"',
    "DATABASE_URL=postgres://app:${DB_PASSWORD}@db/app",
    "http://localhost:8080/api/v1",
    "Write to jane.doe@example.com for access.",
    # Headers naming their secret instead of holding it.
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com',
    "Authorization: Bearer <token>",
    'headers = {"Authorization": f"Bearer {token}"}',
    "Authorization: Bearer YOUR_API_KEY",
    "The Authorization header is required.",
    'conn = "DefaultEndpointsProtocol=https;AccountName=devstore;AccountKey=<key>"',
    "pw = getpass()",
    "machine learning is the password to nothing",
    "-----BEGIN CERTIFICATE REQUEST-----",
]
