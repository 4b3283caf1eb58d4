"""Rank the files for a request, then pick the nodes that show why.

Files first: a request is answered in files, and a file is the unit every signal agrees on.
Per file (all in one scale, each normalised by its best over this request):

    lexical = content / best content           BM25 over the file's text (`content`)
            + PASSAGES * passage / best passage  BM25 of its best 30-line passage
            + NAMES * names / best names       IDF keywords over its labels (`lexical`)
            + IDENTS / sqrt(files so named)    per identifier the request spells out that
                                               this file defines (at most `MAX_NAMED` files)
            + FILENAMES / sqrt(files so named) per word of the request's head that is the
                                               file's name ("fix the typing" -> typing.py)
            + HISTORY * votes / best votes     from the past commits most like the request
    lexical *= kind factor                     code 1, tests 0.5, docs 0.3... (`kinds`)
    score = (1 - HASH) * lexical / best + HASH * cosine(hash(request), hash(file))
          + GRAPH * what traversal from the best files brings it (`traverse`)

The hash tie-break only re-orders files that already have keyword signal; traversal starts
at the best `SEEDS` files and their best matching nodes. A file that serves another never
precedes it (`_after_what_they_serve`): declarations follow their implementation, tests and
examples the code they import, unless the request is about them. Every weight is a
field of `RecallTuning`, so the benchmark can switch each signal off (bench/recall.py
--ablate); the defaults are what bench/recall.py measured best on its tuning repositories.
"""

from __future__ import annotations

import heapq
import math
import re
from dataclasses import dataclass, field, replace

from knowledge.core import keys
from knowledge.core.graph import GraphReader
from knowledge.recall.content import ContentMatch
from knowledge.recall.hashvec import Vector, cosines, embed
from knowledge.recall.intent import Intent
from knowledge.recall.kinds import (
    CODE,
    DECLARATION,
    DECLARATION_SUFFIXES,
    EXAMPLE,
    KINDS,
    TEST,
    asked_for,
    factor,
    kind_of,
)
from knowledge.recall.lexical import Match
from knowledge.recall.traverse import Reached, spread

POOL = 150  # files kept after the lexical pass, for the tie-break and traversal
SEEDS = 8  # best files traversal starts from (HOT)
SEED_FLOOR = 0.5  # ... scoring at least this share of the best
MAX_NAMED = 20  # an identifier more files define than this names nothing in particular
EXPLAINED = 30  # files whose reason is spelled out (the rest are not shown)
REACHED = 20  # files found by traversal alone that join the ranking (the best reached)


@dataclass(frozen=True)
class RecallTuning:
    """The ranking's weights (see the module docstring); `ablations` switches each off."""

    content: float = 1.0
    passages: float = 0.5  # the file's best passage (`content`)
    names: float = 0.4
    idents: float = 0.5
    filenames: float = 0.25  # a file the request's head names by its stem ("typing")
    history: float = 0.5  # votes of the commits most like the request (`history`)
    head: float = 3.0  # weight of a word in the request's head (`tokens.head`)
    kinds: bool = True
    hash: float = 0.2
    graph: float = 0.1

    def ablations(self) -> dict[str, RecallTuning]:
        return {
            "content": replace(self, content=0.0, passages=0.0),
            "passages": replace(self, passages=0.0),
            "names": replace(self, names=0.0),
            "idents": replace(self, idents=0.0),
            "filenames": replace(self, filenames=0.0),
            "history": replace(self, history=0.0),
            "head": replace(self, head=1.0),
            "kinds": replace(self, kinds=False),
            "hash": replace(self, hash=0.0),
            "graph": replace(self, graph=0.0),
        }


@dataclass(slots=True)
class RankedFile:
    path: str
    score: float  # in [0, 1], relative to the best file of this request
    layer: str  # HOT (a seed), WARM, COLD
    why: str
    coverage: float = 0.0  # share of the request's weighted IDF mass the file contains


@dataclass
class Signals:
    """What the indexes found for one request."""

    intent: Intent
    match: Match  # labels
    content: ContentMatch
    named: dict[str, list[str]] = field(default_factory=dict)  # identifier -> defining files
    files_named: dict[str, list[str]] = field(default_factory=dict)  # head word -> files so named
    history: dict[str, float] = field(default_factory=dict)  # path -> votes of past commits


def lexical_scores(signals: Signals, tuning: RecallTuning) -> dict[str, float]:
    """Per path: content, labels and named identifiers on one scale, times the kind factor."""
    content = signals.content.scores if tuning.content else {}
    names = signals.match.best if tuning.names else {}
    best_content = signals.content.best or 1.0
    best_names = max(names.values(), default=0.0) or 1.0
    best_passage = signals.content.best_passage or 1.0
    out: dict[str, float] = {}
    for path, value in content.items():
        out[path] = (
            tuning.content * value / best_content
            + tuning.passages * signals.content.passages[path] / best_passage
        )
    for path, value in names.items():
        out[path] = out.get(path, 0.0) + tuning.names * value / best_names
    for weight, named in ((tuning.idents, signals.named), (tuning.filenames, signals.files_named)):
        for files in named.values() if weight else ():
            if 0 < len(files) <= MAX_NAMED:
                bonus = weight / math.sqrt(len(files))
                for path in files:
                    out[path] = out.get(path, 0.0) + bonus
    best_votes = max(signals.history.values(), default=0.0) or 1.0
    for path, value in signals.history.items():
        out[path] = out.get(path, 0.0) + tuning.history * value / best_votes
    if tuning.kinds:
        by_kind = {kind: factor(kind, signals.intent) for kind in KINDS}
        out = {p: v * by_kind[kind_of(p)] for p, v in out.items()}
    return out


def rank_files(
    graph: GraphReader,
    query: str,
    signals: Signals,
    hashes: dict[str, Vector],
    tuning: RecallTuning,
) -> list[RankedFile]:
    """`hashes`: the files' hash vectors (`LexicalIndex.hash_vectors`)."""
    lexical = lexical_scores(signals, tuning)
    pool = heapq.nlargest(POOL, lexical.items(), key=lambda kv: (kv[1], kv[0]))
    pool = [(p, v) for p, v in pool if v > 0]
    if not pool:
        return []
    best = pool[0][1]
    sims: dict[str, float] = {}
    hashed = [p for p, _ in pool if p in hashes]
    if tuning.hash and hashed:
        sims = dict(zip(hashed, cosines(embed(query), [hashes[p] for p in hashed]), strict=True))
    coverage = signals.content.found
    ranked = {
        p: RankedFile(
            p,
            (1 - tuning.hash) * v / best + tuning.hash * sims.get(p, 0.0),
            "WARM",
            "",
            max(coverage.get(p, 0.0), signals.match.best.get(p, 0.0)),
        )
        for p, v in pool
    }
    order = sorted(ranked.values(), key=lambda r: (-r.score, r.path))
    seeds = [r for r in order[:SEEDS] if r.score >= SEED_FLOOR * order[0].score]
    for r in seeds:
        r.layer = "HOT"
    _traverse(graph, signals.match, seeds, ranked, tuning.graph)
    order = sorted(ranked.values(), key=lambda r: (-r.score, r.path))
    order = _after_what_they_serve(graph, order, signals.intent)
    top = order[0].score or 1.0
    for r in order:
        r.score = min(1.0, r.score / top)
    for r in order[:EXPLAINED]:
        r.why = _reason(graph, r.path, signals, r.why)
    return order


def _traverse(
    graph: GraphReader,
    match: Match,
    seeds: list[RankedFile],
    ranked: dict[str, RankedFile],
    weight: float,
) -> None:
    """Spread from the seed files and their best symbols; a file reached gains `weight` times
    the best its nodes reached; a file only traversal found joins as WARM (1 hop) or COLD."""
    start: dict[str, float] = {}
    seed_paths = {r.path for r in seeds}
    for r in seeds:
        start[keys.file_key(r.path)] = r.score
    for r in seeds:
        for _, key in match.top(r.path):
            start[key] = r.score
    if not start:
        return
    reached_by_file: dict[str, Reached] = {}
    for key, reached in spread(graph, start).items():
        path = keys.path_of(key)
        if path is None:  # a table, a memory...: only its node knows (or has no) path
            node = graph.get(key)
            path = node.path if node is not None else ""
        if not path or path in seed_paths:
            continue
        known = reached_by_file.get(path)
        if known is None or reached.score > known.score:
            reached_by_file[path] = reached
    joined = 0
    for path, best in sorted(reached_by_file.items(), key=lambda kv: -kv[1].score):
        found = ranked.get(path)
        if found is not None:
            found.score += weight * best.score
            found.why += f"; {best.via}"
        elif weight and joined < REACHED and kind_of(path) == CODE:
            ranked[path] = RankedFile(
                path, weight * best.score, "WARM" if best.hop == 1 else "COLD", best.via
            )
            joined += 1


def _after_what_they_serve(
    graph: GraphReader, order: list[RankedFile], intent: Intent
) -> list[RankedFile]:
    """A file that serves another never precedes it: a declaration (`.d.ts`, a stub) follows
    the implementation beside it, or else the best code file; a test or an example follows
    the best code file it imports or is named after, unless the request is about tests (or
    examples).
    Each moves to just after what it serves when it was ranked ahead of it."""
    position = {r.path: i for i, r in enumerate(order)}
    first_code = next((r.path for r in order if kind_of(r.path) == CODE), None)
    moves: dict[str, str] = {}  # file -> the file it follows
    for i, r in enumerate(order):
        kind = kind_of(r.path)
        if kind == DECLARATION:
            served = [p for p in _implementations(r.path) if p in position]
            target = served[0] if served else first_code
        elif kind in (TEST, EXAMPLE) and not asked_for(kind, intent):
            served = [p for p in _tested(graph, r.path) if p in position]
            target = min(served, key=position.__getitem__) if served else None
        else:
            continue
        if target is not None and position[target] > i:
            moves[r.path] = target
    if not moves:
        return order
    out: list[RankedFile] = []
    for r in order:
        if r.path in moves:
            continue
        out.append(r)
        for d in order:
            if moves.get(d.path) == r.path:
                d.score = min(d.score, r.score)  # it follows: it scores no more
                out.append(d)
    return out


def _implementations(path: str) -> list[str]:
    """The files a declaration declares: same folder and stem, a source suffix."""
    lower = path.lower()
    suffix = next(s for s in DECLARATION_SUFFIXES if lower.endswith(s))
    stem = path[: -len(suffix)]
    if suffix == ".pyi":
        return [stem + ".py"]
    return [stem + s for s in (".ts", ".tsx", ".js", ".mjs", ".cjs", ".mts", ".cts", ".jsx")]


_TESTED_NAME = re.compile(r"^(test_)?(?P<stem>.+?)([._-](test|spec)s?|Tests?)?$")


def _tested(graph: GraphReader, path: str) -> list[str]:
    """The code files a test (or an example) is about: those it imports, and the file in
    the same folder named after it (`foo_test.go` -> `foo.go`, `test_foo.py` -> `foo.py`)."""
    out = [e.dst.removeprefix("file:") for e in graph.out_edges(keys.file_key(path), "imports")]
    folder, _, name = path.rpartition("/")
    stem, dot, suffix = name.rpartition(".") if "." in name else (name, "", "")
    found = _TESTED_NAME.match(stem)
    if found and found.group("stem") != stem:
        base = f"{folder}/{found.group('stem')}" if folder else found.group("stem")
        out.append(f"{base}{dot}{suffix}")
    return out


def _reason(graph: GraphReader, path: str, signals: Signals, via: str) -> str:
    """Why a file ranks: the identifiers it defines, the label words its best nodes matched,
    its text's words, and what traversal reached it by."""
    match = signals.match
    named = [i for i, files in signals.named.items() if path in files]
    words: list[str] = []
    for _, key in match.top(path):
        node = graph.get(key)
        if node is not None:
            words += [w for w in match.terms_of(node) if w not in words]
    parts = []
    if named:
        parts.append("defines " + ", ".join(named[:3]))
    if words:
        parts.append("names match " + ", ".join(words[:5]))
    if path in signals.content.scores:
        parts.append("words in its text")
    if path in signals.history:
        parts.append("changed by similar commits")
    if via:
        parts.append(via.lstrip("; "))
    return "; ".join(parts) or "related"
