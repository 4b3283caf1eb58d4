"""Where the agent's shell commands run: inside a bubblewrap sandbox when this machine has one.

    argv = sandbox_argv(command, root)      # None: no sandbox here (then `shell` warns)
    env = shell_env(os.environ)

In the sandbox (as Claude Code's sandbox on Linux): the project root is the only writable
folder besides a private /tmp; the rest of the filesystem is read-only, and hidden are Theus's
data and config folders (the saved login key), the usual credential stores in the home folder
and the project's secrets files (`.env*`, keys: the indexer's rule; top levels only). A fresh
PID namespace with its own /proc, so the agent's processes (and their environment) cannot be
read; no network unless THEUS_SHELL_NETWORK=1; everything the command started dies with it,
`setsid` children included.

The environment is built from an allow-list, never the agent's minus a deny-list: a key whose
name nobody thought of does not leak. THEUS_SHELL_ENV adds names (comma-separated).
THEUS_NO_SANDBOX=1 runs commands unconfined (the allow-listed environment still applies).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from knowledge.index.ignore import is_secret
from knowledge.paths import config_home, data_home
from knowledge.switches import is_off, is_set

ENV_ALLOWED = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM",
    "NO_COLOR", "TZ", "TMPDIR", "EDITOR", "PAGER", "CI", "VIRTUAL_ENV", "CONDA_PREFIX",
    "PYENV_ROOT", "PYENV_VERSION", "GOPATH", "GOROOT", "GOFLAGS", "CARGO_HOME",
    "RUSTUP_HOME", "JAVA_HOME", "NODE_PATH", "NVM_DIR",
})
ENV_PREFIXES_ALLOWED = ("LC_",)
# Relative to the home folder: where people keep keys and tokens.
HOME_SECRETS = (".ssh", ".aws", ".azure", ".config/gcloud", ".config/gh", ".docker", ".kube",
                ".gnupg", ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".cargo/credentials",
                ".cargo/credentials.toml")
SECRET_SCAN_DEPTH = 3  # folders below the root searched for secrets files to hide
SECRET_SCAN_ENTRIES = 20_000
_NOT_SCANNED = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", "target",
                          "dist", "build", ".tox", ".mypy_cache"})
NO_SANDBOX_WARNING = ("warning: no sandbox on this machine (install bubblewrap): the command "
                      "runs with your permissions")


def shell_env(environ: Mapping[str, str]) -> dict[str, str]:
    extra = {name.strip() for name in environ.get("THEUS_SHELL_ENV", "").split(",")}
    allowed = ENV_ALLOWED | (extra - {""})
    return {k: v for k, v in environ.items()
            if k in allowed or k.startswith(ENV_PREFIXES_ALLOWED)}


@functools.cache
def bubblewrap() -> str | None:
    """The bubblewrap binary when it works here (it needs user or mount namespaces)."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    try:
        probe = subprocess.run([found, "--ro-bind", "/", "/", "--unshare-pid", "--", "true"],
                               capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found if probe.returncode == 0 else None


def sandbox_argv(command: str, root: Path,
                 environ: Mapping[str, str] | None = None) -> list[str] | None:
    """The argv that runs `command` with /bin/sh in the sandbox, or None when there is none
    (or THEUS_NO_SANDBOX=1)."""
    environ = os.environ if environ is None else environ
    tool = bubblewrap()
    if tool is None or is_off("sandbox", environ):
        return None
    argv = [tool, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--bind", str(root), str(root)]
    if not is_set("THEUS_SHELL_NETWORK", environ):
        argv.append("--unshare-net")
    for path in _hidden(root, environ):
        if root.is_relative_to(path):  # hiding it would hide the project too
            continue
        if path.is_dir():
            argv += ["--tmpfs", str(path)]
        elif path.exists():
            argv += ["--ro-bind", "/dev/null", str(path)]
    return [*argv, "--chdir", str(root), "--", "/bin/sh", "-c", command]


def _hidden(root: Path, environ: Mapping[str, str]) -> Iterable[Path]:
    yield data_home()
    yield config_home()
    home = environ.get("HOME")
    if home:
        yield from (Path(home) / name for name in HOME_SECRETS)
    yield from _project_secrets(root)


def _project_secrets(root: Path) -> Iterable[Path]:
    """Secrets files (`.env*`, keys, credentials: the indexer's rule) in the project's top
    levels, where they live; bounded, so a huge tree costs a command little."""
    budget = SECRET_SCAN_ENTRIES
    folders = [(root, 0)]
    while folders and budget > 0:
        folder, depth = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries[:budget]:
            budget -= 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < SECRET_SCAN_DEPTH and entry.name not in _NOT_SCANNED:
                        folders.append((Path(entry.path), depth + 1))
                elif is_secret(entry.name):
                    yield Path(entry.path)
            except OSError:
                continue
