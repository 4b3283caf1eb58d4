"""The simple systems Theus must beat (helper for bench/recall.py), defined exactly.

File universe, per request: the repository's code files at the base commit (source suffixes of
`bench/_tasks.py`), without declaration files (`.d.ts`, `.pyi`: never the file a change is
made in, so they could only push gold files down), without tests, docs, examples and
benchmarks unless the request is about tests (`knowledge.recall.intent`, the rule Theus itself
uses), and so without Markdown, changelogs or config. Everything a baseline ranks could be
gold.

- `bm25_code`: bm25s (Lucene BM25, k1 1.5, b 0.75) over path + content, identifiers split the
  way Theus splits them (camelCase, snake_case, dotted; plurals folded), English stopwords out.
- `dense`: the shipped local model over the layer's passages of the same files (30 lines,
  path first) cut at `DENSE_CHUNK_CHARS`, so at 256 word pieces by the model: dense ranks
  better so (tuning set R@5 0.734 / MRR 0.657) than over the layer's shorter heads (0.715 /
  0.636); a file scores its best chunk.
- `rrf`: reciprocal-rank fusion (k = 60) of the two, each ranked `DEPTH` deep.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench._tasks import DECLARATION_SUFFIXES, SOURCE_SUFFIXES, git, is_test_path
from knowledge.embed.cache import VectorCache
from knowledge.embed.local import LocalEmbedder
from knowledge.recall.intent import intent_of
from knowledge.recall.tokens import STOPWORDS, fold, split_words

DEPTH = 100
RRF_K = 60
DENSE_CHUNK_CHARS = 1500

Ranking = Callable[[str], list[str]]  # request -> ranked repo-relative paths


def code_files(git_dir: Path, base: str) -> list[str]:
    """Every code file at `base` (tests included; `universe` takes them out per request)."""
    names = git(git_dir, "ls-tree", "-r", "--name-only", base).splitlines()
    return sorted(
        p
        for p in names
        if Path(p).suffix in SOURCE_SUFFIXES and not p.endswith(DECLARATION_SUFFIXES)
    )


def universe(files: list[str], query: str) -> list[bool]:
    """Which of `files` a baseline may rank for `query`."""
    tests_too = intent_of(query).tests
    return [tests_too or not is_test_path(p) for p in files]


def tokens(text: str) -> list[str]:
    return [fold(w) for w in split_words(text) if len(w) > 1 and w not in STOPWORDS]


def read(root: Path, rel: str) -> str:
    try:
        return (root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def bm25_code(root: Path, files: list[str]) -> Ranking:
    """Two indexes, so that rarity and length come from the universe itself: the code files
    without tests, and with them (for a request about tests)."""
    import bm25s

    texts = {rel: tokens(rel + "\n" + read(root, rel)) for rel in files}
    indexes = {}
    for tests_too in (False, True):
        chosen = [p for p in files if tests_too or not is_test_path(p)]
        retriever = bm25s.BM25()
        retriever.index([texts[p] for p in chosen], show_progress=False)
        indexes[tests_too] = (chosen, retriever)

    def rank(query: str) -> list[str]:
        chosen, retriever = indexes[intent_of(query).tests]
        terms = [t for t in tokens(query) if t in retriever.vocab_dict]
        if not terms:
            return []
        scores = retriever.get_scores(terms)
        order = np.argsort(-scores, kind="stable")[:DEPTH]
        return [chosen[i] for i in order if scores[i] > 0]

    return rank


@dataclass
class Embeddings:
    """One loaded model and one vector cache for every dense system of a run."""

    cache_path: Path
    embedder: LocalEmbedder = field(init=False)
    cache: VectorCache = field(init=False)
    seconds: float = 0.0  # spent embedding texts the cache did not have
    embedded: int = 0

    def __post_init__(self) -> None:
        self.embedder = LocalEmbedder()  # all cores, like `theus index`
        self.embedder.load()
        self.cache = VectorCache(self.cache_path, self.embedder.model_id, self.embedder.dim)

    def vectors(self, texts: list[str]) -> np.ndarray:
        found = self.cache.get_many(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        for at in range(0, len(missing), 256):  # put as we go: an interrupted run keeps them
            part = missing[at : at + 256]
            start = time.perf_counter()
            rows = self.embedder.embed(part)
            self.seconds += time.perf_counter() - start
            self.embedded += len(part)
            self.cache.put_many(part, rows)
            found.update(zip(part, rows, strict=True))
        if not texts:
            return np.empty((0, self.embedder.dim), np.float32)
        return np.stack([found[t] for t in texts])

    def close(self) -> None:
        self.cache.close()


def dense(emb: Embeddings, root: Path, files: list[str]) -> Ranking:
    from knowledge.embed.indexer import chunk_text

    owner: list[int] = []
    texts: list[str] = []
    for i, rel in enumerate(files):
        for text in chunk_text(rel, read(root, rel), limit=DENSE_CHUNK_CHARS):
            owner.append(i)
            texts.append(text)
    matrix = emb.vectors(texts)
    owners = np.array(owner, dtype=np.int64)

    def rank(query: str) -> list[str]:
        sims = matrix @ emb.embedder.embed([query])[0]
        best = np.full(len(files), -2.0, dtype=np.float32)
        np.maximum.at(best, owners, sims)
        best = np.where(np.array(universe(files, query)), best, -3.0)
        order = np.argsort(-best, kind="stable")[:DEPTH]
        return [files[i] for i in order if best[i] > -2.0]

    return rank


def rrf(*rankings: list[str], k: int = RRF_K) -> list[str]:
    fused: dict[str, float] = {}
    for ranking in rankings:
        for i, path in enumerate(ranking):
            fused[path] = fused.get(path, 0.0) + 1.0 / (k + i + 1)
    return sorted(fused, key=lambda p: (-fused[p], p))
