"""Files of what a user granted one project (standing approval rules, trusted MCP servers),
kept in its data folder and tied to the repository that was there when granted. The data
folder is keyed by path, so without the tie another repository cloned or moved to that path
would inherit them.

A repository is known by its root and its git remotes (normalised: `git@github.com:o/r.git`
and `https://github.com/o/r` are one; a URL's credentials are dropped). Without a remote, by
its root and a random id kept in its git folder (`theus-checkout`), which no clone brings
along; outside git, by its root and the folder's inode. A file granted to another identity
grants nothing (one warning) and the next grant replaces it.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

from knowledge.core import atomic

CHECKOUT_FILE = "theus-checkout"
GIT_TIMEOUT_S = 5.0
KEY = "repository"


def identity(root: Path, *, create: bool = False) -> dict[str, Any]:
    """The repository at `root`; `create` stores a checkout id where one is needed (raises
    OSError when it cannot)."""
    from knowledge.run_history.stores import normal_remote

    resolved = root.resolve()
    found: dict[str, Any] = {"root": str(resolved)}
    urls = _git(resolved, "config", "--get-regexp", r"^remote\..*\.url$").splitlines()
    remotes = sorted({normal_remote(line.split(" ", 1)[-1]) for line in urls if " " in line})
    if remotes:
        return found | {"remotes": remotes}
    git_dir = _git(resolved, "rev-parse", "--absolute-git-dir").strip()
    if not git_dir:
        return found | {"checkout": f"inode {resolved.stat().st_ino}"}
    marker = Path(git_dir) / CHECKOUT_FILE
    try:
        checkout = marker.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        checkout = ""
    if not checkout and create:
        checkout = secrets.token_hex(16)
        atomic.write_text(marker, checkout + "\n")
    return found | {"checkout": checkout}


def read(path: Path, root: Path) -> tuple[dict[str, Any], str]:
    """The grants in `path` when they were given to the repository at `root`, else {} and
    a warning saying why ("" when there is simply no file). Raises nothing."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, ""
    except (OSError, ValueError) as exc:
        return {}, f"{path} is not readable ({exc}): nothing in it is granted"
    if not isinstance(raw, dict):
        return {}, f"{path} is not a JSON object: nothing in it is granted"
    granted_to = raw.get(KEY)
    if not isinstance(granted_to, dict):
        return {}, (
            f"{path} was written before grants were tied to a repository: nothing in "
            "it is granted; grant again to replace it"
        )
    try:
        here = identity(root)
    except OSError as exc:
        return {}, f"the repository at {root} cannot be identified ({exc}): nothing is granted"
    if granted_to != here:
        return {}, (
            f"{path} was granted to {describe(granted_to)}, not to the repository now "
            f"at {root} ({describe(here)}): nothing in it is granted; grant again to "
            "replace it"
        )
    return raw, ""


def write(path: Path, root: Path, grants: dict[str, Any]) -> None:
    """Replace `path` with `grants`, tied to the repository at `root` (raises OSError)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {KEY: identity(root, create=True), **grants}
    atomic.write_text(path, json.dumps(data, indent=2) + "\n", mode=0o600)


def describe(repository: dict[str, Any]) -> str:
    remotes = repository.get("remotes")
    where = repository.get("root", "?")
    if isinstance(remotes, list) and remotes:
        return f"{', '.join(map(str, remotes))} at {where}"
    return f"a checkout without a remote at {where}"


def _git(root: Path, *args: str) -> str:
    """git's answer, "" outside a repository or without git. `safe.directory` lets root read a
    repository another user owns (plain reads: nothing it runs comes from the repository)."""
    try:
        done = subprocess.run(
            ["git", "-c", "safe.directory=*", "-C", str(root), *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""
