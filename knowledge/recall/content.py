"""Words in file contents: a BM25 index over the indexed files' text.

Labels only hold names, signatures and first doc lines; a request often uses words that appear
only in code or comments. This index covers them, and is also the fallback when no label
matches: recall is never empty when the repository plainly contains the words.

Only files the graph holds are read (ignored, secret, binary and oversized files stay unread),
plus never lockfiles. The index follows the same `NodeTracker` deltas as the lexical index and
reads pending files within a time budget per call, so a cold start never blocks a turn; `read`
with no deadline (or `Recaller.warm`) reads everything.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from knowledge.graph import Node
from knowledge.recall.tokens import STOPWORDS, fold, split_words

MAX_FILE_BYTES = 512 * 1024
MAX_TERMS = 3000  # distinct terms kept per file
K1 = 1.2
B = 0.75
_LOCKFILES = frozenset(
    {"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock", "bun.lockb", "go.sum",
     "cargo.lock", "poetry.lock", "pipfile.lock", "uv.lock", "composer.lock", "gemfile.lock"}
)


@dataclass(slots=True)
class _File:
    node: Node
    tf: dict[str, int]
    length: int


def file_terms(text: str) -> Counter[str]:
    return Counter(fold(w) for w in split_words(text) if len(w) > 1 and w not in STOPWORDS)


class ContentIndex:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.complete = False
        self._pending: dict[str, Node] = {}  # file nodes whose text is not read yet
        self._files: dict[str, _File] = {}
        self._postings: dict[str, dict[str, int]] = {}
        self._total_length = 0
        self.lock = threading.Lock()

    def apply(self, changed: list[Node], gone: list[Node]) -> None:
        """Follow a `NodeTracker` delta: changed file nodes wait in `pending` to be read."""
        with self.lock:
            for node in gone:
                if node.kind == "file":
                    known = self._files.get(node.path)
                    if known is not None and known.node is node:
                        self._drop(node.path)
                    if self._pending.get(node.path) is node:
                        del self._pending[node.path]
            for node in changed:
                if node.kind == "file":
                    self._pending[node.path] = node
            self.complete = not self._pending

    def read(self, deadline: float | None = None) -> bool:
        """Read pending files until `deadline` (perf_counter); True when none is left.
        Safe from several threads; never needs the graph's lock."""
        with self.lock:
            for path, node in list(self._pending.items()):
                if deadline is not None and time.perf_counter() > deadline:
                    break
                self._drop(path)
                self._add(path, node)
                del self._pending[path]
            self.complete = not self._pending
            return self.complete

    def _add(self, path: str, node: Node) -> None:
        counts = file_terms(self._read(node))
        if len(counts) > MAX_TERMS:
            counts = Counter(dict(counts.most_common(MAX_TERMS)))
        length = sum(counts.values())
        self._files[path] = _File(node, dict(counts), length)
        self._total_length += length
        for term, n in counts.items():
            self._postings.setdefault(term, {})[path] = n

    def _drop(self, path: str) -> None:
        known = self._files.pop(path, None)
        if known is None:
            return
        self._total_length -= known.length
        for term in known.tf:
            posting = self._postings.get(term)
            if posting is not None:
                posting.pop(path, None)
                if not posting:
                    del self._postings[term]

    def _read(self, node: Node) -> str:
        name = node.path.rsplit("/", 1)[-1].lower()
        if node.status == "skipped" or name in _LOCKFILES:  # too large, minified, binary
            return ""
        if int(node.data.get("size", 0) or 0) > MAX_FILE_BYTES:
            return ""
        try:
            with open(self.root / node.path, "rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
        except OSError:
            return ""
        if len(data) > MAX_FILE_BYTES or b"\0" in data[:4096]:
            return ""
        return node.path + "\n" + data.decode("utf-8", errors="replace")

    def search(self, query: list[str], path_prefix: str | None = None) -> dict[str, float]:
        """path -> BM25 score divided by its maximum for this query, so in [0, 1]."""
        with self.lock:
            return self._search(query, path_prefix)

    def _search(self, query: list[str], path_prefix: str | None) -> dict[str, float]:
        n = len(self._files)
        if not n or not query:
            return {}
        avg = max(1.0, self._total_length / n)
        # A word absent from every file counts as a rare one: it dilutes the score.
        df = {t: max(1, len(self._postings.get(t, ()))) for t in query}
        idf = {t: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        top = sum(idf.values()) * (K1 + 1.0) or 1.0
        out: dict[str, float] = {}
        for term, weight in idf.items():
            for path, tf in self._postings.get(term, {}).items():
                if path_prefix and not path.startswith(path_prefix):
                    continue
                norm = K1 * (1.0 - B + B * self._files[path].length / avg)
                out[path] = out.get(path, 0.0) + weight * tf * (K1 + 1.0) / (tf + norm)
        return {p: min(1.0, s / top) for p, s in out.items()}
