"""The folders to watch: every folder the indexer would walk into, and nothing else.

watchfiles' recursive mode places an inotify watch in every folder under the root, node_modules
included, and only filters the events afterwards. Watching each indexed folder non-recursively
keeps excluded folders free of watches. The walk mirrors `knowledge.index.walker.walk`
(same order, same symlink and loop rules) so a folder is watched exactly when it is indexed.
"""

from __future__ import annotations

import os
from pathlib import Path

from knowledge.index.ignore import IgnoreRules


def watch_dirs(root: Path, rules: IgnoreRules, skip: Path | None = None) -> list[str]:
    """Repo-relative folders to watch ("" is the root), never leaving the root or looping.

    `skip` is a folder never to watch (the Theus data dir when it sits inside the project,
    whose saves would otherwise feed back into the watcher).
    """
    root = root.resolve()
    st = root.stat()
    seen: set[tuple[int, int]] = {(st.st_dev, st.st_ino)}
    out: list[str] = [""]
    stack: list[tuple[Path, str]] = [(root, "")]
    while stack:
        directory, rel_dir = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                if not entry.is_dir(follow_symlinks=True):
                    continue
                if rules.ignored(rel, True):
                    continue
                real = Path(entry.path)
                if entry.is_symlink():
                    real = real.resolve(strict=True)
                    if real != root and root not in real.parents:
                        continue  # a symlink leading out of the project
                if skip is not None and (real == skip or skip in real.parents):
                    continue
                ident = entry.stat(follow_symlinks=True)
            except (OSError, RuntimeError):
                continue  # unreadable, broken or looping link
            key = (ident.st_dev, ident.st_ino)
            if key in seen:
                continue  # a loop, or a second name for a folder already watched
            seen.add(key)
            out.append(rel)
            stack.append((Path(entry.path), rel))
    return out


def files_in(root: Path, rel_dirs: list[str], rules: IgnoreRules) -> list[str]:
    """The indexable-looking files directly inside each folder (Project.update decides)."""
    out: list[str] = []
    for rel_dir in rel_dirs:
        try:
            entries = list(os.scandir(root / rel_dir))
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                if entry.is_file(follow_symlinks=True) and not rules.ignored(rel, False):
                    out.append(rel)
            except OSError:
                continue
    return out
