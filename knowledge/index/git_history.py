"""The project's own history: recent commits and the files each changed, read from git.

A request is often like an earlier change ("add support for X files" after "add support for
Y files"): the files those changes touched are likely the ones this one needs. Only what
`HEAD` reaches is read (never other branches), merges and sweeping commits (more than
`MAX_FILES` files: reformatting, renames, vendoring) are left out, and nothing leaves the
machine: the text is only used to rank files, never shown to a model. No git, or not a
repository: no history, and recall goes on without it.
"""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

MAX_COMMITS = 2000  # the newest commits HEAD reaches
MAX_FILES = 20  # a commit changing more files says little about any one of them
BODY_CHARS = 1000
GIT_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    when: int  # committer time, seconds since the epoch
    text: str  # subject, then the body's start
    files: tuple[str, ...]  # repo-relative paths it changed


def head(root: Path) -> str:
    """The commit HEAD names, or "" outside a git repository."""
    out = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    return out.strip() if out else ""


def window(root: Path, at: str) -> list[str] | None:
    """The newest `MAX_COMMITS` non-merge commits `at` (a commit) reaches, newest first, as
    `git log` lists them; None when git could not tell."""
    out = _git(root, "rev-list", "--no-merges", f"--max-count={MAX_COMMITS}", at)
    return None if out is None else out.split()


def read_commits(root: Path, shas: list[str]) -> dict[str, Commit | None] | None:
    """Each commit of `shas`: None for one left out (no file, or more than `MAX_FILES`);
    None for all when git could not read them."""
    if not shas:
        return {}
    out = _git(
        root,
        "log",
        "--no-walk=unsorted",
        "--stdin",
        "--name-only",
        "-z",
        "--format=%x1e%H%x00%ct%x00%s%x00%b%x00",
        feed="\n".join(shas) + "\n",
    )
    if out is None:
        return None
    commits: dict[str, Commit | None] = dict.fromkeys(shas)
    for record in out.split("\x1e")[1:]:
        parts = record.split("\0")
        if len(parts) < 4:
            continue
        sha, when, subject, body, *names = parts
        files = tuple(n.strip("\n") for n in names if n.strip("\n"))
        if not files or len(files) > MAX_FILES:
            continue
        text = subject.strip() + "\n" + body.strip()[:BODY_CHARS]
        commits[sha] = Commit(sha, int(when or 0), text.strip(), files)
    return commits


def _git(root: Path, *args: str, feed: str | None = None) -> str | None:
    """git's output, or None when it failed (no git, not a repository, it hung)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            errors="replace",
            text=True,
            input=feed,
            stdin=None if feed is not None else subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:  # no git, or it hung: no history
        log.info("project history unavailable: %s", exc)
        return None
    return done.stdout if done.returncode == 0 else None
