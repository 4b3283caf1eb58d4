"""Symbol-level gold and what a block names (helper for bench/recall.py).

Gold: the definitions a task's commit changed, as (path, qualified name). Each changed hunk
of a gold file (`git diff -U0` against the commit's parent) is placed in the file as it was
just before the commit, parsed by Theus's own extractor (`knowledge.index.extract`:
tree-sitter, the `ast` module for Python); the innermost definitions (functions, methods,
classes, types; not constants or variables) that overlap the hunk, or that enclose an
insertion, are gold, when the base commit has them too (the repository is indexed there: a
definition added in between is no answer the base can give).

Named: the definitions a block names, in the order it names them. A line that starts with an
indexed path (`src/cart.py — ...`, `src/cart.py: Cart.total(...)`, `src/cart.py:12-40
Cart.total(...)`) sets the file; the text after it, or an indented line under it, names the
file's definition whose qualified name it starts with (the longest such).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from bench._tasks import git
from knowledge.index.extract import extract_file
from knowledge.index.model import Symbol

Definition = tuple[str, str]  # (repo-relative path, qualified name)
NOT_DEFINITIONS = frozenset({"const", "var"})
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
_PATH = re.compile(r"^([\w.$@+\-\[\]/]+\.\w+)(?=$|[ :;,])")
_AFTER_PATH = re.compile(r"^:(?:\d+(?:-\d+)?)?\s+")
_IDENT_CHAR = re.compile(r"[\w$]")


def hunks(diff: str) -> dict[str, list[tuple[int, int]]]:
    """Per old path, its hunks as (first line, line count) on the old side (count 0: an
    insertion after that line)."""
    out: dict[str, list[tuple[int, int]]] = {}
    path = ""
    for line in diff.splitlines():
        if line.startswith("--- "):
            path = line[6:] if line.startswith("--- a/") else ""
        elif path and (found := _HUNK.match(line)):
            count = 1 if found.group(2) is None else int(found.group(2))
            out.setdefault(path, []).append((int(found.group(1)), count))
    return out


def enclosing(symbols: list[Symbol], first: int, count: int) -> list[Symbol]:
    """The innermost definitions a hunk touches."""
    if count == 0:  # between `first` and `first + 1`
        touched = [s for s in symbols if s.line <= first and s.end_line >= first + 1]
    else:
        last = first + count - 1
        touched = [s for s in symbols if s.line <= last and s.end_line >= first]
    touched = [s for s in touched if s.kind not in NOT_DEFINITIONS]
    return [
        s
        for s in touched
        if not any(
            s.line <= o.line
            and o.end_line <= s.end_line
            and (o.line, o.end_line) != (s.line, s.end_line)
            for o in touched
        )
    ]


def changed_definitions(
    git_dir: Path, commit: str, gold: Iterable[str], at_base: Callable[[Definition], bool]
) -> frozenset[Definition]:
    paths = sorted(gold)
    diff = git(
        git_dir, "diff", "-U0", "--no-color", "--no-renames", f"{commit}^", commit, "--", *paths
    )
    out: set[Definition] = set()
    for path, found in hunks(diff).items():
        data = git(git_dir, "show", f"{commit}^:{path}").encode()
        symbols = extract_file(path, data).symbols
        for first, count in found:
            out.update((path, s.name) for s in enclosing(symbols, first, count))
    return frozenset(d for d in out if at_base(d))


def named(block: str, labels: Callable[[str], Iterable[str]]) -> list[Definition]:
    """The definitions `block` names, in order, once each; `labels(path)` gives a file's
    qualified definition names (none for an unknown path)."""
    out: list[Definition] = []
    current = ""
    for line in block.splitlines():
        if line.startswith("  "):
            text = line.strip()
        else:
            found = _PATH.match(line)
            if found is None:
                current = ""
                continue
            current = found.group(1)
            rest = line[found.end() :]
            after = _AFTER_PATH.match(rest)
            if after is None:
                continue
            text = rest[after.end() :]
        if not current:
            continue
        name = _longest_prefix(text, labels(current))
        if name and (current, name) not in out:
            out.append((current, name))
    return out


def _longest_prefix(text: str, names: Iterable[str]) -> str:
    best = ""
    for name in names:
        if (
            len(name) > len(best)
            and text.startswith(name)
            and not _IDENT_CHAR.match(text[len(name) : len(name) + 1])
        ):
            best = name
    return best
