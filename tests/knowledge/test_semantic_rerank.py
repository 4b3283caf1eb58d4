"""The re-ranker with the real local model: a conceptual request that shares no meaningful word
with the right file finds it only with the layer on; scores stay in [0, 1]."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowledge.embed.base import Vectors
from knowledge.embed.indexer import NodeVectors, embed_pass
from knowledge.embed.layer import SemanticLayer
from knowledge.embed.local import LocalEmbedder
from knowledge.embed.semantic import QUERY_TOKENS, SemanticReranker
from knowledge.index.project import Project
from knowledge.recall.recaller import Recaller
from tests.conftest import indexed_project

FILES = {
    "media/thumbs.py": "def shrink_image(picture, width):\n"
    '    """Scale a picture down for previews."""\n    return picture\n',
    "billing/invoice.py": "def render_invoice(order):\n"
    '    """Format the invoice page as HTML."""\n    return order\n',
    "auth/session.py": "def expire_session(token):\n"
    '    """Log the user out after inactivity."""\n    return token\n',
}
# Only "page" is shared, and with the wrong file.
QUERY = "make photos smaller for the gallery page"


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    project = indexed_project(tmp_path / "repo", FILES)
    yield project
    project.close()


def test_a_conceptual_request_finds_the_right_file_only_with_the_layer(project: Project) -> None:
    lexical = Recaller(project.graph, project.root).recall(QUERY)
    assert lexical.hits and lexical.hits[0].path == "billing/invoice.py"
    assert "media/thumbs.py" not in {h.path for h in lexical.hits}

    layer = SemanticLayer(project, credentials=None)  # the cascade: local model
    report = layer.embed_all()
    assert report is not None and report.embedded == len(FILES)  # one chunk per small file
    assert layer.selection is not None and layer.selection.provider == "local"
    result = Recaller(project.graph, project.root, reranker=layer.reranker).recall(QUERY)
    layer.stop()
    assert result.hits[0].path == "media/thumbs.py"
    assert all(0.0 <= h.score <= 1.0 for h in result.hits)
    assert layer.stats.used == 1


def test_candidates_without_vectors_are_embedded_within_the_deadline(project: Project) -> None:
    embedder = LocalEmbedder()
    # Nothing embedded yet: the candidates are read and embedded within the deadline.
    reranker = SemanticReranker.fixed(embedder, NodeVectors(embedder.dim), root=project.root)
    candidates = Recaller(project.graph, project.root).recall("scale invoice session").hits
    assert len(candidates) >= 3
    embedder.embed(["warm up"])
    out = reranker.begin("shrink a picture", time.perf_counter() + 5.0)(candidates, project.graph)
    assert out[0].path == "media/thumbs.py"
    assert sorted(h.key for h in out) == sorted(h.key for h in candidates)
    assert all(0.0 <= h.score <= 1.0 for h in out)


def test_past_the_deadline_candidates_pass_through(project: Project) -> None:
    embedder = LocalEmbedder()
    reranker = SemanticReranker.fixed(embedder, NodeVectors(embedder.dim))
    candidates = Recaller(project.graph, project.root).recall("invoice session").hits
    out = reranker.begin("anything", time.perf_counter() - 1.0)(candidates, project.graph)
    assert out == candidates and reranker.stats.late == 1


class _Recording:
    """The real model, recording what it was asked to embed and when."""

    def __init__(self, events: list[str]) -> None:
        self.inner = LocalEmbedder()
        self.events = events
        self.texts: list[str] = []
        self.bounds: list[int | None] = []
        self.model_id, self.dim = self.inner.model_id, self.inner.dim

    def embed(self, texts: list[str], max_tokens: int | None = None) -> Vectors:
        self.events.append("embed")
        self.texts += texts
        self.bounds.append(max_tokens)
        return self.inner.embed(texts, max_tokens)

    def close(self) -> None:
        self.inner.close()


def test_the_request_is_embedded_beside_the_keyword_search(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    embedder = _Recording(events)
    vectors = NodeVectors(embedder.dim)
    embed_pass(project.graph, project.root, embedder.inner, None, vectors)
    reranker = SemanticReranker.fixed(embedder, vectors, root=project.root)
    recaller = Recaller(project.graph, project.root, reranker=reranker)
    recaller.warm()
    search = recaller.index.search

    def searching(*args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(0.2)  # a keyword search long enough for the embedding to start in
        events.append("search")
        return search(*args, **kwargs)

    monkeypatch.setattr(recaller.index, "search", searching)
    result = recaller.recall(QUERY)
    assert events[:2] == ["embed", "search"]
    assert result.hits[0].path == "media/thumbs.py" and reranker.stats.used == 1


def test_only_the_start_of_a_long_request_is_embedded(project: Project) -> None:
    embedder = _Recording([])
    reranker = SemanticReranker.fixed(embedder, NodeVectors(embedder.dim), root=project.root)
    long_request = QUERY + ". " + " ".join(["The rest of a long pull request text."] * 40)
    Recaller(project.graph, project.root, reranker=reranker).recall(long_request)
    request_text = embedder.texts[0]
    assert long_request.startswith(request_text) and len(request_text) < len(long_request) // 4
    assert embedder.bounds[0] == QUERY_TOKENS  # and the local model reads its first pieces


SPREAD = """
import sys
from knowledge.embed.semantic import _spread
spread = _spread({"a.py": 0.1, "b.py": 0.3, "c.py": 0.5, "d.py": 0.9})
print(sorted(spread.items()), "numpy.ma" in sys.modules)
"""


def test_cosines_are_spread_from_the_median_without_loading_masked_arrays() -> None:
    # np.median's first call imports numpy.ma: 75 ms of every one-shot recall with the layer.
    done = subprocess.run(
        [sys.executable, "-c", SPREAD], capture_output=True, text=True, check=True, timeout=60
    )
    low = (0.3 + 0.5) / 2
    expected = [("a.py", 0.0), ("b.py", 0.0), ("c.py", (0.5 - low) / (0.9 - low)), ("d.py", 1.0)]
    assert done.stdout.strip() == f"{expected} False"
