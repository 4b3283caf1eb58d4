"""The folders to watch: every folder the indexer would walk into, and nothing else.

watchfiles' recursive mode places an inotify watch in every folder under the root, node_modules
included, and only filters the events afterwards. Watching each indexed folder non-recursively
keeps excluded folders free of watches. The folders come from the indexer's own walk, so a
folder is watched exactly when it is indexed.
"""

from __future__ import annotations

import os
from pathlib import Path

from knowledge.index.ignore import IgnoreRules
from knowledge.index.walker import walk


def watch_dirs(root: Path, rules: IgnoreRules, skip: Path | None = None) -> list[str]:
    """Repo-relative folders to watch ("" is the root): exactly the folders the indexer's walk
    enters, so it never leaves the root or loops. `skip` is a folder never to watch (the Theus
    data dir when it sits inside the project, whose saves would otherwise feed back)."""
    return walk(root, rules, skip=skip).dirs


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
