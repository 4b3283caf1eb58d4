"""IDF-weighted keyword index over node labels, paths, signatures, summaries and memory text.

Each node is a small document: term -> field weight (the best field the term appears in).
Postings map a term to the nodes holding it, so a query touches only the nodes that share a
word with it. The index follows the graph through `NodeTracker` deltas (node identities, no use
of the store's dirty set): a one-file change re-tokenises only that file's nodes.

Scores are in [0, 1]: the share of the query's IDF mass that a node (or a file, over all its
nodes) explains, each term counted at the weight of the field it matched.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from knowledge.graph import Node
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
_TEXT_KINDS = frozenset({"memory", "episode", "entity"})


@dataclass(slots=True)
class Doc:
    node: Node
    terms: dict[str, float]  # exact (folded) term -> weight
    stems: dict[str, float]  # loose stem -> weight, only where it differs from the term


@dataclass(slots=True)
class Match:
    """Lexical result for one query: per node and per file, with the terms that matched."""

    terms: list[str]
    idf: dict[str, float]
    total: float = 0.0  # the query's IDF mass
    nodes: dict[str, float] = field(default_factory=dict)  # key -> score in [0, 1]
    why: dict[str, list[str]] = field(default_factory=dict)  # key -> matched terms
    files: dict[str, float] = field(default_factory=dict)  # path -> score in [0, 1]
    paths: dict[str, str] = field(default_factory=dict)  # key -> path, for the nodes above


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
        text = " ".join(
            str(t) for t in (node.label, node.summary, node.data.get("text", "")) if t
        )
        add(terms(text[:_MAX_TEXT]), W_TEXT)
        return out
    add(terms(node.summary), W_SUMMARY)
    add(terms(node.signature), W_SIGNATURE)
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


def _doc(node: Node) -> Doc:
    exact = node_terms(node)
    stems: dict[str, float] = {}
    for term, weight in exact.items():
        s = stem(term)
        if s != term and stems.get(s, 0.0) < weight:
            stems[s] = weight
    return Doc(node, exact, stems)


class LexicalIndex:
    """Postings kept in step with a graph through `apply` (see `Recaller.sync`)."""

    def __init__(self) -> None:
        self.docs: dict[str, Doc] = {}
        self.paths: dict[str, str] = {}  # key -> repo-relative path ("" for memories)
        self.postings: dict[str, dict[str, float]] = {}
        self.stem_postings: dict[str, dict[str, float]] = {}
        self.last_sync_changed = 0

    # -- keeping up with the graph ---------------------------------------------------------
    def apply(self, changed: list[Node], gone: list[Node]) -> int:
        """Follow a `NodeTracker` delta: only changed nodes are tokenised again. Returns how
        many nodes changed."""
        for node in gone:
            doc = self.docs.get(node.key)
            if doc is not None and doc.node is node:
                self._remove(node.key)
        for node in changed:
            self._remove(node.key)
            self._add(_doc(node))
        self.last_sync_changed = len(changed) + len({n.key for n in gone} - {
            n.key for n in changed})
        return self.last_sync_changed

    def _add(self, doc: Doc) -> None:
        key = doc.node.key
        self.docs[key] = doc
        self.paths[key] = doc.node.path
        for term, weight in doc.terms.items():
            self.postings.setdefault(term, {})[key] = weight
        for term, weight in doc.stems.items():
            self.stem_postings.setdefault(term, {})[key] = weight

    def _remove(self, key: str) -> None:
        doc = self.docs.pop(key, None)
        if doc is None:
            return
        del self.paths[key]
        for table, words in ((self.postings, doc.terms), (self.stem_postings, doc.stems)):
            for term in words:
                posting = table.get(term)
                if posting is not None:
                    posting.pop(key, None)
                    if not posting:
                        del table[term]

    # -- searching --------------------------------------------------------------------------
    def idf(self, term: str) -> float:
        """Smoothed IDF; a word no node holds counts as rare (it still dilutes the score)."""
        n = len(self.docs) + 1
        df = len(self.postings.get(term, ())) or len(self.stem_postings.get(stem(term), ()))
        return math.log(1.0 + n / (df + 1.0))

    def search(self, query: list[str], path_prefix: str | None = None) -> Match:
        idf = {t: self.idf(t) for t in query}
        total = sum(idf.values())
        match = Match(query, idf, total)
        if not query or total <= 0:
            return match
        raw: dict[str, float] = {}
        why: dict[str, list[str]] = {}
        per_file: dict[tuple[str, str], float] = {}  # (path, term) -> best weight
        paths = self.paths
        common = max(COMMON_POSTINGS, len(self.docs) // COMMON_SHARE)
        # Rarest first, so common terms can be limited to nodes already found.
        for term in sorted(query, key=lambda t: -idf[t]):
            weight_idf = idf[term]
            exact = self.postings.get(term, {})
            loose = self.stem_postings.get(stem(term), {})
            if len(exact) + len(loose) > common:
                if raw:  # a common word only adds to what rarer words found
                    hits = {k: w for k in raw
                            if (w := exact.get(k) or loose.get(k, 0.0) * STEM_FACTOR)}
                else:  # every word is common: start from nodes *named* by the rarest one
                    named = (k for k, w in exact.items() if w >= W_NAME)
                    hits = dict.fromkeys(itertools.islice(named, common), W_NAME)
            else:
                hits = {k: w * STEM_FACTOR for k, w in loose.items()}
                hits.update(exact)  # an exact match replaces a loose one
            for key, w in hits.items():
                path = paths[key]
                if path_prefix and not path.startswith(path_prefix):
                    continue
                raw[key] = raw.get(key, 0.0) + weight_idf * w
                if key in why:
                    why[key].append(term)
                else:
                    why[key] = [term]
                if path and per_file.get((path, term), 0.0) < w:
                    per_file[(path, term)] = w
        match.nodes = {k: v / total for k, v in raw.items()}
        match.why = why
        files: dict[str, float] = {}
        for (path, term), w in per_file.items():
            files[path] = files.get(path, 0.0) + idf[term] * w
        match.files = {p: v / total for p, v in files.items()}
        match.paths = {k: paths[k] for k in raw}
        return match
