"""Secrets in ordinary files never leave the machine or land in a store.

A victim project holds one canary of each secret shape (`canary_corpus`, 39 of them: provider
keys, PEM keys whole and as body lines, tokens in URLs, headers, YAML, JSON, an unusual name,
`.git/config`). Real processes then reach them every way a user or a model can: `theus index`
with hosted embeddings (the scripted `/embeddings` server), a headless run whose model reads
them in full and from an offset and greps for `^MIIE` (the scripted chat server), facts the
user states, `theus memory add`, the MCP server over stdio and the dashboard over HTTP. No
fragment of any canary may be in a request, an answer, a log line, a stored file (graph.db,
the vectors, sessions, episodes, MEMORY.md and topic files) or a file's name. The traps, which
look like secrets and are none, come out of redaction untouched.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import TextResourceContents

from knowledge.core import redact as redaction
from knowledge.core.redact import RULES, _lines, redact, redact_data
from tests.conftest import write_tree
from tests.scripted_embeddings import EmbeddingsScript, serve_embeddings
from tests.scripted_server import ScriptedServer, text, tools
from tests.security.canary_corpus import CANARIES, FILES, TRAPS, Canary, leaks

# A secret the user types: it goes to the model they chose, but into no store.
TYPED = "ghp_" + "Ty9dQ2wLx7Rv4Kp1Zm8Nc3Hb6Jf5Sg0Ae2Uq"
ROOT_FILES = {
    **FILES,
    "app/cart.py": '"""Shopping cart."""\n\n\ndef total(items):\n'
    '    """Sum of line prices."""\n    return sum(i["price"] for i in items)\n',
}


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update(
        {"THEUS_HOME": str(home), "THEUS_NO_WATCH": "1", "THEUS_RETRY_BASE": "0.01"}, **extra
    )
    return env


class Sinks:
    """What reached each sink: `seen(sink, text)` notes the canaries (and the typed secret)
    in it, so one run shows every leak at once."""

    def __init__(self) -> None:
        self.found: dict[str, list[str]] = {}

    def seen(self, sink: str, blob: str | bytes) -> None:
        data = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
        hits = leaks(data) + (["typed"] if TYPED.lower() in data.lower() else [])
        if hits:
            self.found.setdefault(sink, []).extend(hits)

    def stores(self, home: Path) -> None:
        """Every file under `home`, and every file's name."""
        for path in sorted(home.rglob("*")):
            name = path.relative_to(home).as_posix()
            self.seen(f"name {name}", name)
            if path.is_file():
                self.seen(name, path.read_bytes())

    def theus(
        self, root: Path, home: Path, *args: str, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        """A real `theus` process; what it prints is a sink too (its log lines on stderr)."""
        done = subprocess.run(
            [sys.executable, "-m", "entrypoint", "--path", str(root), *args],
            env=_env(home, **extra),
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, (args, done.stderr)
        self.seen(f"theus {args[0]} output", done.stdout + done.stderr)
        return done


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "shop", ROOT_FILES)


# -- the rule set ---------------------------------------------------------------------------
@pytest.mark.parametrize("trap", TRAPS)
def test_false_positive_traps_are_left_alone(trap: str) -> None:
    assert redact(trap) == trap


def test_rules_searched_by_line_find_the_lines_a_search_of_the_whole_text_finds() -> None:
    """A rule's `line_hints` are in every match of its `lines` pattern (each name of
    `_SECRET_NAME`'s alternatives, in any case, and "://")."""
    names = "password passwd passphrase pwd pw secret token api_key api-key apikey access_key"
    names += " auth-key account_key service_key private_key privkey priv-key client_secret"
    names += " credential credentials signing_key contraseña contrasena http:// bypass tokens"
    for rule in RULES:
        if rule.lines is None:
            continue
        for name in names.split():
            text = f"a = 1\n{name.upper()} = 'q8Xv2LrT9m'\nb = 2\n{name}: x".lower()
            found = [
                (text.rfind("\n", 0, m.start()) + 1, text.find("\n", m.end()) + 1 or len(text))
                for m in rule.lines.finditer(text)
            ]
            assert _lines(rule, text) == found, (rule.kind, name)


def _views(canary: Canary) -> Iterator[str]:
    """The canary's file as tools show it: whole, as `read` numbers it from each of its lines
    on (a read from an offset), and each line as `grep` and `grep -rn` print it."""
    lines = canary.content.splitlines()
    yield canary.content
    for offset in range(1, len(lines) + 1):
        yield "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines[offset - 1 :], offset))
    for n, line in enumerate(lines, start=1):
        if len(line.strip().strip('"').removesuffix("\\n")) < 64 and "\n" in canary.secret:
            continue  # alone, a PEM body's short last line is not known for one
        yield f"{canary.path}:{n}: {line.strip()}"
        yield f"{canary.path}:{n}:{line}"


@pytest.mark.parametrize("canary", CANARIES, ids=lambda c: c.name)
def test_every_canary_shape_is_redacted_however_a_tool_shows_it(canary: Canary) -> None:
    views = list(_views(canary))
    for view in views:
        clean = redact(view)
        assert not leaks(clean), (view, clean)
        assert redact(clean) == clean  # a placeholder is never redacted again
    # In a structure (an MCP answer, a session record), before it becomes JSON text.
    assert not leaks(json.dumps(redact_data({"views": views, "n": 1})))


@pytest.mark.parametrize("canary", CANARIES, ids=lambda c: c.name)
def test_a_canary_in_a_long_text_is_redacted_as_in_a_short_one(
    canary: Canary, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In a long text, the rules' hints are first looked for by their character pairs
    # (`_possible`): what that spares must be what a search per hint would have found absent.
    code = "def total(items):\n    return sum(i.price for i in items)  # prix ✓ 价格\n"
    filler = code * (redaction._PAIRS_FROM // len(code) + 1)
    texts = [f"{filler}{view}\n{filler}" for view in _views(canary)]
    found = [redact(text) for text in texts]
    monkeypatch.setattr(redaction, "_PAIRS_FROM", 1 << 62)
    assert found == [redact(text) for text in texts]
    assert not any(leaks(clean) for clean in found)


def test_a_redacted_value_keeps_the_text_around_it() -> None:
    assert redact("url = https://shop:Zq8Lm2Xv9Tp4Rw7Kd@db.example.com/shop") == (
        "url = https://shop:[redacted:url-credentials]@db.example.com/shop"
    )
    assert redact('curl -H "Authorization: Basic ZGVwbG95OnM0Y3IzdFBhc3N3b3Jk"') == (
        'curl -H "Authorization: Basic [redacted:authorization]"'
    )
    pem = next(c for c in CANARIES if c.name == "pem-read-from-offset").content
    assert redact(pem).count("\n") == pem.count("\n")  # line numbers after a key stay right


def test_a_file_whose_redacted_text_would_not_parse_keeps_its_symbols(tmp_path: Path) -> None:
    from knowledge.index.analyse import analyse

    keys = next(c for c in CANARIES if c.name == "pem-in-python")
    root = write_tree(tmp_path / "repo", {keys.path: keys.content})
    found = analyse(str(root), keys.path, (root / keys.path).stat().st_size, 0)
    assert found.status == "ok" and found.extract is not None
    assert [s.name for s in found.extract.symbols if s.kind == "function"] == ["load_signing_key"]
    assert "SIGNING_KEY" in found.extract.identifiers
    assert not leaks(repr(found.extract))


# -- every sink, through real processes ------------------------------------------------------
def _bag(text_: str, dim: int) -> list[float]:
    return [float(len(text_) % 7 + 1)] + [1.0] * (dim - 1)


def _extraction(**found: Any) -> Any:
    empty: dict[str, list[Any]] = {"entities": [], "relations": [], "facts": [], "corrections": []}
    return text(json.dumps({**empty, **found}))


def test_no_canary_leaves_or_lands_anywhere(victim: Path, tmp_path: Path) -> None:
    home, sinks = tmp_path / "home", Sinks()
    script = EmbeddingsScript(vector=_bag, dim=8)
    reads = [("read", {"path": path}) for path in sorted(FILES)]
    with serve_embeddings(script) as embed_url, ScriptedServer() as chat:
        chat.add(
            tools(*reads),
            tools(
                ("read", {"path": "fixtures/server_key.txt", "offset": 3, "limit": 10}),
                ("read", {"path": "fixtures/deploy_key.txt", "offset": 2}),
                ("grep", {"pattern": "^MIIE"}),
                ("grep", {"pattern": "Authorization"}),
                ("grep", {"pattern": "pw:|AccountKey|://"}),
                ("read", {"path": ".git/config"}),
            ),
            text("The keys are in app/ and fixtures/."),
        )
        # What the user says is extracted as facts: the token they typed is no entity, and a
        # fact that quotes it keeps it redacted.
        chat.structured.append(
            _extraction(
                entities=[
                    {"label": TYPED, "type": "Credential", "layer": "PERSONAL"},
                    {"label": "GitHub", "type": "Technology", "layer": "UNIVERSAL"},
                ],
                facts=[
                    {
                        "subject": "GitHub",
                        "text": f"deploys use the token {TYPED}",
                        "source": "user",
                    }
                ],
            )
        )
        embeddings = {"THEUS_EMBEDDINGS_URL": embed_url, "THEUS_EMBEDDINGS_MODEL": "bag"}
        sinks.theus(victim, home, "index", **embeddings)
        run = sinks.theus(
            victim,
            home,
            "-p",
            f"Where are our secrets kept? GitHub deploys use the "
            f"token {TYPED}. Remember where they are.",
            THEUS_BASE_URL=chat.url,
            THEUS_MODEL="test-model",
            **embeddings,
        )
        sinks.theus(
            victim,
            home,
            "memory",
            "add",
            next(c.secret for c in CANARIES if c.name == "github-token")
            + " is the release token; the database password is in app/db.py",
        )
        facts = sinks.theus(victim, home, "facts", "--json")
    assert script.inputs, "the hosted embedder was used"
    sinks.seen("hosted embeddings", json.dumps(script.requests))
    assert len(chat.requests) == 3
    results = [m["content"] for m in chat.requests[-1]["messages"] if m["role"] == "tool"]
    # What the user typed goes to the model they chose (their message, its extraction).
    sinks.seen(
        "model requests",
        json.dumps([*chat.requests, *chat.structured_requests]).replace(TYPED, "<typed>"),
    )
    sinks.stores(home)
    assert sinks.found == {}
    assert len(results) == len(reads) + 6 and "[redacted:private-key]" in results[-4]
    assert not [r for r in results if r.startswith("error:")]  # every file was read
    stored = [p for p in home.rglob("*") if p.is_file()]
    assert {"graph.db", "MEMORY.md"} <= {p.name for p in stored}
    assert any(p.suffix == ".idx" for p in stored)
    assert any(p.parent.name == "episodes" for p in stored)
    assert "GitHub" in facts.stdout and "[redacted:github-token]" in facts.stdout
    assert "Where are our secrets kept?" in "".join(
        p.read_text("utf-8", "replace") for p in stored if p.suffix == ".jsonl"
    )
    assert run.stdout.strip() == "The keys are in app/ and fixtures/."


def _text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def test_mcp_answers_hold_no_canary(victim: Path, tmp_path: Path) -> None:
    home, sinks = tmp_path / "home", Sinks()
    sinks.theus(victim, home, "index", THEUS_NO_EMBEDDINGS="1")
    episodes = next(home.glob("projects/*")) / "memory" / "episodes"
    write_tree(
        episodes,
        {
            "2026-01-02-keys.md": "---\ntitle: Keys\ntype: manual\n---\n\n"
            + FILES["fixtures/client_key.txt"]
        },
    )  # written by hand
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "entrypoint", "mcp", str(victim)],
        env=_env(home, THEUS_NO_EMBEDDINGS="1"),
        cwd=str(Path(__file__).parents[2]),
    )
    errlog = (tmp_path / "mcp.err").open("w+")
    async with Client(stdio_client(params, errlog=errlog)) as client:

        async def call(name: str, **args: Any) -> str:
            answer = _text_of(await client.call_tool(name, args))
            sinks.seen(f"mcp {name}", answer)
            return answer

        for path in sorted(FILES):
            if not path.startswith(".git/"):
                details = json.loads(await call("read_node", key=f"file:{path}"))
                assert details["lines"], path  # the file's own lines, with their numbers
        for canary in CANARIES:
            await call("recall", query=f"{canary.name.replace('-', ' ')} in {canary.path}")
        added = await call("add_memory", text=f"Release with {TYPED} from CI")
        assert "[redacted" not in added and json.loads(added)["result"] == "added"
        await call("search_memory", query="release CI token")
        await call("list_episodes")
        await call("read_episode", episode_id="2026-01-02-keys")
        await call("facts")
        index = (await client.read_resource("theus://memory/MEMORY.md")).contents[0]
        assert isinstance(index, TextResourceContents)
        sinks.seen("mcp MEMORY.md", index.text)
        episode = (await client.read_resource("theus://episodes/2026-01-02-keys")).contents[0]
        assert isinstance(episode, TextResourceContents)
        sinks.seen("mcp episode", episode.text)
    errlog.seek(0)
    sinks.seen("mcp log", errlog.read())
    hand_written = episodes / "2026-01-02-keys.md"
    sinks.stores(home)
    assert sinks.found == {f"{hand_written.relative_to(home).as_posix()}": ["pem-grep-miie"]}
    assert "(release-with-redacted-github-token-from.md)" in index.text  # its name says so too


def test_dashboard_answers_hold_no_canary(victim: Path, tmp_path: Path) -> None:
    home, sinks = tmp_path / "home", Sinks()
    sinks.theus(victim, home, "memory", "add", f"Release with {TYPED} from CI")
    sinks.theus(victim, home, "index", THEUS_NO_EMBEDDINGS="1")
    # A person writes a secret into MEMORY.md by hand: the file is theirs, the graph is ours.
    memory = next(home.glob("projects/*/memory/MEMORY.md"))
    slack = next(c for c in CANARIES if c.name == "slack-token")
    with memory.open("a") as handle:
        handle.write(f"- the alerts bot posts with {slack.secret}\n")
    sinks.theus(victim, home, "memory", "list")  # syncs the hand edit into the graph
    proc = subprocess.Popen(
        [sys.executable, "-m", "entrypoint", "dashboard", str(victim), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(home, THEUS_NO_EMBEDDINGS="1"),
    )
    answers: list[str] = []
    try:
        assert proc.stdout is not None
        url = next(m[0] for line in proc.stdout if (m := re.search(r"http://\S+", line)))
        base, token = url.split("/dashboard?token=")

        def get(route: str, **params: str) -> dict[str, Any]:
            query = urllib.parse.urlencode({**params, "token": token})
            with urllib.request.urlopen(f"{base}{route}?{query}", timeout=30) as resp:
                answers.append(resp.read().decode())
            return dict(json.loads(answers[-1]))

        deadline = time.monotonic() + 60
        while get("/api/status")["counts"].get("file", 0) < len(ROOT_FILES) - 1:
            assert time.monotonic() < deadline, answers[-1]
            time.sleep(0.2)
        page = get("/api/graph", limit="5000")
        keys = [n["key"] for n in page["nodes"] if n["kind"] in ("file", "memory", "entity")]
        assert sum(k.startswith("mem:") for k in keys) == 2
        for key in keys:
            get("/api/graph", node=key, limit="1")
        for route in ("/api/database", "/api/schema", "/api/history"):
            get(route)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    sinks.seen("dashboard log", err)
    for answer in answers:
        sinks.seen("dashboard answers", answer)
    sinks.stores(home)
    # The person's own line stays in their file; nowhere else.
    assert sinks.found == {memory.relative_to(home).as_posix(): ["slack-token"]}
    assert "[redacted:slack-token]" in "".join(answers)
