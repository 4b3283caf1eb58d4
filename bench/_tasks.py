"""Recall tasks mined from a repository's history (helper for bench/recall.py).

A task is a later commit: the query is its subject (descriptive ones only), the gold set is the
source files it changed that already existed at the base commit (1 to 4, tests and docs out).
Nothing here is committed or cached: the script takes the repositories' paths as arguments.
"""

from __future__ import annotations

import re
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

SOURCE_SUFFIXES = frozenset(
    {".py", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".go", ".rs", ".java"}
)
_SKIP_SUBJECT = re.compile(
    r"\b(merge|bump|release|version|typo|typos|lint|linter|format|formatting|prettier|ruff|"
    r"black|isort|flake8|pre-commit|changelog|readme|revert|wip|ci|deps|dependabot|"
    r"copyright|license|docs?)\b",
    re.IGNORECASE,
)
_PREFIX = re.compile(r"^\s*[a-z]+(\([^)]*\))?!?:\s*", re.IGNORECASE)  # "fix(jsx): "
_PR = re.compile(r"\s*\((#|gh-)?\d+\)\s*$|\s*#\d+\s*$")
_TEST_PART = re.compile(r"(^|/)(tests?|__tests__|testing|spec|e2e|benchmarks?|examples?|docs?)/")
_TEST_NAME = re.compile(r"(^test_|_test\.|[._-](test|spec)[.-]|_spec\.|^conftest\.py$)")


@dataclass(frozen=True)
class Task:
    repo: str
    commit: str
    query: str
    gold: frozenset[str]


def git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True
    ).stdout


def git_dir_of(path: Path) -> Path:
    """The git directory of a bare mirror or of a work tree."""
    if (path / "HEAD").is_file() and (path / "objects").is_dir():
        return path
    return Path(git(path / ".git", "rev-parse", "--absolute-git-dir").strip())


def is_source(path: str) -> bool:
    p = PurePosixPath(path)
    return (
        p.suffix in SOURCE_SUFFIXES
        and not _TEST_PART.search(path)
        and not _TEST_NAME.search(p.name)
        and not p.name.endswith(".d.ts")
    )


def clean_subject(subject: str) -> str | None:
    """The subject as a request, or None when it is not descriptive."""
    text = _PR.sub("", _PREFIX.sub("", subject)).strip()
    if _SKIP_SUBJECT.search(subject) or len(text.split()) < 4:
        return None
    return text


def pick_base(git_dir: Path, back: int) -> str:
    """The commit `back` first-parent commits before HEAD."""
    return git(git_dir, "rev-parse", f"HEAD~{back}").strip()


def mine(git_dir: Path, base: str, name: str, limit: int) -> list[Task]:
    at_base = set(git(git_dir, "ls-tree", "-r", "--name-only", base).split("\n"))
    log = git(git_dir, "log", "--no-merges", "--reverse",
              "--format=%H%x00%s", f"{base}..HEAD")
    tasks: list[Task] = []
    for line in log.splitlines():
        commit, _, subject = line.partition("\0")
        query = clean_subject(subject)
        if query is None:
            continue
        changed = git(git_dir, "diff-tree", "--no-commit-id", "--name-only", "-r", commit)
        gold = frozenset(p for p in changed.split("\n") if p and is_source(p) and p in at_base)
        if 1 <= len(gold) <= 4:
            tasks.append(Task(name, commit, query, gold))
        if len(tasks) >= limit:
            break
    return tasks


def checkout(git_dir: Path, commit: str) -> Path:
    """The tree at `commit`, extracted into a temporary folder (the caller deletes it)."""
    out = Path(tempfile.mkdtemp(prefix="theus-bench-"))
    archive = out.with_suffix(".tar")
    with open(archive, "wb") as fh:
        subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit], check=True,
                       stdout=fh)
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter="data")
    archive.unlink()
    return out
