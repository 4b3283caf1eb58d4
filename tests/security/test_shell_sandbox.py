"""The shell tool does not hand the agent's keys to the model: the attack run's probes, each
through the real tool in the bubblewrap sandbox (installed from Debian when missing), and the
environment allow-list that applies with or without it."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import configure, write_tree
from tests.e2e.debian import ensure
from theus.protocol import ApprovalRequest
from theus.tools.base import ToolContext, ToolError
from theus.tools.jail import Jail
from theus.tools.sandbox import NO_SANDBOX, bubblewrap, shell_env
from theus.tools.shell import run_shell

KEYS = {
    "THEUS_API_KEY": "sk-theus-CANARY",
    "OPENAI_API_KEY": "sk-openai-CANARY",
    "THEUS_EMBEDDINGS_KEY": "sk-embed-CANARY",
    "ANTHROPIC_API_KEY": "sk-ant-CANARY",
    "AWS_SECRET_ACCESS_KEY": "aws-CANARY",
    "GITHUB_TOKEN": "ghp_CANARY",
    "HF_TOKEN": "hf_CANARY",
    "SOME_NEW_SERVICE_SECRET": "new-CANARY",
}


@pytest.fixture(scope="module", autouse=True)
def sandbox_tool() -> None:
    ensure("bubblewrap", "bwrap")
    bubblewrap.cache_clear()
    assert bubblewrap() is not None, "bubblewrap is installed but cannot create namespaces"


@pytest.fixture
def top() -> Iterator[Path]:
    # Not under /tmp: the sandbox's private /tmp would hide it all and prove nothing.
    folder = Path(tempfile.mkdtemp(prefix="theus-sandbox-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def root(top: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tmp_path = top
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    configure(monkeypatch, home=str(tmp_path / "theus-home"))
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    configure(monkeypatch, no_sandbox=False)
    configure(monkeypatch, shell_network=False)
    write_tree(
        tmp_path / "theus-home" / "config",
        {"credentials.json": json.dumps({"api_key": "sk-login-CANARY"})},
    )
    write_tree(home, {".ssh/id_ed25519": "ssh-CANARY", ".aws/credentials": "aws-file-CANARY"})
    write_tree(tmp_path / "outside", {"secret.txt": "outside-CANARY"})
    return write_tree(
        tmp_path / "repo",
        {
            "app.py": "print('hi')\n",
            ".env": "KEY=env-CANARY\n",
            ".env.local": "KEY=envlocal-CANARY\n",
            "services/api/.env": "KEY=nested-CANARY\n",
            "deploy/id_rsa": "ssh-key-CANARY\n",
        },
    )


def shell(root: Path, command: str, ctx: ToolContext | None = None) -> str:
    async def yes(request: ApprovalRequest) -> bool:
        return True

    context = ctx or ToolContext(jail=Jail(root), approve=yes)
    said: str = asyncio.run(run_shell.run({"command": command, "timeout_s": 30}, context))
    return said


@pytest.mark.parametrize(
    "probe",
    [
        "env",
        "tr '\\0' '\\n' < /proc/$PPID/environ",
        "cat /proc/*/environ | tr '\\0' '\\n'",
        "cat {top}/theus-home/config/credentials.json {top}/home/.ssh/id_ed25519 "
        "{top}/home/.aws/credentials",
        "cat .env .env.local services/api/.env deploy/id_rsa",
        "grep -rs CANARY {top}/theus-home {top}/home . /tmp",
    ],
)
def test_no_secret_reaches_the_command_output(root: Path, probe: str) -> None:
    # Files elsewhere are readable (the rest of the system is read-only, as in Claude Code's
    # sandbox); what is hidden is where keys live.
    top = root.parent
    assert (top / "theus-home/config/credentials.json").is_file()
    out = shell(root, probe.format(top=top))
    assert "CANARY" not in out, out
    assert NO_SANDBOX not in out


def test_the_project_is_writable_and_nothing_else_is(root: Path) -> None:
    out = shell(root, "echo made > made.txt; touch ../outside/written ../escaped; echo $?")
    assert (root / "made.txt").read_text() == "made\n"
    assert not (root.parent / "outside" / "written").exists()
    assert not (root.parent / "escaped").exists()
    assert "Read-only file system" in out


# A daemon that left the process group (setsid) and one that ignores hang-ups (nohup), each
# writing a heartbeat every 0.1 s while it lives.
LEFTOVERS = (
    "(setsid sh -c 'while :; do date +%N >> beat1; sleep 0.1; done' >/dev/null 2>&1 &);"
    " nohup sh -c 'while :; do date +%N >> beat2; sleep 0.1; done' >/dev/null 2>&1 &"
    " until [ -s beat1 ] && [ -s beat2 ]; do sleep 0.05; done"
)


def _still_beating(root: Path) -> bool:
    before = {name: (root / name).read_bytes() for name in ("beat1", "beat2")}
    threading.Event().wait(1.0)  # ten heartbeats, were either alive
    return any((root / name).read_bytes() != seen for name, seen in before.items())


def test_what_a_command_leaves_running_ends_with_it(root: Path) -> None:
    shell(root, LEFTOVERS)
    assert (root / "beat1").exists() and (root / "beat2").exists()  # they ran
    assert not _still_beating(root)


def test_unconfined_what_a_command_leaves_running_ends_with_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, no_sandbox=True)
    shell(root, LEFTOVERS)
    assert (root / "beat1").exists() and (root / "beat2").exists()
    assert not _still_beating(root)


def test_no_network_unless_allowed(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    try:
        probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\""
        assert shell(root, probe).startswith("exit 1")
        configure(monkeypatch, shell_network=True)
        assert shell(root, probe).startswith("exit 0")
    finally:
        server.close()


def test_without_a_sandbox_one_warning_a_session_and_still_no_keys(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, no_sandbox=True)

    async def yes(request: ApprovalRequest) -> bool:
        return True

    ctx = ToolContext(jail=Jail(root), approve=yes)
    first, second = shell(root, "env", ctx), shell(root, "env", ctx)
    assert first.startswith(f"note: {NO_SANDBOX}") and NO_SANDBOX not in second
    assert "CANARY" not in first + second


def test_without_bubblewrap_the_user_is_asked_why(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no bwrap to find
    bubblewrap.cache_clear()
    asked: list[ApprovalRequest] = []

    async def record(request: ApprovalRequest) -> bool:
        asked.append(request)
        return len(asked) > 1  # no, then yes

    ctx = ToolContext(jail=Jail(root), approve=record)
    try:
        with pytest.raises(ToolError, match="install bubblewrap"):
            shell(root, "echo ran > ran.txt", ctx)
        assert not (root / "ran.txt").exists()
        out = shell(root, "echo ran > ran.txt", ctx)
    finally:
        bubblewrap.cache_clear()
    # the prompt says why, and no "always" rule can cover it (theus.permissions)
    assert all(request.protected == NO_SANDBOX for request in asked)
    assert out.startswith(f"note: {NO_SANDBOX}") and (root / "ran.txt").exists()


def test_the_environment_is_an_allow_list() -> None:
    env = shell_env(
        {
            "PATH": "/bin",
            "LC_ALL": "C",
            "MY_TOKEN": "x",
            "DEPLOY_KEY": "y",
        },
        "DEPLOY_KEY, OTHER",
    )
    assert env == {"PATH": "/bin", "LC_ALL": "C", "DEPLOY_KEY": "y"}
