"""IDF-weighted keyword index over node labels, paths, signatures, summaries and memory text.

Each node is a small document: term -> field weight (the best field the term appears in).
Postings map a term to the nodes holding it (`postings`: append-only arrays read by numpy), so
a query touches only the nodes that share a word with it. The index follows the graph through
`NodeTracker` deltas (node identities, no use of the store's dirty set): a one-file change
re-tokenises only that file's nodes.

Scores are in [0, 1]: the share of the query's IDF mass that a node explains, each term
counted at the weight of the field it matched; a file scores its best node.

Over 400 lines: the live index and its frozen (snapshot) twin must score identically, so
they sit side by side, with `merge`, which joins frozen ones.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain

import numpy as np

from knowledge.core import keys as node_keys
from knowledge.core.graph import Node
from knowledge.recall import postings
from knowledge.recall.hashvec import DIM as HASH_DIM
from knowledge.recall.hashvec import Vector, embed
from knowledge.recall.postings import (
    CANDIDATES,
    DEAD,
    FrozenPostings,
    LayeredPostings,
    Postings,
    grow,
)
from knowledge.recall.snapshot import Strings
from knowledge.recall.tokens import fold, split_words, stem, terms

# Field weights: a word in a symbol's own name says more than one in its docstring.
W_NAME = 1.0  # last component of a label, file stem
W_QUALIFIER = 0.7  # enclosing class, directories of a path
W_SIGNATURE = 0.5
W_SUMMARY = 0.45
W_TEXT = 0.8  # memory and episode text: the text is all they have
STEM_FACTOR = 0.6  # parsing ~ parser: a weaker match than the exact word
# A term held by more nodes than this only boosts nodes some rarer term already found.
COMMON_POSTINGS = 400
COMMON_SHARE = 40  # ... or than this fraction (1/40) of all nodes, whichever is larger
_MAX_TEXT = 1500
NO_FILE = -2  # the file id of memories, episodes and entities
TOP_PER_FILE = 3  # best matching nodes kept per file (shown in hits, seeds of traversal)
_TEXT_KINDS = frozenset({"memory", "episode", "entity"})


@dataclass(slots=True)
class Doc:
    node: Node
    terms: dict[str, float]  # exact (folded) term -> weight
    stems: dict[str, float]  # loose stem -> weight, only where it differs from the term
    idents: tuple[str, ...]  # its whole name, lower-cased: what a request may spell out


def node_terms(node: Node) -> dict[str, float]:
    """The weighted terms a node is found by."""
    out: dict[str, float] = {}

    def add(words: Iterable[str], weight: float) -> None:
        for word in words:
            if len(word) > 1:
                term = fold(word)
                if out.get(term, 0.0) < weight:
                    out[term] = weight

    if node.kind in _TEXT_KINDS:
        text = " ".join(str(t) for t in (node.label, node.summary, node.data.get("text", "")) if t)
        add(terms(text[:_MAX_TEXT]), W_TEXT)
        return out
    add(terms(node.summary), W_SUMMARY)
    add(terms(node.signature), W_SIGNATURE)
    # What a conversation said of this file or symbol (`knowledge.facts`), current facts only.
    add(
        terms(" ".join(f.get("text", "") for f in node.facts if f.get("valid_to") is None)),
        W_SUMMARY,
    )
    if node.kind == "file":
        parts = node.path.split("/")
        add(split_words("/".join(parts[:-1])), W_QUALIFIER)
        stem_part = parts[-1].rsplit(".", 1)[0] if "." in parts[-1] else parts[-1]
        add(split_words(stem_part), W_NAME)
        return out
    head, _, last = node.label.rpartition(".")
    add(split_words(head), W_QUALIFIER)
    add(split_words(last), W_NAME)
    return out


def file_stem(name: str) -> str:
    """A file's name up to its first dot, lower-cased: `sessions.py` -> "sessions"."""
    return name.rpartition("/")[2].split(".", 1)[0].lower()


def identifiers(node: Node) -> tuple[str, ...]:
    """A symbol's own name, or a file's stem and its singular (a request's words are folded:
    "sessions" names `sessions.py`), lower-cased; none for other kinds."""
    if node.kind == "symbol":
        return (node.label.rsplit(".", 1)[-1].lower(),)
    if node.kind == "file":
        whole = file_stem(node.label)
        return tuple(dict.fromkeys((whole, fold(whole))))
    return ()


def hash_vector(path: str, nodes: Sequence[Node]) -> Vector | None:
    """The tie-break's vector of a file from the nodes at its path: the path, the file's
    summary and the other nodes' names in source order; None without its file node."""
    file_key = node_keys.file_key(path)
    found = [n for n in nodes if n.key != file_key]
    file_node = next((n for n in nodes if n.key == file_key), None) if path else None
    if file_node is None:
        return None
    # In source order: the vector reads the first 2000 characters.
    names = " ".join(n.label for n in sorted(found, key=lambda n: (n.line, n.key)))
    return embed(" ".join((path, file_node.summary, names)))


def _doc(node: Node) -> Doc:
    exact = node_terms(node)
    stems: dict[str, float] = {}
    for term, weight in exact.items():
        s = stem(term)
        if s != term and stems.get(s, 0.0) < weight:
            stems[s] = weight
    return Doc(node, exact, stems, identifiers(node))


@dataclass
class Match:
    """Lexical result for one request: node scores by slot, and per file its best node."""

    terms: list[str]
    idf: dict[str, float]
    total: float = 0.0  # the request's IDF mass
    best: dict[str, float] = field(default_factory=dict)  # path -> its best node's score
    texts: dict[str, float] = field(default_factory=dict)  # memories, episodes -> score
    index: LexicalIndex | None = None
    # Matched slots other than file nodes, sorted by (file id, -score, slot), and where each
    # file's run starts: `top` reads a file's best nodes from them.
    _sorted: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    _scores: np.ndarray = field(default_factory=lambda: np.zeros(0))
    _runs: dict[int, tuple[int, int]] = field(default_factory=dict)

    def top(self, path: str) -> list[tuple[float, str]]:
        """The file's `TOP_PER_FILE` best matching nodes other than the file node: (score,
        key), best first."""
        index = self.index
        fid = index._file_id.get(path) if index is not None else None
        if fid is None or fid not in self._runs:
            return []
        start, end = self._runs[fid]
        slots = self._sorted[start : min(end, start + TOP_PER_FILE)]
        return [(float(self._scores[s]), index._keys[s] or "") for s in slots]  # type: ignore[union-attr]

    def scores_in(self, path: str) -> dict[str, float]:
        """Every matching node of the file other than the file node: key -> score."""
        index = self.index
        fid = index._file_id.get(path) if index is not None else None
        if fid is None or fid not in self._runs:
            return {}
        start, end = self._runs[fid]
        slots = self._sorted[start:end].tolist()
        return {index._keys[s] or "": float(self._scores[s]) for s in slots}  # type: ignore[union-attr]

    def terms_of(self, node: Node) -> list[str]:
        """The request's terms a node matched (exactly or by stem)."""
        # The live index keeps each node's terms: recomputing them was a fifth of a recall.
        kept = self.index.docs.get(node.key) if self.index is not None else None
        doc = kept if kept is not None and kept.node is node else _doc(node)
        return [t for t, t_stem in self._stemmed if t in doc.terms or t_stem in doc.stems]

    @cached_property
    def _stemmed(self) -> list[tuple[str, str]]:
        return [(t, stem(t)) for t in self.terms]


class LexicalIndex:
    """Postings kept in step with a graph through `apply` (see `Recaller.sync`)."""

    def __init__(self) -> None:
        self.docs: dict[str, Doc] = {}
        self.slot: dict[str, int] = {}  # key -> live slot
        self.by_path: dict[str, set[str]] = {}  # path -> keys of its nodes
        self._keys: list[str | None] = []  # slot -> key (None once dead)
        self._file = np.zeros(0, np.int32)  # slot -> file id, NO_FILE, or DEAD when dead
        self._file_id: dict[str, int] = {}
        self._file_path: list[str] = []
        self._exact = Postings("f")
        self._stems = Postings("f")
        self._is_file = np.zeros(0, bool)  # slot -> the node is a file node
        self._df: Counter[str] = Counter()  # live nodes per exact term
        self._stem_df: Counter[str] = Counter()
        self._dead = 0
        self.idents: dict[str, dict[str, None]] = {}  # whole name -> keys of nodes so named
        # path -> hash vector of the file's path, summary and names (the tie-break's input)
        self.hash_vectors: dict[str, Vector] = {}
        self.last_sync_changed = 0

    # -- keeping up with the graph ---------------------------------------------------------
    def apply(self, changed: list[Node], gone: list[Node]) -> int:
        """Follow a `NodeTracker` delta: only changed nodes are tokenised again. Returns how
        many nodes changed."""
        for node in gone:
            doc = self.docs.get(node.key)
            if doc is not None and doc.node is node:
                self._remove(node.key)
        if not self._keys and len({n.key for n in changed}) == len(changed):
            self._add(list(map(_doc, changed)))  # a new index: every node at once
        else:
            for node in changed:
                self._remove(node.key)
                self._add([_doc(node)])
        for path in {n.path for n in changed} | {n.path for n in gone}:
            self._hash_file(path)
        if self._dead > max(postings.COMPACT_MIN, len(self.docs)):
            self._compact()
        self.last_sync_changed = len(changed) + len(
            {n.key for n in gone} - {n.key for n in changed}
        )
        return self.last_sync_changed

    def _hash_file(self, path: str) -> None:
        vector = hash_vector(path, [self.docs[k].node for k in self.by_path.get(path, ())])
        if vector is None:
            self.hash_vectors.pop(path, None)
        else:
            self.hash_vectors[path] = vector

    def postings(self) -> dict[str, dict[str, float]]:
        """term -> {key: weight} of the live nodes (for tests and inspection)."""
        return _live(self._exact, self._keys, self._df)

    def stem_postings(self) -> dict[str, dict[str, float]]:
        return _live(self._stems, self._keys, self._stem_df)

    def _add(self, docs: list[Doc]) -> None:
        """Give each of `docs` the next slot: the postings and counts updated once for all of
        them (a new index adds 40k nodes, and updating them node by node was a third of it)."""
        first = len(self._keys)
        self._file = grow(self._file, first + len(docs), DEAD)
        self._is_file = grow(self._is_file, first + len(docs), False)
        for slot, doc in enumerate(docs, first):
            node = doc.node
            key = node.key
            self._keys.append(key)
            self._is_file[slot] = node.kind == "file"
            if node.path:
                fid = self._file_id.get(node.path)
                if fid is None:
                    fid = self._file_id[node.path] = len(self._file_path)
                    self._file_path.append(node.path)
                self._file[slot] = fid
            else:
                self._file[slot] = NO_FILE
            self.slot[key] = slot
            self.docs[key] = doc
            self.by_path.setdefault(node.path, set()).add(key)
            for ident in doc.idents:
                self.idents.setdefault(ident, {})[key] = None
        self._exact.add_all((slot, doc.terms.items()) for slot, doc in enumerate(docs, first))
        self._stems.add_all((slot, doc.stems.items()) for slot, doc in enumerate(docs, first))
        self._df.update(chain.from_iterable(doc.terms for doc in docs))
        self._stem_df.update(chain.from_iterable(doc.stems for doc in docs))

    def _remove(self, key: str) -> None:
        doc = self.docs.pop(key, None)
        if doc is None:
            return
        slot = self.slot.pop(key)
        self._keys[slot] = None
        self._file[slot] = DEAD
        self._dead += 1
        keys = self.by_path.get(doc.node.path)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self.by_path[doc.node.path]
        self._df.subtract(doc.terms.keys())
        self._stem_df.subtract(doc.stems.keys())
        for ident in doc.idents:
            named = self.idents.get(ident)
            if named is not None:
                named.pop(key, None)
                if not named:
                    del self.idents[ident]

    def _compact(self) -> None:
        live = np.flatnonzero(np.array([k is not None for k in self._keys], bool))
        renumber = np.full(len(self._keys), DEAD, np.int64)
        renumber[live] = np.arange(len(live))
        self._exact.compact(renumber)
        self._stems.compact(renumber)
        self._keys = [self._keys[i] for i in live]
        self._file = self._file[live].copy()
        self._is_file = self._is_file[live].copy()
        self.slot = {k: i for i, k in enumerate(self._keys) if k is not None}
        self._df = +self._df  # drop terms no live node holds
        self._stem_df = +self._stem_df
        self._dead = 0

    def named(self, ident: str) -> list[str]:
        """Paths of the files that define (or are) `ident`, lower-cased whole name."""
        keys = self.idents.get(ident, {})
        return list(dict.fromkeys(p for k in keys if (p := self.docs[k].node.path)))

    # -- what searching reads (a frozen index reads it from a snapshot) ----------------------
    def _count(self) -> int:
        return len(self.docs)

    def _exact_df(self, term: str) -> int:
        return self._df.get(term, 0)

    def _stem_df_of(self, term_stem: str) -> int:
        return self._stem_df.get(term_stem, 0)

    # -- searching --------------------------------------------------------------------------
    def idf(self, term: str) -> float:
        """Smoothed IDF; a word no node holds counts as rare (it still dilutes the score)."""
        n = self._count() + 1
        df = self._exact_df(term) or self._stem_df_of(stem(term))
        return math.log(1.0 + n / (df + 1.0))

    def search(self, query: list[str], path_prefix: str | None = None) -> Match:
        idf = {t: self.idf(t) for t in query}
        total = sum(idf.values())
        match = Match(query, idf, total, index=self)
        if not query or total <= 0 or not self._count():
            return match
        size = len(self._keys)
        files = self._file[:size]
        allowed = files != DEAD
        if path_prefix:
            inside = np.array([p.startswith(path_prefix) for p in self._file_path], bool)
            allowed &= np.concatenate([inside, [False, False]])[files]  # NO_FILE, DEAD: False
        raw = np.zeros(size, np.float64)
        weight = np.zeros(size, np.float64)  # scratch, for a term matched exactly and by stem
        every = bool(allowed.all())
        common = max(COMMON_POSTINGS, self._count() // COMMON_SHARE)
        found = False
        # Rarest first, so common terms can be limited to nodes already found.
        for term in sorted(query, key=lambda t: -idf[t]):
            term_stem = stem(term)
            exact, loose = self._exact.get(term), self._stems.get(term_stem)
            if exact is not None and loose is not None:
                weight[loose[0]] = loose[1] * STEM_FACTOR
                weight[exact[0]] = exact[1]  # an exact match replaces a loose one
                # A slot in both appears twice with one weight: `+=` adds it once.
                ids = np.concatenate((loose[0], exact[0]))
                w = weight[ids]
                weight[ids] = 0.0
            elif exact is not None:
                ids, w = exact
            elif loose is not None:
                ids, w = loose[0], loose[1] * STEM_FACTOR
            else:
                continue
            if not every:
                keep = allowed[ids]
                ids, w = ids[keep], w[keep]
            if self._exact_df(term) + self._stem_df_of(term_stem) > common:
                # A common word only adds to what rarer words found; when every word is
                # common, start from the nodes *named* by the rarest one.
                keep = raw[ids] > 0 if found else w >= W_NAME
                ids, w = ids[keep], w[keep]
                if not found:
                    ids, w = ids[:common], w[:common]
            raw[ids] += idf[term] * w
            found = found or len(ids) > 0
        scores = raw / total
        hit = np.flatnonzero(raw)
        owners = files[hit]
        with_path = hit[owners >= 0]
        best = np.zeros(len(self._file_path), np.float64)
        np.maximum.at(best, files[with_path], scores[with_path])
        held = np.flatnonzero(best)
        if len(held) > CANDIDATES:
            held = held[np.argpartition(-best[held], CANDIDATES)[:CANDIDATES]]
        paths, keys = self._file_path, self._keys
        match.best = {paths[f]: b for f, b in zip(held.tolist(), best[held].tolist(), strict=True)}
        texts = hit[owners == NO_FILE]
        match.texts = {
            k: s
            for t, s in zip(texts.tolist(), scores[texts].tolist(), strict=True)
            if (k := keys[t]) is not None
        }
        nodes = with_path[~self._is_file[with_path]]
        owner = self._file[nodes]
        order = np.lexsort((nodes, -scores[nodes], owner))
        match._sorted, match._scores = nodes[order], scores
        grouped = owner[order]
        if len(grouped):
            starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
            ends = np.r_[starts[1:], len(grouped)]
            match._runs = dict(
                zip(
                    grouped[starts].tolist(),
                    zip(starts.tolist(), ends.tolist(), strict=True),
                    strict=True,
                )
            )
        return match

    # -- on disk (`snapshot`) ---------------------------------------------------------------
    def freeze(self, owner_of: Mapping[str, str]) -> dict[str, np.ndarray]:
        """Everything searching reads, as arrays (see `FrozenLexicalIndex`), with each slot's
        owner (`owner_of`: key -> owner), by which a newer snapshot replaces slots."""
        if self._dead:
            self._compact()
        arrays = {**self._exact.export("lex.exact"), **self._stems.export("lex.stems")}
        keys = [k or "" for k in self._keys]
        arrays["lex.keys"], arrays["lex.key_offsets"] = Strings.pack(keys)
        owners = sorted({owner_of[k] for k in keys})
        code = {o: i for i, o in enumerate(owners)}
        arrays["lex.owner"] = np.array([code[owner_of[k]] for k in keys], np.int32)
        arrays["lex.owners"], arrays["lex.owner_offsets"] = Strings.pack(owners)
        arrays["lex.file"] = self._file[: len(keys)].copy()
        arrays["lex.is_file"] = self._is_file[: len(keys)].copy()
        arrays["lex.paths"], arrays["lex.path_offsets"] = Strings.pack(self._file_path)
        named = Postings("i")
        for ident, held in self.idents.items():
            named.add_term(ident, [self.slot[k] for k in held])
        arrays.update(named.export("lex.idents"))
        arrays.update(hash_arrays(self.hash_vectors))
        return arrays


class FrozenLexicalIndex(LexicalIndex):
    """A `LexicalIndex` read back from a snapshot: searches exactly as the live index that
    froze it, never changes. Given an `overlay` (the nodes of owners saved since, frozen
    alike) and the snapshot's slots they replace (`dead`), it searches as the one index
    `merge` would make of the two (the overlay's slots after the snapshot's)."""

    def __init__(
        self,
        base: dict[str, np.ndarray],
        overlay: dict[str, np.ndarray] | None = None,
        dead: np.ndarray | None = None,
    ) -> None:
        super().__init__()
        size = len(base["lex.file"])
        self._named: FrozenPostings | LayeredPostings
        self.hash_vectors = hashes(base)
        if overlay is None or dead is None or not (len(overlay["lex.file"]) or len(dead)):
            self._exact = FrozenPostings(base, "lex.exact")  # type: ignore[assignment]
            self._stems = FrozenPostings(base, "lex.stems")  # type: ignore[assignment]
            self._named = FrozenPostings(base, "lex.idents")
            self._keys = Strings(base["lex.keys"], base["lex.key_offsets"])  # type: ignore[assignment]
            self._file = base["lex.file"]
            self._is_file = base["lex.is_file"]
            self._file_path = Strings(base["lex.paths"], base["lex.path_offsets"]).all()
            self._live = size
        else:
            live = np.ones(size, bool)
            live[dead] = False
            exact, stems, named = (
                LayeredPostings(FrozenPostings(base, p), live, FrozenPostings(overlay, p), size)
                for p in ("lex.exact", "lex.stems", "lex.idents")
            )
            self._exact, self._stems = exact, stems  # type: ignore[assignment]
            self._named = named
            self._keys = Strings(  # type: ignore[assignment]
                np.concatenate([base["lex.keys"], overlay["lex.keys"]]),
                np.concatenate(
                    [
                        base["lex.key_offsets"][:-1],
                        overlay["lex.key_offsets"] + len(base["lex.keys"]),
                    ]
                ),
            )
            self._is_file = np.concatenate([base["lex.is_file"], overlay["lex.is_file"]])
            self._file, self._file_path = _files([(base, live), (overlay, None)])
            self._live = int(live.sum()) + len(overlay["lex.file"])
            for path in Strings(overlay["lex.hash_gone"], overlay["lex.hash_gone_offsets"]).all():
                self.hash_vectors.pop(path, None)
            self.hash_vectors.update(hashes(overlay))
        self._file_id = {p: i for i, p in enumerate(self._file_path)}

    def apply(self, changed: list[Node], gone: list[Node]) -> int:
        raise TypeError("a frozen index does not change: rebuild it from the graph")

    def named(self, ident: str) -> list[str]:
        found = self._named.get(ident)
        if found is None:
            return []
        return list(
            dict.fromkeys(self._file_path[f] for f in self._file[found[0]].tolist() if f >= 0)
        )

    def _count(self) -> int:
        return self._live

    def _exact_df(self, term: str) -> int:
        return self._exact.count(term)  # type: ignore[attr-defined, no-any-return]

    def _stem_df_of(self, term_stem: str) -> int:
        return self._stems.count(term_stem)  # type: ignore[attr-defined, no-any-return]


def merge(parts: list[tuple[dict[str, np.ndarray], np.ndarray]]) -> dict[str, np.ndarray]:
    """Frozen lexical indexes as one, as `freeze` of an index built from their nodes in this
    order would write it: each part's slots where its mask is True, after the previous parts'.
    A later part's hash vectors replace an earlier one's, and drop those it lists as gone."""
    renumber, start = [], 0
    for _, keep in parts:
        new = np.full(len(keep), DEAD, np.int64)
        new[keep] = np.arange(start, start + int(keep.sum()))
        renumber.append(new)
        start += int(keep.sum())
    out: dict[str, np.ndarray] = {}
    for prefix in ("lex.exact", "lex.stems", "lex.idents"):
        out.update(
            postings.merge([(a, r) for (a, _), r in zip(parts, renumber, strict=True)], prefix)
        )
    out["lex.keys"], out["lex.key_offsets"] = Strings.pack(
        k
        for arrays, keep in parts
        for k, kept in zip(
            Strings(arrays["lex.keys"], arrays["lex.key_offsets"]).all(), keep.tolist(), strict=True
        )
        if kept
    )
    out["lex.is_file"] = np.concatenate([a["lex.is_file"][keep] for a, keep in parts])
    at: dict[str, int] = {}
    held = np.concatenate(
        [
            np.array(
                [
                    at.setdefault(o, len(at))
                    for o in Strings(a["lex.owners"], a["lex.owner_offsets"]).all()
                ],
                np.int32,
            )[a["lex.owner"][keep]]
            for a, keep in parts
        ]
    )
    names = list(at)
    used = np.flatnonzero(np.bincount(held, minlength=len(names))).tolist()
    owners = sorted(names[c] for c in used)
    rank = np.full(len(names), DEAD, np.int32)
    rank[[at[o] for o in owners]] = np.arange(len(owners), dtype=np.int32)
    out["lex.owner"] = rank[held]
    out["lex.owners"], out["lex.owner_offsets"] = Strings.pack(owners)
    files, paths = _files([(a, keep) for a, keep in parts], dropped=True)
    out["lex.file"] = files
    out["lex.paths"], out["lex.path_offsets"] = Strings.pack(paths)
    vectors: dict[str, np.ndarray] = {}
    gone: set[str] = set()
    for arrays, _ in parts:
        for path in Strings(arrays["lex.hash_gone"], arrays["lex.hash_gone_offsets"]).all():
            vectors.pop(path, None)
            gone.add(path)
        vectors.update(hashes(arrays))
    out.update(hash_arrays(vectors, gone - vectors.keys()))
    return out


def hashes(arrays: dict[str, np.ndarray]) -> dict[str, Vector]:
    """path -> hash vector, as frozen."""
    paths = Strings(arrays["lex.hash_paths"], arrays["lex.hash_path_offsets"]).all()
    return dict(zip(paths, arrays["lex.hash_vectors"], strict=True))


def hash_arrays(vectors: Mapping[str, Vector], gone: Iterable[str] = ()) -> dict[str, np.ndarray]:
    """Hash vectors as arrays, paths sorted; `gone`: the paths whose earlier vector (in the
    snapshot an overlay is read over) no longer holds."""
    hashed = sorted(vectors)
    out = {
        "lex.hash_vectors": (
            np.stack([vectors[p] for p in hashed])
            if hashed
            else np.zeros((0, HASH_DIM), np.float32)
        )
    }
    out["lex.hash_paths"], out["lex.hash_path_offsets"] = Strings.pack(hashed)
    out["lex.hash_gone"], out["lex.hash_gone_offsets"] = Strings.pack(sorted(gone))
    return out


def _files(
    parts: list[tuple[dict[str, np.ndarray], np.ndarray | None]], dropped: bool = False
) -> tuple[np.ndarray, list[str]]:
    """The parts' slots' file ids (a part's slots where its mask is False: `DEAD`, or left
    out when `dropped`), numbered by first appearance, as an index built in slot order numbers
    them; and the paths by id."""
    at: dict[str, int] = {}
    chunks = []
    for arrays, keep in parts:
        # Index -2 is NO_FILE, -1 is DEAD: they stay.
        names = Strings(arrays["lex.paths"], arrays["lex.path_offsets"]).all()
        code = np.array([*(at.setdefault(p, len(at)) for p in names), NO_FILE, DEAD], np.int32)[
            arrays["lex.file"]
        ]
        if keep is not None:
            code = code[keep] if dropped else np.where(keep, code, DEAD)
        chunks.append(code)
    codes = np.concatenate(chunks).astype(np.int32)
    has = codes >= 0
    first = np.full(len(at), len(codes), np.int64)  # each file's first slot (np.unique's
    np.minimum.at(first, codes[has], np.flatnonzero(has))  # first call imports numpy.ma)
    found = np.flatnonzero(first < len(codes))
    order = found[np.argsort(first[found])]
    number = np.full(len(at), DEAD, np.int32)
    number[order] = np.arange(len(order), dtype=np.int32)
    codes[has] = number[codes[has]]
    paths = list(at)
    return codes, [paths[c] for c in order.tolist()]


def _live(
    postings: Postings, keys: list[str | None], df: Counter[str]
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for term, count in df.items():
        found = postings.get(term) if count > 0 else None
        if found is None:
            continue
        live = {
            keys[int(s)]: float(w) for s, w in zip(*found, strict=True) if keys[int(s)] is not None
        }
        if live:
            out[term] = live  # type: ignore[assignment]
    return out
