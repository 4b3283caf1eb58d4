"""Earlier changes like this request: BM25 over the project's commit messages, whose files
vote for the ranking (`knowledge.history` reads them from git).

A request resembles past commits ("add the X file type" after "add the Y file type"), and
those commits' files are where it will likely land. The best `TOP_COMMITS` commits vote: each
gives its files its score divided by the square root of how many files it changed (a commit
about one file says more about that file). The index is rebuilt when HEAD moves, at most
every `REFRESH_S`, off the query path.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from knowledge.history import Commit, head, read_history
from knowledge.recall.postings import bm25_idf
from knowledge.recall.snapshot import Strings
from knowledge.recall.tokens import terms

TOP_COMMITS = 20
REFRESH_S = 60.0
K1, B = 1.2, 0.75
SUBJECT_WEIGHT = 2  # a commit's subject says what it did; its body, how


class HistoryIndex:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._head: str | None = None
        self._checked = 0.0
        self._commits: Sequence[Commit] = []
        self._postings: Mapping[str, tuple[np.ndarray, np.ndarray]] = {}
        self._norm = np.zeros(0)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._commits)

    def refresh(self) -> bool:
        """Re-read the history if HEAD moved (blocking: git runs). True when rebuilt."""
        self._checked = time.monotonic()
        current = head(self.root)
        if current == self._head:
            return False
        commits = read_history(self.root) if current else []
        postings: dict[str, tuple[list[int], list[int]]] = {}
        lengths = []
        for i, commit in enumerate(commits):
            subject, _, body = commit.text.partition("\n")
            counts = Counter(terms(subject) * SUBJECT_WEIGHT + terms(body))
            lengths.append(sum(counts.values()))
            for term, n in counts.items():
                ids, tfs = postings.setdefault(term, ([], []))
                ids.append(i)
                tfs.append(n)
        arrays = {t: (np.array(ids, np.int32), np.array(tfs, np.float64))
                  for t, (ids, tfs) in postings.items()}
        length = np.array(lengths, np.float64)
        norm = K1 * (1 - B + B * length / max(1.0, float(length.mean()))) if len(length) else length
        with self._lock:
            self._head, self._commits, self._postings, self._norm = current, commits, arrays, norm
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
            commits, postings, norm = self._commits, self._postings, self._norm
        names = sorted(postings)
        blob, offsets = Strings.pack(names)
        starts = np.zeros(len(names) + 1, np.int64)
        np.cumsum([len(postings[t][0]) for t in names], out=starts[1:])
        empty_ids, empty_tfs = np.zeros(0, np.int32), np.zeros(0, np.float64)
        # One string per commit, its files a line each (a path with a newline in it would
        # split into paths no index holds: they vote for nothing).
        files_blob, file_offsets = Strings.pack("\n".join(c.files) for c in commits)
        return {
            "history.terms": blob, "history.term_offsets": offsets, "history.starts": starts,
            "history.ids": np.concatenate([postings[t][0] for t in names] or [empty_ids]),
            "history.tfs": np.concatenate([postings[t][1] for t in names] or [empty_tfs]),
            "history.norm": np.asarray(norm, np.float64),
            "history.files": files_blob, "history.file_offsets": file_offsets,
        }

    def votes(self, weights: dict[str, float]) -> dict[str, float]:
        """path -> its votes from the commits most like the request (weighted terms)."""
        with self._lock:
            commits, postings, norm = self._commits, self._postings, self._norm
        n = len(commits)
        if not n:
            return {}
        scores = np.zeros(n)
        for term, weight in weights.items():
            found = postings.get(term)
            if found is None:
                continue
            ids, tfs = found
            idf = bm25_idf(n, len(ids))
            scores[ids] += weight * idf * tfs * (K1 + 1.0) / (tfs + norm[ids])
        best = np.flatnonzero(scores)
        if len(best) > TOP_COMMITS:
            best = best[np.argpartition(-scores[best], TOP_COMMITS)[:TOP_COMMITS]]
        out: dict[str, float] = {}
        for i in best.tolist():
            files = commits[i].files
            share = float(scores[i]) / math.sqrt(len(files))
            for path in files:
                out[path] = out.get(path, 0.0) + share
        return out


class FrozenHistoryIndex(HistoryIndex):
    """A `HistoryIndex` read back from a snapshot: votes exactly as the live one that froze
    it, runs no git, never refreshes (a one-shot command rebuilds when HEAD moved)."""

    def __init__(self, root: Path, arrays: dict[str, np.ndarray], head_sha: str) -> None:
        super().__init__(root)
        # Read on demand: a one-shot command looks up a handful of terms and 20 commits.
        self._postings = _FrozenPostings(
            Strings(arrays["history.terms"], arrays["history.term_offsets"]),
            arrays["history.starts"], arrays["history.ids"], arrays["history.tfs"])
        self._norm = arrays["history.norm"]
        self._commits = _FrozenCommits(
            Strings(arrays["history.files"], arrays["history.file_offsets"]))
        self._head = head_sha
        self._checked = float("inf")

    def refresh(self) -> bool:
        return False

    @property
    def stale(self) -> bool:
        return False


class _FrozenPostings(Mapping[str, tuple[np.ndarray, np.ndarray]]):
    """term -> (commit ids, term frequencies), sliced out of the snapshot's arrays."""

    def __init__(self, names: Strings, starts: np.ndarray, ids: np.ndarray, tfs: np.ndarray
                 ) -> None:
        self._names, self._starts, self._ids, self._tfs = names, starts, ids, tfs

    def __getitem__(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        i = self._names.find(term)  # `freeze` wrote the terms sorted
        if i < 0:
            raise KeyError(term)
        start, end = int(self._starts[i]), int(self._starts[i + 1])
        return self._ids[start:end], self._tfs[start:end]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class _FrozenCommits(Sequence[Commit]):
    """The snapshot's commits, as much as votes need of them: their files."""

    def __init__(self, files: Strings) -> None:
        self._files = files

    def __getitem__(self, i: int) -> Commit:  # type: ignore[override]
        files = self._files[i]
        return Commit("", 0, "", tuple(files.split("\n")) if files else ())

    def __len__(self) -> int:
        return len(self._files)
