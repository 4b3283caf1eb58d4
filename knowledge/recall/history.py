"""Earlier changes like this request: BM25 over the project's commit messages, whose files
vote for the ranking (`knowledge.index.git_history` reads them from git).

A request resembles past commits ("add the X file type" after "add the Y file type"), and
those commits' files are where it will likely land. The best `TOP_COMMITS` commits vote: each
gives its files its score divided by the square root of how many files it changed (a commit
about one file says more about that file). The index follows HEAD, checked at most every
`REFRESH_S` off the query path: when HEAD moves (a commit, a branch switch, a rewind) only
the commits that entered its window are read and indexed, those that left it dropped.

The index is held as arrays (`freeze` returns them, a snapshot maps them back): the window's
commits, newest first, and which are indexed (the others change no file or too many); per
indexed commit its length in words and its files; the postings (term -> commits, counts).
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np

from knowledge.index.git_history import Commit, head, read_commits, window
from knowledge.recall import postings
from knowledge.recall.postings import DEAD, FrozenPostings, Postings, bm25_idf
from knowledge.recall.snapshot import Strings
from knowledge.recall.tokens import terms

TOP_COMMITS = 20
REFRESH_S = 60.0
K1, B = 1.2, 0.75
SUBJECT_WEIGHT = 2  # a commit's subject says what it did; its body, how


class HistoryIndex:
    def __init__(
        self, root: Path, arrays: dict[str, np.ndarray] | None = None, head_sha: str | None = None
    ) -> None:
        """`arrays` (from `freeze`) hold the history `head_sha` reaches."""
        self.root = root
        self._head = head_sha
        self._checked = 0.0
        self._lock = threading.Lock()
        self._load(_joined(None, np.zeros(0, np.int64), [], [], []) if arrays is None else arrays)

    def _load(self, arrays: dict[str, np.ndarray]) -> None:
        length = arrays["history.length"]
        norm = K1 * (1 - B + B * length / max(1.0, float(length.mean()))) if len(length) else length
        with self._lock:
            self._arrays, self._norm = arrays, norm
            self._postings = FrozenPostings(arrays, "history")
            self._files = Strings(arrays["history.files"], arrays["history.file_offsets"])

    def __len__(self) -> int:
        return len(self._norm)

    def refresh(self) -> bool:
        """Follow HEAD if it moved (blocking: git runs). True when the index changed."""
        self._checked = time.monotonic()
        current = head(self.root)
        if current == self._head:
            return False
        arrays = updated(self.root, self._arrays, current)
        if arrays is None:  # git failed: the index stays as it was, and is tried again
            return False
        self._load(arrays)
        self._head = current
        return True

    @property
    def stale(self) -> bool:
        return time.monotonic() - self._checked > REFRESH_S

    @property
    def head(self) -> str:
        return self._head or ""

    def freeze(self) -> dict[str, np.ndarray]:
        """The index as arrays (see `FrozenHistoryIndex`)."""
        with self._lock:
            return self._arrays

    def votes(self, weights: dict[str, float]) -> dict[str, float]:
        """path -> its votes from the commits most like the request (weighted terms)."""
        with self._lock:
            found_postings, files, norm = self._postings, self._files, self._norm
        n = len(norm)
        if not n:
            return {}
        scores = np.zeros(n)
        for term, weight in weights.items():
            found = found_postings.get(term)
            if found is None:
                continue
            ids, tfs = found[0], found[1].astype(np.float64)
            idf = bm25_idf(n, len(ids))
            scores[ids] += weight * idf * tfs * (K1 + 1.0) / (tfs + norm[ids])
        best = np.flatnonzero(scores)
        if len(best) > TOP_COMMITS:
            best = best[np.argpartition(-scores[best], TOP_COMMITS)[:TOP_COMMITS]]
        out: dict[str, float] = {}
        for i in best.tolist():
            # One line per file (a path with a newline in it splits into paths no index
            # holds: they vote for nothing).
            changed = files[i].split("\n")
            share = float(scores[i]) / math.sqrt(len(changed))
            for path in changed:
                out[path] = out.get(path, 0.0) + share
        return out


class FrozenHistoryIndex(HistoryIndex):
    """A `HistoryIndex` read back from a snapshot: votes exactly as the live one that froze
    it, runs no git, never refreshes (a one-shot command updates the snapshot first)."""

    def __init__(self, root: Path, arrays: dict[str, np.ndarray], head_sha: str) -> None:
        super().__init__(root, arrays, head_sha)
        self._checked = float("inf")

    def refresh(self) -> bool:
        return False

    @property
    def stale(self) -> bool:
        return False


def updated(
    root: Path, arrays: dict[str, np.ndarray] | None, at: str
) -> dict[str, np.ndarray] | None:
    """The index of the commits `at` reaches ("" for none), from `arrays` (an earlier
    index, or None) and the commits new to the window, read from git: the same arrays an
    index built from nothing would hold. None when git could not tell."""
    shas = window(root, at) if at else []
    if shas is None:
        return None
    old = Strings(arrays["history.shas"], arrays["history.sha_offsets"]).all() if arrays else []
    known = dict(zip(old, arrays["history.slot"].tolist(), strict=True)) if arrays else {}
    read = read_commits(root, [s for s in shas if s not in known])
    if read is None:
        return None
    renumber = np.full(len(arrays["history.length"]) if arrays else 0, DEAD, np.int64)
    slots: list[int] = []  # per commit of the window: its number, or DEAD when left out
    fresh: list[tuple[int, Commit]] = []
    number = 0
    for sha in shas:
        was, commit = known.get(sha, DEAD), read.get(sha)
        if was != DEAD:
            renumber[was] = number
        elif commit is not None:
            fresh.append((number, commit))
        else:  # left out: it changed no file, or too many
            slots.append(DEAD)
            continue
        slots.append(number)
        number += 1
    return _joined(arrays, renumber, fresh, shas, slots)


def _joined(
    arrays: dict[str, np.ndarray] | None,
    renumber: np.ndarray,
    fresh: list[tuple[int, Commit]],
    shas: list[str],
    slots: list[int],
) -> dict[str, np.ndarray]:
    """The earlier index's commits at their new numbers (`renumber`) and the fresh ones."""
    count = sum(s != DEAD for s in slots)
    index = Postings("i")
    length = np.zeros(count, np.float64)
    files = [""] * count
    for number, commit in fresh:
        subject, _, body = commit.text.partition("\n")
        counts = Counter(terms(subject) * SUBJECT_WEIGHT + terms(body))
        length[number] = sum(counts.values())
        files[number] = "\n".join(commit.files)
        index.add(number, counts.items())
    parts = [(index.export("history"), np.arange(count, dtype=np.int64))]
    if arrays is not None:
        kept = renumber != DEAD
        length[renumber[kept]] = arrays["history.length"][kept]
        old = Strings(arrays["history.files"], arrays["history.file_offsets"]).all()
        for was, number in enumerate(renumber.tolist()):
            if number != DEAD:
                files[number] = old[was]
        parts.insert(0, (arrays, renumber))
    out = postings.merge(parts, "history")
    out["history.shas"], out["history.sha_offsets"] = Strings.pack(shas)
    out["history.slot"] = np.array(slots, np.int32)
    out["history.length"] = length
    out["history.files"], out["history.file_offsets"] = Strings.pack(files)
    return out
