"""Words in file contents: BM25 over the indexed files' text, the strongest single signal.

Labels only hold names, signatures and first doc lines; a request mostly uses words that
appear in code and comments. Every file the graph holds is read (ignored, secret, binary and
oversized files stay unread, and never lockfiles), but rarity (IDF) and the average length
come from the files of the kinds the request wants (`kinds.wanted_kinds`): tests and docs
repeat the code's words, and counting them would make the code's own words look common.

Postings are append-only arrays (`postings`): a changed file takes a new slot, its old one
dies. The index follows the same `NodeTracker` deltas as the lexical index and reads pending
files within a time budget per call, so a cold start never blocks a turn; `read` with no
deadline (or `Recaller.warm`) reads everything.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from knowledge.graph import Node
from knowledge.recall import postings
from knowledge.recall.kinds import CODES, KINDS, kind_of
from knowledge.recall.postings import DEAD, Postings, grow
from knowledge.recall.tokens import STOPWORDS, fold, split_words

MAX_FILE_BYTES = 512 * 1024
CANDIDATES = 400  # files a search returns (the fusion keeps its best 150)
K1 = 1.5
B = 0.75
_LOCKFILES = frozenset(
    {"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock", "bun.lockb", "go.sum",
     "cargo.lock", "poetry.lock", "pipfile.lock", "uv.lock", "composer.lock", "gemfile.lock"}
)


def file_terms(text: str) -> Counter[str]:
    return Counter(fold(w) for w in split_words(text) if len(w) > 1 and w not in STOPWORDS)


@dataclass
class ContentMatch:
    """BM25 (raw, summed over the request's weighted terms) of the best `CANDIDATES` files
    by BM25 times their kind's factor, the best raw BM25 of all, and per path the share of
    the request's IDF mass (as the caller weighs its words) whose words the file holds."""

    scores: dict[str, float]
    found: dict[str, float]
    idf: dict[str, float]
    best: float = 0.0


class ContentIndex:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.complete = False
        self._pending: dict[str, Node] = {}  # file nodes whose text is not read yet
        self._slot: dict[str, int] = {}  # path -> live slot
        self._nodes: list[Node | None] = []  # slot -> node (None once dead)
        self._kind = np.zeros(0, np.int8)  # slot -> kind code, DEAD when dead
        self._length = np.zeros(0, np.float32)
        self._postings = Postings("i")  # term -> (slots, counts)
        self._dead = 0
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._slot)

    def apply(self, changed: list[Node], gone: list[Node]) -> None:
        """Follow a `NodeTracker` delta: changed file nodes wait in `pending` to be read."""
        with self.lock:
            for node in gone:
                if node.kind != "file":
                    continue
                slot = self._slot.get(node.path)
                if slot is not None and self._nodes[slot] is node:
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
                self._add(path, node, file_terms(self._read(node)))
                del self._pending[path]
            if self._dead > max(postings.COMPACT_MIN, len(self._slot)):
                self._compact()
            self.complete = not self._pending
            return self.complete

    def _add(self, path: str, node: Node, counts: Counter[str]) -> None:
        slot = len(self._nodes)
        self._nodes.append(node)
        self._kind = grow(self._kind, slot + 1, DEAD)
        self._length = grow(self._length, slot + 1, 0.0)
        self._kind[slot] = CODES[kind_of(path)]
        self._length[slot] = sum(counts.values())
        self._slot[path] = slot
        self._postings.add(slot, counts.items())

    def _drop(self, path: str) -> None:
        slot = self._slot.pop(path, None)
        if slot is None:
            return
        self._nodes[slot] = None
        self._kind[slot] = DEAD
        self._length[slot] = 0.0
        self._dead += 1

    def _compact(self) -> None:
        """Renumber the living slots and drop the dead ones' postings."""
        live = np.flatnonzero(self._kind[: len(self._nodes)] != DEAD)
        renumber = np.full(len(self._nodes), DEAD, np.int64)
        renumber[live] = np.arange(len(live))
        self._postings.compact(renumber)
        self._nodes = [self._nodes[i] for i in live]
        self._kind = self._kind[live].copy()
        self._length = self._length[live].copy()
        self._slot = {n.path: i for i, n in enumerate(self._nodes) if n is not None}
        self._dead = 0

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

    def search(self, weights: dict[str, float], wanted: tuple[str, ...], factors: np.ndarray,
               mass: dict[str, float], path_prefix: str | None = None) -> ContentMatch:
        """BM25 of the files for the weighted request terms (IDF and average length over the
        files of the `wanted` kinds; `factors` by kind code choose the candidates), and each
        file's share of `mass` (term -> weight)."""
        with self.lock:
            return self._search(weights, wanted, factors, mass, path_prefix)

    def _search(self, weights: dict[str, float], wanted: tuple[str, ...], factors: np.ndarray,
                mass: dict[str, float], path_prefix: str | None) -> ContentMatch:
        size = len(self._nodes)
        if not self._slot or not weights:
            return ContentMatch({}, {}, {})
        kinds = self._kind[:size]
        mask = np.zeros(len(KINDS) + 1, bool)  # index DEAD (-1) is the last entry: False
        mask[[CODES[k] for k in wanted]] = True
        in_wanted = mask[kinds]
        n = int(in_wanted.sum()) or len(self._slot)
        lengths = self._length[:size]
        avg = max(1.0, float(lengths[in_wanted].sum()) / n if in_wanted.any()
                  else float(lengths.sum()) / len(self._slot))
        norm = K1 * (1.0 - B + B * lengths / avg)
        scores = np.zeros(size, np.float64)
        found = np.zeros(size, np.float64)
        idf: dict[str, float] = {}
        for term, weight in weights.items():
            stored = self._postings.get(term)
            if stored is None:
                idf[term] = math.log(1.0 + (n + 0.5) / 0.5)  # absent: counts as rare
                continue
            ids, counts = stored
            alive = kinds[ids] != DEAD
            ids, tfs = ids[alive], counts[alive].astype(np.float64)
            df = int(in_wanted[ids].sum())
            idf[term] = w_idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            scores[ids] += weight * w_idf * tfs * (K1 + 1.0) / (tfs + norm[ids])
            found[ids] += mass.get(term, 0.0)
        total = sum(mass.values()) or 1.0
        if path_prefix:
            outside = [s for p, s in self._slot.items() if not p.startswith(path_prefix)]
            scores[outside] = 0.0
        ranked = scores * factors[kinds]
        hit = np.flatnonzero(ranked)
        if len(hit) > CANDIDATES:
            hit = hit[np.argpartition(-ranked[hit], CANDIDATES)[:CANDIDATES]]
        out: dict[str, float] = {}
        share: dict[str, float] = {}
        for slot in hit.tolist():
            node = self._nodes[slot]
            if node is not None:
                out[node.path] = float(scores[slot])
                share[node.path] = float(found[slot]) / total
        return ContentMatch(out, share, idf, float(scores.max(initial=0.0)))
