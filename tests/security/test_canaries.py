"""Secrets in ordinary source files never leave the machine or land in a store: a canary
corpus indexed with hosted embeddings (the scripted `/embeddings` server), then a headless run
whose model reads the files (the scripted chat server). Zero canaries in either server's log,
in graph.db, the recall and vector snapshots, sessions and episodes. And the redaction's
false-positive traps stay untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge.redact import redact
from tests.conftest import write_tree
from tests.scripted_embeddings import EmbeddingsScript, serve_embeddings
from tests.scripted_server import ScriptedServer, text, tool

# Every canary holds the marker; once redacted, none may be found anywhere.
CORPUS = {
    "app/settings.py": 'OPENAI_API_KEY = "sk-proj-CANARY01abcdefghijklmnopqrstu"\n'
                       'SECRET_KEY = "CANARY02-9f2c7a1e4b8d3f60a5c2"\n'
                       'DATABASE_URL = "postgres://app:CANARY03pass@db:5432/app"\n'
                       'def connect():\n'
                       '    """Connect with key sk-ant-CANARY04abcdefghijklmnopqrs."""\n',
    "config.json": '{"api_key": "AIzaCANARY05abcdefghijklmnopqrstuvwxy0",\n'
                   ' "aws_access_key_id": "AKIACANARY0000000006",\n'
                   ' "password": "CANARY07-hunter2!"}\n',
    "docker-compose.yml": "services:\n  db:\n    environment:\n"
                          "      POSTGRES_PASSWORD: CANARY08-Pa55word\n"
                          "      GITHUB_TOKEN: ghp_CANARY09abcdefghijklmnopqrstuvwxyz01\n",
    "deploy.sh": "#!/bin/sh\nexport HF_TOKEN=hf_CANARY10abcdefghijklmnopqrstuvwxyz\n"
                 "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJDQU5BUlkxMSI6MX0."
                 "CANARY11signaturepartxyz' https://api.example.com\n",
    "README.md": "# App\n\nDeploy with the token `xoxb-CANARY12-abcdefghijk`.\n\n"
                 "-----BEGIN RSA PRIVATE KEY-----\nCANARY13MIIEowIBAAKCAQEA\n"
                 "-----END RSA PRIVATE KEY-----\n",
    # Redacted, its text no longer parses (the key spans three string literals).
    "app/keys.py": 'SIGNING_KEY = ("-----BEGIN RSA PRIVATE KEY-----\\n"\n'
                   '               "CANARY14MIIEowIBAAKCAQEA\\n"\n'
                   '               "-----END RSA PRIVATE KEY-----\\n")\n\n\n'
                   'def load_signing_key():\n    """Read the signing key."""\n'
                   '    return SIGNING_KEY\n',
}
MARKER = "CANARY"
TRAPS = [
    '"integrity": "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHf=="',
    'hash = "3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b"',
    'request_id = "123e4567-e89b-12d3-a456-426614174000"',
    'fixture = "SGVsbG8gd29ybGQhIFRoaXMgaXMgYSB0ZXN0IGZpeHR1cmU="',
    'password = os.environ["DB_PASSWORD"]', "api_key: str | None = None",
    "def login(self, token: Optional[str]) -> None:", 'TOKEN = "${GITHUB_TOKEN}"',
    'password = "changeme"', "task-abcdefghijklmnopqrstuvwxyz0123",
    "secret_key = settings.SECRET_KEY", "passwords = load_passwords(path)",
    'auth_token = request.headers.get("X-Token")', 'version = "1.2.3"',
    "The token is refreshed every 30 minutes.",
    "SECRET_SCAN_ENTRIES = 20_000", "token_ttl = 1.5e3",
]


@pytest.mark.parametrize("trap", TRAPS)
def test_false_positive_traps_are_left_alone(trap: str) -> None:
    assert redact(trap) == trap


def test_every_canary_shape_is_redacted() -> None:
    for path, content in CORPUS.items():
        assert MARKER not in redact(content), (path, redact(content))
    assert redact(CORPUS["config.json"]).count("[redacted:") == 3


def test_a_file_whose_redacted_text_would_not_parse_keeps_its_symbols(tmp_path: Path) -> None:
    from knowledge.index.analyse import analyse

    root = write_tree(tmp_path / "repo", {"app/keys.py": CORPUS["app/keys.py"]})
    found = analyse(str(root), "app/keys.py", (root / "app/keys.py").stat().st_size, 0)
    assert found.status == "ok" and found.extract is not None
    assert [s.name for s in found.extract.symbols if s.kind == "function"] == ["load_signing_key"]
    assert "SIGNING_KEY" in found.extract.identifiers
    assert MARKER not in repr(found.extract)


def _bag(text_: str, dim: int) -> list[float]:
    return [float(len(text_) % 7 + 1)] + [1.0] * (dim - 1)


def test_no_canary_leaves_or_lands_anywhere(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = write_tree(tmp_path / "repo", CORPUS)
    script = EmbeddingsScript(vector=_bag, dim=8)
    with serve_embeddings(script) as embed_url, ScriptedServer() as chat:
        chat.add(tool("read", {"path": "app/settings.py"}), tool("read", {"path": "config.json"}),
                 tool("grep", {"pattern": "TOKEN"}), text("They are in settings.py."))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
        env.update({"THEUS_HOME": str(home), "THEUS_NO_WATCH": "1",
                    "THEUS_EMBEDDINGS_URL": embed_url, "THEUS_EMBEDDINGS_MODEL": "bag",
                    "THEUS_BASE_URL": chat.url, "THEUS_MODEL": "test-model"})
        cli = [sys.executable, "-m", "entrypoint", "--path", str(root)]
        index = subprocess.run([*cli, "index"], env=env, capture_output=True, text=True,
                               timeout=120)
        assert index.returncode == 0, index.stderr
        run = subprocess.run([*cli, "-p", "where are the api key and database password set"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
    assert script.inputs, "the hosted embedder was used"
    assert MARKER not in json.dumps(script.requests)
    assert len(chat.requests) == 4
    sent = json.dumps(chat.requests)
    assert "settings.py" in sent and MARKER not in sent
    assert MARKER not in run.stdout + run.stderr
    stored = [p for p in home.rglob("*") if p.is_file()]
    assert any(p.name == "graph.db" for p in stored)
    assert any(p.suffix == ".idx" for p in stored)
    for path in stored:
        assert MARKER.encode() not in path.read_bytes(), path
