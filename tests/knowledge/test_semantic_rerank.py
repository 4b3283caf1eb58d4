"""The re-ranker with the real local model: a conceptual request that shares no meaningful word
with the right file finds it only with the layer on; scores stay in [0, 1]."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowledge.embed.indexer import NodeVectors
from knowledge.embed.layer import SemanticLayer
from knowledge.embed.local import LocalEmbedder
from knowledge.project import Project
from knowledge.recall import Recaller
from knowledge.recall.semantic import SemanticReranker
from tests.conftest import indexed_project

FILES = {
    "media/thumbs.py": 'def shrink_image(picture, width):\n'
                       '    """Scale a picture down for previews."""\n    return picture\n',
    "billing/invoice.py": 'def render_invoice(order):\n'
                          '    """Format the invoice page as HTML."""\n    return order\n',
    "auth/session.py": 'def expire_session(token):\n'
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

    layer = SemanticLayer(project, env={}, credentials=None)  # the cascade: local model
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
    out = reranker.rerank("shrink a picture", candidates, project.graph,
                          time.perf_counter() + 5.0)
    assert out[0].path == "media/thumbs.py"
    assert sorted(h.key for h in out) == sorted(h.key for h in candidates)
    assert all(0.0 <= h.score <= 1.0 for h in out)


def test_past_the_deadline_candidates_pass_through(project: Project) -> None:
    embedder = LocalEmbedder()
    reranker = SemanticReranker.fixed(embedder, NodeVectors(embedder.dim))
    candidates = Recaller(project.graph, project.root).recall("invoice session").hits
    out = reranker.rerank("anything", candidates, project.graph, time.perf_counter() - 1.0)
    assert out == candidates and reranker.stats.late == 1
