"""Append-only postings for the recall indexes: term -> (slots, values), read by numpy.

An index gives each document a slot; a term's postings are two `array`s (slots, values) that
numpy reads without a copy. A changed document takes a new slot and its old one is marked
dead by the index, which filters dead slots at query time and calls `compact` with a
renumbering when the dead outnumber the living. Compact and cheap to update: a one-file change
appends a few entries, and a query touches only the terms it asks for.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from knowledge.recall.snapshot import Strings

DEAD = -1
# Files a search returns, labels or content, by its own score (the ranking keeps the best 150
# of their fusion): the rest could not reach it, and building them costs a long request more.
CANDIDATES = 400
COMPACT_MIN = 4096  # dead slots tolerated before compacting, however small the index
Slots = npt.NDArray[np.int32]


@overload
def bm25_idf(n: int, df: int) -> float: ...
@overload
def bm25_idf(n: int, df: np.ndarray) -> np.ndarray: ...
def bm25_idf(n: int, df: int | np.ndarray) -> float | np.ndarray:
    """A term's rarity among `n` documents, `df` of which hold it (BM25's, kept positive);
    `df` one count or an array of them."""
    idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
    return idf if isinstance(df, np.ndarray) else float(idf)


class Postings:
    def __init__(self, value_code: str) -> None:
        """`value_code`: the `array` type of the values ("i" counts, "f" weights)."""
        self._code = value_code
        self._dtype = np.dtype(np.int32 if value_code == "i" else np.float32)
        self._ids: dict[str, array[int]] = {}
        self._vals: dict[str, array[Any]] = {}  # ints or floats, by `value_code`

    def __contains__(self, term: object) -> bool:
        return term in self._ids

    def add(self, slot: int, items: Iterable[tuple[str, float]]) -> None:
        for term, value in items:
            ids = self._ids.get(term)
            if ids is None:
                ids = self._ids[term] = array("i")
                self._vals[term] = array(self._code)
            ids.append(slot)
            self._vals[term].append(value)

    def add_term(self, term: str, slots: Iterable[int], value: float = 1) -> None:
        """One term's postings at once (the value is the same for every slot)."""
        for slot in slots:
            self.add(slot, ((term, value),))

    def get(self, term: str) -> tuple[Slots, np.ndarray] | None:
        """Views on a term's (slots, values), dead slots included; None when unknown. The
        views must not outlive the caller's lock: appending needs the buffers unexported."""
        ids = self._ids.get(term)
        if ids is None:
            return None
        return (np.frombuffer(ids, dtype=np.int32),
                np.frombuffer(self._vals[term], dtype=self._dtype))

    def compact(self, renumber: npt.NDArray[np.int64]) -> None:
        """Apply `renumber` (old slot -> new slot, or DEAD) to every posting."""
        for term in list(self._ids):
            ids, vals = self.get(term)  # type: ignore[misc]
            new = renumber[ids]
            keep = new != DEAD
            if not keep.any():
                del self._ids[term], self._vals[term]
                continue
            self._ids[term] = array("i", new[keep].astype(np.int32).tobytes())
            self._vals[term] = array(self._code, vals[keep].tobytes())


    def export(self, prefix: str) -> dict[str, np.ndarray]:
        """The postings as flat arrays named `prefix.*`, terms sorted (see `FrozenPostings`).
        Call on compacted postings: dead slots would be exported as they are."""
        terms = sorted(self._ids)
        blob, offsets = Strings.pack(terms)
        counts = np.array([len(self._ids[t]) for t in terms], np.int64)
        starts = np.zeros(len(terms) + 1, np.int64)
        np.cumsum(counts, out=starts[1:])
        ids = np.frombuffer(b"".join(self._ids[t].tobytes() for t in terms), np.int32)
        vals = np.frombuffer(b"".join(self._vals[t].tobytes() for t in terms), self._dtype)
        return {f"{prefix}.terms": blob, f"{prefix}.term_offsets": offsets,
                f"{prefix}.starts": starts, f"{prefix}.ids": ids, f"{prefix}.vals": vals}


class FrozenPostings:
    """Postings read back from a snapshot: read-only views on the mapped file."""

    def __init__(self, arrays: dict[str, np.ndarray], prefix: str) -> None:
        self.terms = Strings(arrays[f"{prefix}.terms"], arrays[f"{prefix}.term_offsets"])
        self._starts = arrays[f"{prefix}.starts"]
        self._ids = arrays[f"{prefix}.ids"]
        self._vals = arrays[f"{prefix}.vals"]

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and self.terms.find(term) >= 0

    def get(self, term: str) -> tuple[Slots, np.ndarray] | None:
        at = self.terms.find(term)
        if at < 0:
            return None
        start, end = int(self._starts[at]), int(self._starts[at + 1])
        return self._ids[start:end], self._vals[start:end]


def grow(values: np.ndarray, size: int, fill: float | int) -> np.ndarray:
    """`values` with room for index `size - 1` (doubling), new entries set to `fill`."""
    if size <= len(values):
        return values
    extra = np.full(max(64, len(values), size - len(values)), fill, dtype=values.dtype)
    return np.concatenate([values, extra])
