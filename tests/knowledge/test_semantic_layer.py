"""SemanticLayer end to end: the cascade's effect, the hosted path through the re-ranker against
a scripted /embeddings server on 127.0.0.1 (including one that errors, hangs or changes its
dimension), the dimension check on the vector cache, and the kill switch."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from knowledge.core.settings import MemorySettings
from knowledge.embed.cache import VectorCache, cached
from knowledge.embed.hosted import hosted_model_id
from knowledge.embed.layer import SemanticLayer
from knowledge.embed.status import status_section
from knowledge.index.project import Project
from knowledge.recall.recaller import Recaller
from tests.conftest import GatedEmbedder, indexed_project
from tests.scripted_embeddings import EmbeddingsScript as Script
from tests.scripted_embeddings import serve_embeddings

FILES = {
    "shop/cart.py": '"""Shopping cart."""\n\n\ndef cart_total(items):\n'
    '    """Sum of line prices."""\n    return sum(items)\n',
    "shop/pricing.py": 'def price_of(item):\n    """Unit price with discounts."""\n'
    "    return item.price\n",
    "mail/smtp.py": 'def send_message(to, body):\n    """Deliver a message over SMTP."""\n'
    "    return to, body\n",
}
DIM = 32


def _bag(text: str, dim: int) -> list[float]:
    """A deterministic bag-of-words vector: texts sharing words are close."""
    vec = [0.0] * dim
    for word in re.findall(r"[a-z]+", text.lower()):
        vec[zlib.crc32(word.encode()) % dim] += 1.0
    vec[0] += 0.01  # never all zero
    return vec


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script(vector=_bag, dim=DIM)
    with serve_embeddings(script) as url:
        yield url, script


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    project = indexed_project(tmp_path / "repo", FILES)
    yield project
    project.close()


def hosted_env(url: str) -> MemorySettings:
    return MemorySettings(embeddings_url=url, embeddings_model="bag")


def layer_for(project: Project, settings: MemorySettings) -> SemanticLayer:
    return SemanticLayer(project, settings=settings, credentials=None, timeout=2.0)


def test_hosted_embeds_the_graph_and_reranks(project: Project, server: tuple[str, Script]) -> None:
    url, script = server
    layer = layer_for(project, hosted_env(url))
    assert layer.on and layer.reranker is not None
    layer.start_background()
    try:
        assert layer.wait_idle(10)
        embedded = set(script.inputs)
        assert any("cart_total" in t for t in embedded)
        result = Recaller(project.graph, project.root, reranker=layer.reranker).recall(
            "cart total prices"
        )
    finally:
        layer.stop()
    assert result.hits[0].path == "shop/cart.py"
    assert all(0.0 <= h.score <= 1.0 for h in result.hits)
    assert "cart total prices" in script.inputs
    assert layer.stats.used == 1 and layer.stats.failed == 0
    section = status_section(project, settings=hosted_env(url))
    assert section["provider"] == "hosted"
    assert section["nodes_pending"] == 0 and section["vectors_cached"] > 0
    assert section["reranks_used"] == 1


def _numbered(stem: str, lines: int) -> str:
    return "".join(f"{stem}_{n} = {n}\n" for n in range(lines))


def test_each_kind_is_embedded_as_often_as_requests_want_it(
    tmp_path: Path, server: tuple[str, Script]
) -> None:
    """Code every 30 lines, tests and docs every 90, kinds no request counts fully not at all:
    the re-rank reads only wanted kinds, so their vectors would be spent for nothing."""
    url, script = server
    files = {
        "shop/cart.py": _numbered("cart", 100),
        "tests/test_cart.py": _numbered("checked", 100),
        "docs/guide.md": "".join(f"guide line {n}\n" for n in range(100)),
        "CHANGELOG.md": "## 1.0\n- carts\n",
        "types/cart.d.ts": "export declare function cartTotal(): number;\n",
        "settings.json": '{"currency": "EUR"}\n',
        "examples/demo.py": "demo = 1\n",
    }
    project = indexed_project(tmp_path / "repo", files)
    layer = layer_for(project, hosted_env(url))
    layer.start_background()
    try:
        assert layer.wait_idle(10)
    finally:
        layer.stop()
        project.close()
    heads = {
        path: sorted(t.split("\n")[1] for t in script.inputs if t.startswith(path + "\n"))
        for path in files
    }
    assert heads["shop/cart.py"] == ["cart_0 = 0", "cart_30 = 30", "cart_60 = 60", "cart_90 = 90"]
    assert heads["tests/test_cart.py"] == ["checked_0 = 0", "checked_90 = 90"]
    assert heads["docs/guide.md"] == ["guide line 0", "guide line 90"]
    assert heads["CHANGELOG.md"] == heads["types/cart.d.ts"] == []
    assert heads["settings.json"] == heads["examples/demo.py"] == []


def test_notify_changed_embeds_the_new_nodes(project: Project, server: tuple[str, Script]) -> None:
    url, script = server
    layer = layer_for(project, hosted_env(url))
    layer.start_background()
    try:
        assert layer.wait_idle(10)
        (project.root / "shop" / "refunds.py").write_text(
            'def issue_refund(order):\n    """Give the money back."""\n', encoding="utf-8"
        )
        project.update(["shop/refunds.py"])
        layer.notify_changed(["shop/refunds.py"])
        assert layer.wait_idle(10)
        live = status_section(project, settings=hosted_env(url), live=layer.state)  # running layer
        assert live["nodes_pending"] == 0 and live["vectors_cached"] == len(FILES) + 1
    finally:
        layer.stop()
    assert any("issue_refund" in t for t in script.inputs)


def test_without_background_the_first_rerank_prepares_and_embeds_only_candidates(
    project: Project, server: tuple[str, Script]
) -> None:
    url, script = server
    layer = layer_for(project, hosted_env(url))  # a one-shot run: no start_background()
    result = Recaller(project.graph, project.root, reranker=layer.reranker).recall("cart total")
    layer.notify_changed(["shop/cart.py"])  # a watcher update must not start a whole pass
    assert layer.wait_idle(10)
    layer.stop()
    assert result.hits[0].path == "shop/cart.py" and layer.stats.used == 1
    assert not any("SMTP" in t for t in script.inputs)  # mail/smtp.py was no candidate


@pytest.mark.parametrize("mode", ["error", "hang", "dimension"])
def test_a_failing_endpoint_leaves_lexical_recall(
    project: Project, server: tuple[str, Script], mode: str
) -> None:
    url, script = server
    layer = layer_for(project, hosted_env(url))
    assert layer.prepare() is not None  # healthy at start: the dimension is learned
    lexical = Recaller(project.graph, project.root).recall("cart total prices")
    if mode == "dimension":
        script.dim = DIM * 2
    else:
        script.mode = mode
    recaller = Recaller(project.graph, project.root, reranker=layer.reranker)
    start = time.perf_counter()
    result = recaller.recall("cart total prices")
    took = time.perf_counter() - start
    layer.stop()
    assert [h.key for h in result.hits] == [h.key for h in lexical.hits]
    assert [h.score for h in result.hits] == [h.score for h in lexical.hits]
    assert took < 2.0  # the 0.8 s budget, not the endpoint's timeout
    # The client's one retry on HTTP 500 may run past the deadline: late or failed, not used.
    assert layer.stats.late + layer.stats.failed == 1 and layer.stats.used == 0
    if mode != "error":
        assert (layer.stats.late if mode == "hang" else layer.stats.failed) == 1


def test_an_endpoint_down_at_start_leaves_lexical_recall(
    project: Project, server: tuple[str, Script]
) -> None:
    url, script = server
    script.mode = "error"
    layer = layer_for(project, hosted_env(url))
    layer.start_background()
    try:
        # the failed start is what this is about: a recall before it is merely late
        assert layer.wait_idle(10)
        result = Recaller(project.graph, project.root, reranker=layer.reranker).recall("cart total")
    finally:
        layer.stop()
    assert result.hits[0].path == "shop/cart.py"
    assert layer.stats.skipped == 1
    assert "HTTP 500" in status_section(project, settings=hosted_env(url))["reason"]


def test_a_cache_of_another_dimension_is_refused_not_used(
    project: Project, server: tuple[str, Script]
) -> None:
    url, _ = server
    model_id = hosted_model_id(url, "bag")
    with VectorCache(project.paths.vectors, model_id, DIM * 2) as stale:
        stale.put_many(["old"], np.ones((1, DIM * 2), dtype=np.float32) / 8.0)
    layer = layer_for(project, hosted_env(url))
    layer.start_background()
    try:
        assert layer.wait_idle(10)
        result = Recaller(project.graph, project.root, reranker=layer.reranker).recall(
            "cart total prices"
        )
    finally:
        layer.stop()
    assert result.hits[0].path == "shop/cart.py" and layer.stats.used == 1
    assert "expected 64-d vectors, got 32-d" in layer.cache_error
    section = status_section(project, settings=hosted_env(url))
    assert section["cache"].startswith("refused")
    assert cached(project.paths.vectors, model_id, ["old"]) == (DIM * 2, 1, {"old"})


def test_kill_switch_imports_and_loads_nothing(project: Project) -> None:
    script = f"""
import sys
import os
from entrypoint.settings import apply
apply({{}}, os.environ)  # as `theus` does at start
from pathlib import Path
from knowledge.embed.layer import SemanticLayer
from knowledge.embed.status import status_section
from knowledge.index.project import Project
from knowledge.recall.recaller import Recaller
project = Project(Path({str(project.root)!r}))
layer = SemanticLayer(project)
layer.start_background()
assert not layer.on and layer.reranker is None
assert layer.embed_all() is None and layer.prepare() is None
hits = Recaller(project.graph, project.root, reranker=layer.reranker).recall("cart total").hits
assert hits[0].path == "shop/cart.py"
assert status_section(project)["provider"] == "off"
layer.stop()
loaded = sorted(m for m in ("onnxruntime", "tokenizers", "openai") if m in sys.modules)
print("loaded:", loaded)
"""
    env = {
        **os.environ,
        "THEUS_NO_EMBEDDINGS": "1",
        "THEUS_EMBEDDINGS_URL": "http://127.0.0.1:9/v1",
    }
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "loaded: []"


def test_status_takes_the_pending_count_from_the_last_pass_until_the_graph_moves(
    project: Project, server: tuple[str, Script], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = server
    layer = layer_for(project, hosted_env(url))
    assert layer.embed_all() is not None
    layer.stop()  # its state is on disk, as another process would leave it
    import knowledge.embed.indexer as indexer

    def unread(*args: object) -> list[str]:
        raise AssertionError("status read every file although the graph had not moved")

    one_shot = SemanticLayer(
        project, settings=hosted_env(url), credentials=None, timeout=2.0, one_shot=True
    )
    assert one_shot.reranker is not None
    Recaller(project.graph, project.root, reranker=one_shot.reranker).recall("cart total")
    one_shot.stop()  # a one-shot recall ran no pass: what the last pass counted still stands
    with monkeypatch.context() as patched:
        patched.setattr(indexer, "embed_texts", unread)
        section = status_section(project, settings=hosted_env(url))
    assert section["nodes_pending"] == 0 and section["vectors_cached"] == len(FILES)
    assert section["reranks_used"] == 1  # and the one-shot's counters were written
    (project.root / "shop" / "cart.py").write_text(
        "def cart_total(items):\n    return 0\n", encoding="utf-8"
    )
    project.update(["shop/cart.py"])
    project.save()  # the last pass no longer stands for the saved graph
    section = status_section(project, settings=hosted_env(url))
    assert section["nodes_pending"] == 1


def test_the_background_pass_reports_its_progress_while_it_embeds(project: Project) -> None:
    embedder = GatedEmbedder()
    layer = SemanticLayer(project, credentials=None, local_loader=lambda: embedder)
    layer.start_background()
    try:
        deadline = time.monotonic() + 30
        while layer.progress is None and time.monotonic() < deadline:
            time.sleep(0.01)  # the pass starts on its own thread: no event to wait on
        assert layer.progress == (0, len(FILES))  # one chunk per small file, none done yet
        embedder.gate.set()
        assert layer.wait_idle(30)
        assert layer.progress is None
        assert layer.last_pass is not None and layer.last_pass.embedded == len(FILES)
    finally:
        layer.stop()
