"""Append-only postings for the recall indexes: term -> (slots, values), read by numpy.

An index gives each document a slot; a term's postings are two `array`s (slots, values) that
numpy reads without a copy. A changed document takes a new slot and its old one is marked
dead by the index, which filters dead slots at query time and calls `compact` with a
renumbering when the dead outnumber the living. Compact and cheap to update: a one-file change
appends a few entries, and a query touches only the terms it asks for.

Frozen (exported to arrays, read back from a snapshot), a term's entries are in slot order.
`merge` joins exported postings, dropping and renumbering slots; `LayeredPostings` reads a
snapshot's postings with its replaced slots hidden and a newer one's after them, as if merged.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Sequence
from itertools import chain, compress
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
        self._sorted: list[str] | None = None  # the terms in order, once `prefixed` asked

    def __contains__(self, term: object) -> bool:
        return term in self._ids

    def add(self, slot: int, items: Iterable[tuple[str, float]]) -> None:
        self.add_all([(slot, items)])

    def add_all(self, rows: Iterable[tuple[int, Iterable[tuple[str, float]]]]) -> None:
        """`add` of each (slot, items), in one loop (a new index's 40k nodes)."""
        ids_of, vals_of = self._ids, self._vals
        for slot, items in rows:
            for term, value in items:
                ids = ids_of.get(term)
                if ids is None:
                    ids = ids_of[term] = array("i")
                    vals_of[term] = array(self._code)
                    if self._sorted is not None:
                        bisect.insort(self._sorted, term)
                ids.append(slot)
                vals_of[term].append(value)

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
        return (
            np.frombuffer(ids, dtype=np.int32),
            np.frombuffer(self._vals[term], dtype=self._dtype),
        )

    def prefixed(self, prefix: str, limit: int) -> list[str]:
        """The first `limit` terms that start with `prefix`, in order (the order is kept from
        the first call on: a new term is inserted, a rare cost)."""
        if self._sorted is None:
            self._sorted = sorted(self._ids)
        return _prefixed(self._sorted, prefix, limit)

    def compact(self, renumber: npt.NDArray[np.int64]) -> None:
        """Apply `renumber` (old slot -> new slot, or DEAD) to every posting."""
        self._sorted = None
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
        return {
            f"{prefix}.terms": blob,
            f"{prefix}.term_offsets": offsets,
            f"{prefix}.starts": starts,
            f"{prefix}.ids": ids,
            f"{prefix}.vals": vals,
        }


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

    def prefixed(self, prefix: str, limit: int) -> list[str]:
        return _prefixed(self.terms, prefix, limit)

    def count(self, term: str) -> int:
        """How many slots hold `term` (exported postings hold no dead slot)."""
        at = self.terms.find(term)
        return int(self._starts[at + 1] - self._starts[at]) if at >= 0 else 0


class LayeredPostings:
    """A base's postings without its replaced slots (`live` False), then an overlay's, whose
    slots follow the base's (`offset`): what `merge` of the two would hold, read per term."""

    def __init__(
        self, base: FrozenPostings, live: np.ndarray, overlay: FrozenPostings, offset: int
    ) -> None:
        self._base, self._live, self._overlay, self._offset = base, live, overlay, offset

    def get(self, term: str) -> tuple[Slots, np.ndarray] | None:
        """As `FrozenPostings.get`; None when no live slot holds the term (as merged)."""
        below, above = self._base.get(term), self._overlay.get(term)
        ids, vals = [], []
        if below is not None:
            keep = self._live[below[0]]
            ids.append(below[0][keep])
            vals.append(below[1][keep])
        if above is not None:
            ids.append(above[0] + np.int32(self._offset))
            vals.append(above[1])
        if not ids or not sum(map(len, ids)):
            return None
        if len(ids) == 1:
            return ids[0], vals[0]
        return np.concatenate(ids), np.concatenate(vals)

    def prefixed(self, prefix: str, limit: int) -> list[str]:
        """Both layers' (a replaced slot's term may come: `get` finds no live slot for it)."""
        found = {*self._base.prefixed(prefix, limit), *self._overlay.prefixed(prefix, limit)}
        return sorted(found)[:limit]

    def count(self, term: str) -> int:
        found = self.get(term)
        return 0 if found is None else len(found[0])


def merge(
    parts: list[tuple[dict[str, np.ndarray], np.ndarray]], prefix: str, twins: Sequence[str] = ()
) -> dict[str, np.ndarray]:
    """Exported postings (`prefix.*` arrays) of several indexes as one, as `export` would
    write them: each part's slots renumbered by its array (old slot -> new slot, or `DEAD` to
    drop it), a term's entries in slot order, terms left without entries gone. `twins`: other
    postings whose terms and slots are the prefix's in every part, their values merged in the
    same order (sorted once)."""
    held = [Strings(a[f"{prefix}.terms"], a[f"{prefix}.term_offsets"]).all() for a, _ in parts]
    vocab = sorted(set(chain.from_iterable(held)))
    code = dict(zip(vocab, range(len(vocab)), strict=True))
    codes, slots = [], []
    values: dict[str, list[np.ndarray]] = {p: [] for p in (prefix, *twins)}
    for (arrays, renumber), names in zip(parts, held, strict=True):
        known = np.fromiter(map(code.__getitem__, names), np.int64, len(names))
        new = renumber[arrays[f"{prefix}.ids"]]
        keep = new != DEAD
        codes.append(np.repeat(known, np.diff(arrays[f"{prefix}.starts"]))[keep])
        slots.append(new[keep])
        for name, found in values.items():
            found.append(arrays[f"{name}.vals"][keep])
    return _sorted(
        vocab,
        np.concatenate(codes),
        np.concatenate(slots),
        {name: np.concatenate(found) for name, found in values.items()},
    )


def exported(
    vocab: list[str], term: np.ndarray, slots: np.ndarray, values: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """What `Postings.export` writes of postings given as entries: each entry's term (its
    index in the sorted `vocab`), slot, and value in each of the postings named in `values`
    (prefix -> values; int32 counts), which share the terms and slots; one entry per term
    and slot."""
    return _sorted(vocab, term, slots, {p: v.astype(np.int32) for p, v in values.items()})


def _sorted(
    vocab: list[str], term: np.ndarray, slots: np.ndarray, values: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The exported arrays of each postings in `values` (prefix -> values) from entries
    (term numbers in the sorted `vocab`, slots) they share: sorted by term, then slot."""
    # lexsort's order, by one stable sort of one key: several times faster than two sorts.
    width = int(slots.max()) + 1 if len(slots) else 1
    if len(vocab) * width < 2**62:
        order = np.argsort(term.astype(np.int64) * width + slots, kind="stable")
    else:
        order = np.lexsort((slots, term))
    counts = np.bincount(term, minlength=len(vocab))
    used = counts > 0
    blob, offsets = Strings.pack(compress(vocab, used.tolist()))
    starts = np.zeros(int(used.sum()) + 1, np.int64)
    np.cumsum(counts[used], out=starts[1:])
    ids = slots[order].astype(np.int32)
    out = {}
    for prefix, found in values.items():
        out[f"{prefix}.terms"], out[f"{prefix}.term_offsets"] = blob, offsets
        out[f"{prefix}.starts"], out[f"{prefix}.ids"] = starts, ids
        out[f"{prefix}.vals"] = found[order]
    return out


def _prefixed(terms: Sequence[str], prefix: str, limit: int) -> list[str]:
    """The first `limit` of the sorted `terms` that start with `prefix`."""
    at = bisect.bisect_left(terms, prefix)
    out = []
    for i in range(at, min(at + limit, len(terms))):
        term = terms[i]
        if not term.startswith(prefix):
            break
        out.append(term)
    return out


def grow(values: np.ndarray, size: int, fill: float | int) -> np.ndarray:
    """`values` with room for index `size - 1` (doubling), new entries set to `fill`."""
    if size <= len(values):
        return values
    extra = np.full(max(64, len(values), size - len(values)), fill, dtype=values.dtype)
    return np.concatenate([values, extra])
