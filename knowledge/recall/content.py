"""Words in file contents: BM25 over the indexed files' text and over their passages.

Labels only hold names, signatures and first doc lines; a request mostly uses words that
appear in code and comments. Every file the graph holds is read (`filetext`: ignored, secret,
binary and oversized files stay unread, and never lockfiles), and each is kept as its passages
(runs of 30 lines). Two scores come from the same postings: the file's BM25 (its passages'
counts summed) and its best passage's BM25, since a change usually lives in one place of a
long file. Rarity (IDF) and the average length come from the files (and passages) of the
kinds the request wants (`kinds.wanted_kinds`): tests and docs repeat the code's words, and
counting them would make the code's own words look common.

Postings are append-only arrays by passage slot (`postings`), and by file slot (the term's
count in the file, and in how many of its passages it is): a changed file takes new slots,
its old ones die. The index follows the same `NodeTracker` deltas as the lexical index and
reads pending files within a time budget per call, so a cold start never blocks a turn;
`read` with no deadline (or `Recaller.warm`) reads everything. Frozen, the files take slots in
the order their nodes came (a file node's slot among the lexical index's file nodes).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from knowledge.core.filetext import PASSAGE_LINES, passage_runs, read_text
from knowledge.core.graph import Node
from knowledge.core.redact import redact
from knowledge.recall import postings
from knowledge.recall.kinds import CODES, KINDS, kind_of
from knowledge.recall.postings import (
    CANDIDATES,
    DEAD,
    FrozenPostings,
    LayeredPostings,
    Postings,
    bm25_idf,
    grow,
)
from knowledge.recall.snapshot import Strings
from knowledge.recall.tokens import line_terms, located_runs, run_terms, term_counts

if TYPE_CHECKING:
    from concurrent.futures import Executor

log = logging.getLogger(__name__)

K1 = 1.5
B = 0.75
PREFIXED = 4  # words a term of `line_counts` stands for (itself included)
# Per term, the lines holding it and the count on each (`line_counts`).
LineCounts = dict[str, tuple[np.ndarray, np.ndarray]]
_CHUNK = 48  # files a worker reads per task


@dataclass(slots=True)
class Counted:
    """A file's words as the index counts them: each passage's terms and their counts, the
    passages end to end (`ends`: where each one's terms end), and the file's terms with their
    counts and the number of passages holding each. Plain lists: a worker process sends
    them back cheaply."""

    terms: list[str]
    counts: list[int]
    masks: list[int]  # per entry of `terms`: the passage's lines holding it (`term_lines`)
    ends: list[int]
    starts: list[int]  # each passage's first line (from 1)
    file_terms: list[str]
    file_counts: list[int]
    file_passages: list[int]


# A file node's path, recorded size, and whether it was skipped.
Source = tuple[str, int, bool]


def counted(path: str, text: str) -> Counted:
    terms: list[str] = []
    counts: list[int] = []
    masks: list[int] = []
    ends: list[int] = []
    starts: list[int] = []
    in_file: Counter[str] = Counter()
    in_passages: Counter[str] = Counter()
    for at, found, where in _passage_terms(path, text):
        in_file.update(found)
        in_passages.update(found.keys())
        terms.extend(found.keys())
        counts.extend(found.values())
        masks.extend(where.get(t, 0) for t in found)
        ends.append(len(terms))
        starts.append(at + 1)
    held = list(in_file)
    return Counted(
        terms,
        counts,
        masks,
        ends,
        starts,
        held,
        [in_file[t] for t in held],
        [in_passages[t] for t in held],
    )


def _passage_terms(path: str, text: str) -> Iterator[tuple[int, Counter[str], dict[str, int]]]:
    """Each passage's first line (from 0), its terms' counts and their lines (`line_terms`);
    the path is part of the file's text, counted once, with the first passage."""
    lines = text.splitlines()
    for i, (at, _) in enumerate(passage_runs(text)):
        found, where = line_terms(lines[at : at + PASSAGE_LINES])
        if i == 0:
            found.update(term_counts(path))
        yield at, found, where


def frozen_texts(texts: list[tuple[str, str]]) -> dict[str, np.ndarray]:
    """What `freeze` writes of an index that read these files (path, text as `_text` reads
    it), in this order, built as arrays at once: what a parse worker counts of the files it
    read, for `assemble` to place in the snapshot. The words are found and counted in bulk
    (`located_runs`, numpy), with a Python step per distinct run, not per word."""
    runs, run, file, line = located_runs([text for _, text in texts])
    starts, passages, passage = _passages(texts, file, line)
    each = list(map(run_terms, runs))
    words = list(chain.from_iterable(each))
    paths = [term_counts(path) for path, _ in texts]
    vocab = sorted({*words, *chain.from_iterable(paths)})
    code = dict(zip(vocab, range(len(vocab)), strict=True))
    # Each word's terms (a run makes none to a few), on the word's passage and line...
    many = np.fromiter(map(len, each), np.int64, len(each))
    times = many[run]
    nth = np.arange(int(times.sum())) - np.repeat(np.cumsum(times) - times, times)
    flat = np.fromiter(map(code.__getitem__, words), np.int64, len(words))
    in_text = flat[np.repeat((np.cumsum(many) - many)[run], times) + nth]
    # ...then each file's path, counted once with its first passage, on no line.
    in_path = np.fromiter(map(code.__getitem__, chain.from_iterable(paths)), np.int64)
    first = np.cumsum(passages, dtype=np.int64) - np.array(passages, np.int64)
    term = np.concatenate([in_text, in_path])
    slot = np.concatenate([np.repeat(passage, times), np.repeat(first, list(map(len, paths)))])
    bits = np.concatenate(
        [np.repeat(np.left_shift(1, line % PASSAGE_LINES), times), np.zeros_like(in_path)]
    )
    weight = np.concatenate(
        [
            np.ones_like(in_text),
            np.fromiter(chain.from_iterable(p.values() for p in paths), np.int64),
        ]
    )
    # One entry per (passage, term): its count and its lines as a bitmask.
    key = slot * max(len(vocab), 1) + term
    order = np.argsort(key)
    key = key[order]
    cut = np.flatnonzero(np.diff(key, prepend=-1))
    passage, term = np.divmod(key[cut], max(len(vocab), 1))
    count = np.add.reduceat(weight[order], cut) if len(cut) else weight[:0]
    masks = np.bitwise_or.reduceat(bits[order], cut) if len(cut) else bits[:0]
    owner = np.repeat(np.arange(len(texts), dtype=np.int32), passages)
    passage_length = np.bincount(passage, weights=count, minlength=len(starts))
    # A file's terms: its passages' entries summed by (file, term).
    pairs, entry = np.unique(owner[passage] * max(len(vocab), 1) + term, return_inverse=True)
    file, file_term = np.divmod(pairs, max(len(vocab), 1))
    arrays = {
        **postings.exported(vocab, term, passage, {"content": count, "content.lines": masks}),
        **postings.exported(
            vocab,
            file_term,
            file,
            {
                "content.file": np.bincount(entry, weights=count),
                "content.file_passages": np.bincount(entry),
            },
        ),
    }
    arrays["content.paths"], arrays["content.path_offsets"] = Strings.pack(p for p, _ in texts)
    arrays["content.kind"] = np.array([CODES[kind_of(p)] for p, _ in texts], np.int8)
    arrays["content.length"] = np.bincount(
        owner, weights=passage_length, minlength=len(texts)
    ).astype(np.float32)
    arrays["content.owner"] = owner
    arrays["content.passage_length"] = passage_length.astype(np.float32)
    arrays["content.passage_line"] = np.array(starts, np.int32)
    return arrays


def _passages(
    texts: list[tuple[str, str]], file: np.ndarray, line: np.ndarray
) -> tuple[list[int], list[int], np.ndarray]:
    """The texts' passages (`passage_runs`), numbered through them: each one's first line
    (from 1), each text's count of them, and the passage of each word (its `file`, `line`)."""
    starts: list[int] = []
    passages: list[int] = []
    first: list[int] = []  # per text: where its blocks start in `blocks`
    blocks: list[int] = []  # per run of PASSAGE_LINES lines: its passage (blank: none)
    for _, text in texts:
        kept = [at for at, _ in passage_runs(text)]
        first.append(len(blocks))
        held = [-1] * (kept[-1] // PASSAGE_LINES + 1)
        for at in kept:  # a blank block holds no word: it is never looked up
            held[at // PASSAGE_LINES] = len(starts)
            starts.append(at + 1)
        blocks.extend(held)
        passages.append(len(kept))
    at = np.array(first, np.int64)[file] + line // PASSAGE_LINES
    return starts, passages, np.array(blocks, np.int64)[at]


def _text(root: Path, source: Source) -> str:
    path, size, skipped = source
    if skipped:  # too large, minified, binary: a file node only
        return ""
    # What the index keeps (and its snapshot on disk) holds no secret-shaped value.
    return redact(read_text(root, path, size) or "")


def _counted_chunk(root: str, sources: list[Source]) -> list[Counted]:
    """In a worker process: `counted` for each file."""
    return [counted(source[0], _text(Path(root), source)) for source in sources]


@dataclass
class ContentMatch:
    """For the best `CANDIDATES` files by BM25 times their kind's factor: their BM25 (raw,
    summed over the request's weighted terms), their best passage's BM25, and the share of
    the request's IDF mass (as the caller weighs its words) whose words the file holds; and
    the best raw BM25 over all files and the best passage BM25 over those candidates."""

    scores: dict[str, float]
    passages: dict[str, float]
    found: dict[str, float]
    best: float = 0.0
    best_passage: float = 0.0


class ContentIndex:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.complete = False
        self._pending: dict[str, Node] = {}  # file nodes whose text is not read yet
        self._slot: dict[str, int] = {}  # path -> live file slot
        self._nodes: list[Node | None] = []  # file slot -> node (None once dead)
        self._kind = np.zeros(0, np.int8)  # file slot -> kind code, DEAD when dead
        self._length = np.zeros(0, np.float32)  # file slot -> words
        self._owner = np.zeros(0, np.int32)  # passage slot -> file slot
        self._passage_length = np.zeros(0, np.float32)
        self._passage_line = np.zeros(0, np.int32)  # passage slot -> its first line
        self._passages = 0  # passage slots used
        self._postings = Postings("i")  # term -> (passage slots, counts)
        # term -> (passage slots, the lines holding it): the same slots as `_postings`.
        self._lines = Postings("i")
        self._file_counts = Postings("i")  # term -> (file slots, counts)
        self._file_passages = Postings("i")  # term -> (file slots, passages holding it)
        self._dead = 0  # dead file slots
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, path: object) -> bool:
        return path in self._slot

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
                self._take(path, node, counted(path, _text(self.root, self._source(node))))
            if self._dead > max(postings.COMPACT_MIN, len(self._slot)):
                self._compact()
            self.complete = not self._pending
            return self.complete

    @property
    def pending(self) -> int:
        """Files not read yet."""
        return len(self._pending)

    def read_in(self, run: Executor) -> None:
        """Read the pending files in the worker processes of `run`, taking each one's counts
        in as they come, in order; what the pool fails to read stays pending (`read`)."""
        from concurrent.futures.process import BrokenProcessPool

        with self.lock:
            pending = list(self._pending.items())
            sources = [self._source(node) for _, node in pending]
            chunks = [sources[i : i + _CHUNK] for i in range(0, len(sources), _CHUNK)]
            try:
                found = run.map(_counted_chunk, [str(self.root)] * len(chunks), chunks)
                results = (counts for batch in found for counts in batch)
                for (path, node), counts in zip(pending, results, strict=False):
                    if self._pending.get(path) is node:  # not changed meanwhile
                        self._take(path, node, counts)
            except (OSError, ValueError, BrokenProcessPool) as exc:
                log.warning("reading files in one process: the process pool failed (%s)", exc)

    def _source(self, node: Node) -> Source:
        size = int(node.data.get("size", 0) or 0)
        return node.path, size, node.status == "skipped"

    def _take(self, path: str, node: Node, counts: Counted) -> None:
        self._drop(path)
        self._add(path, node, counts)
        del self._pending[path]

    def _add(self, path: str, node: Node, counts: Counted) -> None:
        slot = len(self._nodes)
        self._nodes.append(node)
        self._kind = grow(self._kind, slot + 1, DEAD)
        self._length = grow(self._length, slot + 1, 0.0)
        self._kind[slot] = CODES[kind_of(path)]
        self._slot[path] = slot
        words = start = 0
        for k, end in enumerate(counts.ends):
            at = self._passages
            self._passages += 1
            self._owner = grow(self._owner, at + 1, 0)
            self._passage_length = grow(self._passage_length, at + 1, 0.0)
            self._passage_line = grow(self._passage_line, at + 1, 0)
            self._owner[at] = slot
            self._passage_line[at] = counts.starts[k]
            values = counts.counts[start:end]
            self._passage_length[at] = length = sum(values)
            words += length
            held = counts.terms[start:end]
            self._postings.add(at, zip(held, values, strict=True))
            self._lines.add(at, zip(held, counts.masks[start:end], strict=True))
            start = end
        self._file_counts.add(slot, zip(counts.file_terms, counts.file_counts, strict=True))
        self._file_passages.add(slot, zip(counts.file_terms, counts.file_passages, strict=True))
        self._length[slot] = words

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
        files = np.full(len(self._nodes), DEAD, np.int64)
        files[live] = np.arange(len(live))
        owner = self._owner[: self._passages]
        kept = np.flatnonzero(files[owner] != DEAD)
        renumber = np.full(self._passages, DEAD, np.int64)
        renumber[kept] = np.arange(len(kept))
        self._postings.compact(renumber)
        self._lines.compact(renumber)
        self._file_counts.compact(files)
        self._file_passages.compact(files)
        self._owner = files[owner[kept]].astype(np.int32)
        self._passage_length = self._passage_length[kept].copy()
        self._passage_line = self._passage_line[kept].copy()
        self._passages = len(kept)
        self._nodes = [self._nodes[i] for i in live]
        self._kind = self._kind[live].copy()
        self._length = self._length[live].copy()
        self._slot = {n.path: i for i, n in enumerate(self._nodes) if n is not None}
        self._dead = 0

    def search(
        self,
        weights: dict[str, float],
        wanted: tuple[str, ...],
        factors: np.ndarray,
        mass: dict[str, float],
        path_prefix: str | None = None,
    ) -> ContentMatch:
        """BM25 of the files for the weighted request terms (IDF and average length over the
        files of the `wanted` kinds; `factors` by kind code choose the candidates), and each
        file's share of `mass` (term -> weight)."""
        with self.lock:
            return self._search(weights, wanted, factors, mass, path_prefix)

    def _search(
        self,
        weights: dict[str, float],
        wanted: tuple[str, ...],
        factors: np.ndarray,
        mass: dict[str, float],
        path_prefix: str | None,
    ) -> ContentMatch:
        size, count = self._size(), self._passages
        if not self._slot or not weights:
            return ContentMatch({}, {}, {})
        kinds = self._kind[:size]
        mask = np.zeros(len(KINDS) + 1, bool)  # index DEAD (-1) is the last entry: False
        mask[[CODES[k] for k in wanted]] = True
        in_wanted = mask[kinds]
        if not in_wanted.any():
            in_wanted = kinds != DEAD
        owner = self._owner[:count]
        passage_wanted = in_wanted[owner]
        n, n_passages = int(in_wanted.sum()), int(passage_wanted.sum())
        lengths, passage_lengths = self._length[:size], self._passage_length[:count]
        norm = K1 * (1.0 - B + B * lengths / max(1.0, float(lengths[in_wanted].mean())))
        passage_norm = K1 * (
            1.0 - B + B * passage_lengths / max(1.0, float(passage_lengths[passage_wanted].mean()))
        )
        # All terms at once, their postings end to end in term order: bincount adds each
        # slot's parts in array order, so a file's score sums its terms' parts in term order.
        by_file = {
            term: held for term in weights if (held := self._file_counts.get(term)) is not None
        }
        if not by_file:
            return ContentMatch({}, {}, {})
        terms = list(by_file)
        term_weight = np.array([weights[t] for t in terms])
        term_mass = np.array([mass.get(t, 0.0) for t in terms])
        # The three postings hold the same terms, and a term's passages in a file are
        # consecutive in its passage postings (slots only grow, files take theirs at once).
        files, tf, term = _joined(list(by_file.values()))
        in_passages = np.concatenate(
            [(self._file_passages.get(t) or _NONE)[1] for t in terms]
        ).astype(np.int64)
        first = np.cumsum(in_passages) - in_passages  # where an entry's passages start
        if self._dead:  # a changed file's old slots stay in the postings until compacted
            alive = kinds[files] != DEAD
            files, tf, term = files[alive], tf[alive], term[alive]
            in_passages, first = in_passages[alive], first[alive]
        wanted_file = in_wanted[files]
        df = np.bincount(term, weights=wanted_file, minlength=len(terms))
        p_df = np.bincount(term, weights=in_passages * wanted_file, minlength=len(terms))
        part = (term_weight * bm25_idf(n, df))[term] * tf * (K1 + 1.0) / (tf + norm[files])
        scores = np.bincount(files, weights=part, minlength=size)
        found = np.bincount(files, weights=term_mass[term], minlength=size)
        if path_prefix:
            scores[[s for p, s in self._slot.items() if not p.startswith(path_prefix)]] = 0.0
        ranked = scores * factors[kinds]
        hit = np.flatnonzero(ranked)
        if len(hit) > CANDIDATES:
            hit = hit[np.argpartition(-ranked[hit], CANDIDATES)[:CANDIDATES]]
        # Passages are scored for the candidates only: a common word's passages are mostly in
        # files that are not.
        chosen = np.zeros(size, bool)
        chosen[hit] = True
        pick = chosen[files]
        lengths_picked = in_passages[pick]
        at = np.repeat(
            first[pick] - np.cumsum(lengths_picked) + lengths_picked, lengths_picked
        ) + np.arange(int(lengths_picked.sum()))
        by_passage = [self._postings.get(t) or _NONE for t in terms]
        ids = np.concatenate([p[0] for p in by_passage])[at]
        counts = np.concatenate([p[1] for p in by_passage])[at].astype(np.float64)
        passage_term = np.repeat(term[pick], lengths_picked)
        p_part = (
            (term_weight * bm25_idf(n_passages, p_df))[passage_term]
            * counts
            * (K1 + 1.0)
            / (counts + passage_norm[ids])
        )
        passage_scores = np.bincount(ids, weights=p_part, minlength=count)
        best_passage = np.zeros(size, np.float64)
        np.maximum.at(best_passage, owner[ids], passage_scores[ids])
        total = sum(mass.values()) or 1.0
        paths = [self._path_of(slot) for slot in hit.tolist()]
        out, best, share = (
            {p: v for p, v in zip(paths, values.tolist(), strict=True) if p}
            for values in (scores[hit], best_passage[hit], found[hit] / total)
        )
        return ContentMatch(
            out, best, share, float(scores.max(initial=0.0)), float(best_passage.max(initial=0.0))
        )

    def line_counts(self, paths: list[str], terms: list[str]) -> LineCounts:
        """Per term: the lines of the files `paths` holding it or a word it starts (at most
        `PREFIXED` such words: "refund" finds "refunded"), numbered across the files (line
        n of `paths[i]` is `i << 32 | n`, lines from 1) and ascending, and the count on each
        (a word's count in a passage, shared evenly by the passage's lines holding it). A
        lookup in the postings: a file's passages take consecutive slots, and a term's
        slots only grow."""
        with self.lock:
            bounds = np.zeros((len(paths), 2), np.int64)  # a file's passage slots; none: 0, 0
            for i, path in enumerate(paths):
                slot = self._slot.get(path)
                mine = (
                    np.flatnonzero(self._owner[: self._passages] == slot)
                    if slot is not None
                    else None
                )
                if mine is not None and len(mine):
                    bounds[i] = (mine[0], mine[-1] + 1)
            numbers = np.arange(len(paths), dtype=np.int64)
            out: LineCounts = {}
            for term in terms:
                parts: list[tuple[np.ndarray, np.ndarray]] = []
                for word in self._postings.prefixed(term, PREFIXED):
                    found = self._postings.get(word)
                    if found is None:
                        continue
                    cut = np.searchsorted(found[0], bounds.ravel()).reshape(-1, 2)
                    sizes = cut[:, 1] - cut[:, 0]
                    where = self._lines.get(word) if sizes.any() else None
                    if where is not None:
                        at = np.concatenate([np.arange(a, b) for a, b in cut.tolist() if b > a])
                        parts.append(self._lines_of(found, where, at, np.repeat(numbers, sizes)))
                if parts:
                    lines = np.concatenate([p[0] for p in parts])
                    order = np.argsort(lines, kind="stable")
                    out[term] = (lines[order], np.concatenate([p[1] for p in parts])[order])
            return out

    def _lines_of(
        self,
        found: tuple[np.ndarray, np.ndarray],
        where: tuple[np.ndarray, np.ndarray],
        at: np.ndarray,
        files: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The lines (numbered across the files) and the count on each of a word's postings
        entries `at`, of the files numbered `files`."""
        masks = where[1][at].astype(np.int64)
        bits = (masks[:, None] >> _BITS) & 1
        row, col = np.nonzero(bits)
        share = found[1][at] / np.maximum(bits.sum(axis=1), 1)
        start = self._passage_line[found[0][at]].astype(np.int64) + (files << 32)
        return (start[row] + col), share[row]

    def _path_of(self, slot: int) -> str | None:
        node = self._nodes[slot]
        return None if node is None else node.path

    def _size(self) -> int:
        return len(self._nodes)

    # -- on disk (`snapshot`) ---------------------------------------------------------------
    def freeze(self) -> dict[str, np.ndarray]:
        """Everything searching reads, as arrays (see `FrozenContentIndex`); the files still
        pending are read first."""
        self.read()
        with self.lock:
            if self._dead:
                self._compact()
            size = len(self._nodes)
            arrays = {
                **self._postings.export("content"),
                **self._lines.export("content.lines"),
                **self._file_counts.export("content.file"),
                **self._file_passages.export("content.file_passages"),
            }
            arrays["content.paths"], arrays["content.path_offsets"] = Strings.pack(
                n.path if n is not None else "" for n in self._nodes
            )
            arrays["content.kind"] = self._kind[:size].copy()
            arrays["content.length"] = self._length[:size].copy()
            arrays["content.owner"] = self._owner[: self._passages].copy()
            arrays["content.passage_length"] = self._passage_length[: self._passages].copy()
            arrays["content.passage_line"] = self._passage_line[: self._passages].copy()
            return arrays


class FrozenContentIndex(ContentIndex):
    """A `ContentIndex` read back from a snapshot: searches exactly as the live one that
    froze it, reads no file and never changes. Given an `overlay` (files saved since, frozen
    alike) and the snapshot's file slots they replace (`dead`), it searches as the one index
    `merge` would make of the two."""

    def __init__(
        self,
        root: Path,
        base: dict[str, np.ndarray],
        overlay: dict[str, np.ndarray] | None = None,
        dead: np.ndarray | None = None,
    ) -> None:
        super().__init__(root)
        paths = Strings(base["content.paths"], base["content.path_offsets"]).all()
        self._slot = {p: i for i, p in enumerate(paths)}
        if overlay is None or dead is None or not (len(overlay["content.kind"]) or len(dead)):
            self._paths = paths
            self._kind = base["content.kind"]
            self._length = base["content.length"]
            self._owner = base["content.owner"]
            self._passage_length = base["content.passage_length"]
            self._passage_line = base["content.passage_line"]
            self._postings = FrozenPostings(base, "content")  # type: ignore[assignment]
            self._lines = FrozenPostings(base, "content.lines")  # type: ignore[assignment]
            self._file_counts = FrozenPostings(base, "content.file")  # type: ignore[assignment]
            self._file_passages = FrozenPostings(  # type: ignore[assignment]
                base, "content.file_passages"
            )
        else:
            files, passages = len(paths), len(base["content.owner"])
            live = np.ones(files, bool)
            live[dead] = False
            for slot in dead.tolist():
                del self._slot[paths[slot]]
            added = Strings(overlay["content.paths"], overlay["content.path_offsets"]).all()
            self._slot.update((p, files + i) for i, p in enumerate(added))
            self._paths = paths + added
            self._kind = np.concatenate(
                [np.where(live, base["content.kind"], DEAD), overlay["content.kind"]]
            ).astype(np.int8)
            self._length = np.concatenate([base["content.length"], overlay["content.length"]])
            self._owner = np.concatenate(
                [base["content.owner"], overlay["content.owner"] + np.int32(files)]
            )
            self._passage_length = np.concatenate(
                [base["content.passage_length"], overlay["content.passage_length"]]
            )
            self._passage_line = np.concatenate(
                [base["content.passage_line"], overlay["content.passage_line"]]
            )
            self._postings, self._lines = (  # type: ignore[assignment]
                LayeredPostings(
                    FrozenPostings(base, p),
                    live[base["content.owner"]],
                    FrozenPostings(overlay, p),
                    passages,
                )
                for p in ("content", "content.lines")
            )
            self._file_counts, self._file_passages = (  # type: ignore[assignment]
                LayeredPostings(FrozenPostings(base, p), live, FrozenPostings(overlay, p), files)
                for p in ("content.file", "content.file_passages")
            )
        self._passages = len(self._owner)
        self.complete = True

    def apply(self, changed: list[Node], gone: list[Node]) -> None:
        raise TypeError("a frozen index does not change: rebuild it from the graph")

    def read(self, deadline: float | None = None) -> bool:
        return True

    def _path_of(self, slot: int) -> str | None:
        return self._paths[slot]

    def _size(self) -> int:
        return len(self._paths)


def merge(parts: list[tuple[dict[str, np.ndarray], np.ndarray]]) -> dict[str, np.ndarray]:
    """Frozen content indexes as one, as `freeze` of an index built from their files in this
    order would write it: each part's files where its mask is True (with their passages),
    after the previous parts'."""
    placed, files = [], 0
    for arrays, keep in parts:
        new = np.full(len(keep), DEAD, np.int64)
        new[keep] = np.arange(files, files + int(keep.sum()))
        placed.append((arrays, new))
        files += int(keep.sum())
    return _placed(placed, files)


def paths_of(arrays: dict[str, np.ndarray]) -> list[str]:
    """The files of a frozen content index, in slot order."""
    return Strings(arrays["content.paths"], arrays["content.path_offsets"]).all()


def assemble(parts: list[dict[str, np.ndarray]], paths: list[str]) -> dict[str, np.ndarray]:
    """The frozen content index of the files `paths`, in this order, as `freeze` of an index
    that read them in this order would write it, each file taken from the last of the
    frozen `parts` that holds it (every path must be in one)."""
    slot = {path: i for i, path in enumerate(paths)}
    placed = []
    taken: set[str] = set()
    for arrays in reversed(parts):  # the last part holding a file wins
        names = paths_of(arrays)
        new = np.full(len(names), DEAD, np.int64)
        for i, name in enumerate(names):
            if name in slot and name not in taken:
                new[i] = slot[name]
                taken.add(name)
        placed.append((arrays, new))
    if len(taken) != len(slot):
        raise KeyError(f"{len(slot) - len(taken)} files are in no part")
    return _placed(placed[::-1], len(slot))


def _placed(
    parts: list[tuple[dict[str, np.ndarray], np.ndarray]], files: int
) -> dict[str, np.ndarray]:
    """Frozen content indexes as one of `files` files: each part's file slot goes to the slot
    its array gives (`DEAD`: dropped), with its passages; every slot is given once. A file's
    passages follow the previous file's, as `freeze` writes them."""
    passages = np.zeros(files, np.int64)  # new file slot -> its passages
    for arrays, new in parts:
        held = np.bincount(arrays["content.owner"], minlength=len(new))
        passages[new[new != DEAD]] = held[new != DEAD]
    first = np.cumsum(passages) - passages  # new file slot -> its first new passage slot
    by_passage = []
    for arrays, new in parts:
        owner = arrays["content.owner"].astype(np.int64)
        held = np.bincount(owner, minlength=len(new))
        own_first = np.cumsum(held) - held  # a part's file -> its first passage there
        target = new[owner]
        renumber = np.full(len(owner), DEAD, np.int64)
        kept = target != DEAD
        renumber[kept] = first[target[kept]] + np.flatnonzero(kept) - own_first[owner[kept]]
        by_passage.append(renumber)
    # The lines' postings hold the passages' terms and slots, as the file passages' hold the
    # files' counts': each pair is sorted once.
    out = postings.merge(
        [(a, r) for (a, _), r in zip(parts, by_passage, strict=True)], "content", ["content.lines"]
    )
    out.update(postings.merge(parts, "content.file", ["content.file_passages"]))
    paths = [""] * files
    for arrays, new in parts:
        for name, at in zip(paths_of(arrays), new.tolist(), strict=True):
            if at != DEAD:
                paths[at] = name
    out["content.paths"], out["content.path_offsets"] = Strings.pack(paths)
    total = int(passages.sum())
    for name, size, index, dtype in (
        ("content.kind", files, "file", np.int8),
        ("content.length", files, "file", np.float32),
        ("content.owner", total, "passage", np.int32),
        ("content.passage_length", total, "passage", np.float32),
        ("content.passage_line", total, "passage", np.int32),
    ):
        values = np.zeros(size, dtype)
        for (arrays, new), renumber in zip(parts, by_passage, strict=True):
            at = new if index == "file" else renumber
            kept = at != DEAD
            source = new[arrays[name]] if name == "content.owner" else arrays[name]
            values[at[kept]] = source[kept]
        out[name] = values
    return out


_NONE = (np.zeros(0, np.int32), np.zeros(0, np.int32))
_BITS = np.arange(PASSAGE_LINES, dtype=np.int64)


def _joined(
    postings: list[tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Terms' postings end to end: slots, values (as floats), and each entry's term number."""
    slots = np.concatenate([p[0] for p in postings])
    values = np.concatenate([p[1] for p in postings]).astype(np.float64)
    term = np.repeat(np.arange(len(postings)), [len(p[0]) for p in postings])
    return slots, values, term
