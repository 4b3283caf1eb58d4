"""Recall tasks mined from a repository's history (helper for bench/recall.py).

A task is a later commit. Its request is the commit's subject plus its cleaned body (trailers,
checkboxes, HTML comments, fenced output and "Update path/file" lines removed; issue
references kept), because real requests are often several sentences; the subject alone is
kept beside it for the subject-only variant. Only descriptive commits count (no merges,
bumps, releases, formatting, docs-only...). The gold set is the non-test source files the
commit changed that already existed at the base commit (1 to 4; tests, docs, examples,
benchmarks and declaration files out). Nothing here is committed or cached: the script
takes the repositories' paths as arguments.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

SOURCE_SUFFIXES = frozenset(
    {".py", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".go", ".rs", ".java"}
)
# Code a request can be answered with but that is never the thing changed: declarations.
DECLARATION_SUFFIXES = (".d.ts", ".d.mts", ".d.cts", ".pyi")
_SKIP_SUBJECT = re.compile(
    r"\b(merge|bump|release|version|typo|typos|lint|linter|format|formatting|prettier|ruff|"
    r"black|isort|flake8|pre-commit|changelog|readme|revert|wip|ci|deps|dependabot|"
    r"copyright|license|docs?)\b",
    re.IGNORECASE,
)
# A leading area tag: "fix(jsx): ", "ignore/types: ", "[mypyc] " (it names the place: a hint a
# user's request would not carry).
_PREFIX = re.compile(r"^\s*(\[[^\]]*\]\s*)+|^\s*[\w./-]+(\([^)]*\))?!?:\s+")
_PR = re.compile(r"\s*\((#|gh-)?\d+\)\s*$|\s*#\d+\s*$")
_TEST_PART = re.compile(
    r"(^|/)(tests?|__tests__|testing|spec|e2e|benchmarks?|examples?|docs?|test-data)/"
)
_TEST_NAME = re.compile(r"(^test_|_test\.|[._-](test|spec)[.-]|_spec\.|^conftest\.py$)")

# Body cleaning.
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_FENCE = re.compile(r"^```.*?^```[^\n]*$", re.DOTALL | re.MULTILINE)
_TRAILER = re.compile(
    r"^\s*([A-Z][A-Za-z]*(-[A-Za-z]+)*-by|Change-Id|PR-URL|Reviewed-on|Cc|Bug|Test|"
    r"Differential Revision|git-svn-id|Release-Note)\s*:.*$",
    re.IGNORECASE,
)
_CHECKBOX = re.compile(r"^\s*[-*]\s*\[[ xX]\].*$")
_UPDATE_LINE = re.compile(r"^\s*[-*]?\s*(Update|Create|Delete|Rename)\s+[\w./-]+\s*$")
_DEPENDABOT = re.compile(r"^---\s*\nupdated-dependencies:.*", re.DOTALL | re.MULTILINE)
MAX_QUERY_CHARS = 2000  # a request of a few paragraphs; the rest of a long PR text is noise


@dataclass(frozen=True)
class Task:
    repo: str
    commit: str
    subject: str  # the cleaned subject alone
    query: str  # subject + cleaned body
    gold: frozenset[str]


def git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args],
        check=True,
        capture_output=True,
        text=True,
        errors="replace",
    ).stdout


def git_dir_of(path: Path) -> Path:
    """The git directory of a bare mirror or of a work tree."""
    if (path / "HEAD").is_file() and (path / "objects").is_dir():
        return path
    return Path(git(path / ".git", "rev-parse", "--absolute-git-dir").strip())


def is_test_path(path: str) -> bool:
    """Tests, docs, examples, benchmarks and test data, by folder or file name."""
    return bool(_TEST_PART.search(path) or _TEST_NAME.search(PurePosixPath(path).name))


def is_source(path: str) -> bool:
    """A file a change is made in: source code, not a test, not a declaration."""
    return (
        PurePosixPath(path).suffix in SOURCE_SUFFIXES
        and not is_test_path(path)
        and not path.endswith(DECLARATION_SUFFIXES)
    )


def clean_subject(subject: str) -> str | None:
    """The subject as a request, or None when it is not descriptive."""
    text = _PR.sub("", _PREFIX.sub("", subject)).strip()
    if _SKIP_SUBJECT.search(subject) or len(text.split()) < 4:
        return None
    return text


def clean_body(body: str) -> str:
    """The body as the rest of a request: trailers, checkboxes, HTML comments, fenced blocks
    and "Update path" lines removed; words and issue references kept."""
    body = _DEPENDABOT.sub("", _FENCE.sub("", _HTML_COMMENT.sub("", body)))
    kept = [
        line.rstrip()
        for line in body.splitlines()
        if not (_TRAILER.match(line) or _CHECKBOX.match(line) or _UPDATE_LINE.match(line))
    ]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return text


def pick_base(git_dir: Path, back: int) -> str:
    """The commit `back` first-parent commits before HEAD."""
    return git(git_dir, "rev-parse", f"HEAD~{back}").strip()


def mine(git_dir: Path, base: str, name: str, limit: int) -> list[Task]:
    at_base = set(git(git_dir, "ls-tree", "-r", "--name-only", base).split("\n"))
    log = git(
        git_dir, "log", "--no-merges", "--reverse", "--format=%H%x00%s%x00%b%x1e", f"{base}..HEAD"
    )
    tasks: list[Task] = []
    for record in log.split("\x1e"):
        commit, _, rest = record.strip("\n").partition("\0")
        subject, _, body = rest.partition("\0")
        if not commit:
            continue
        request = clean_subject(subject)
        if request is None:
            continue
        changed = git(git_dir, "diff-tree", "--no-commit-id", "--name-only", "-r", commit)
        gold = frozenset(p for p in changed.split("\n") if p and is_source(p) and p in at_base)
        if 1 <= len(gold) <= 4:
            extra = clean_body(body)
            query = f"{request}\n\n{extra}" if extra else request
            tasks.append(Task(name, commit, request, query[:MAX_QUERY_CHARS], gold))
        if len(tasks) >= limit:
            break
    return tasks


def checkout(git_dir: Path, commit: str) -> Path:
    """A work tree at `commit` with its history (a shared clone, HEAD detached at `commit`),
    in a temporary folder the caller deletes. Only what HEAD reaches is history: the later
    commits the tasks come from are objects in the mirror, never reachable from HEAD."""
    out = Path(tempfile.mkdtemp(prefix="theus-bench-"))
    subprocess.run(
        ["git", "clone", "--quiet", "--shared", "--no-checkout", str(git_dir), str(out)], check=True
    )
    subprocess.run(["git", "-C", str(out), "checkout", "--quiet", "--detach", commit], check=True)
    return out
