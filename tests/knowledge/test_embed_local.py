"""The local ONNX embedder: real model, loaded once for the module."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from knowledge.embed.base import EmbedderUnavailable, ModelIntegrityError, Vectors
from knowledge.embed.local import DIM, LocalEmbedder, default_model_path, default_tokenizer_path
from knowledge.embed.semantic import QUERY_TOKENS


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    loaded = LocalEmbedder(threads=1)
    loaded.load()
    return loaded


def test_unit_norm_float32_rows_in_input_order(embedder: LocalEmbedder) -> None:
    texts = ["a much longer sentence about carts, prices and totals", "short", ""]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Rows follow the input order although batches are sorted by length internally.
    np.testing.assert_allclose(vectors[1], embedder.embed(["short"])[0], atol=1e-5)


def test_related_pair_ranks_above_unrelated(embedder: LocalEmbedder) -> None:
    query, related, unrelated = embedder.embed(
        [
            "how are tools registered",
            "def register_tool(registry, tool)",
            "CSS colour of the footer",
        ]
    )
    assert float(query @ related) > float(query @ unrelated) + 0.2


def test_padding_does_not_change_a_vector(embedder: LocalEmbedder) -> None:
    alone = embedder.embed(["where is the cart total computed"])[0]
    with_long = embedder.embed(["where is the cart total computed", "word " * 400])[0]
    assert float(alone @ with_long) > 0.999


def test_max_tokens_reads_only_the_first_word_pieces(embedder: LocalEmbedder) -> None:
    head = "where is the cart total computed for orders"  # 8 pieces, 10 with [CLS] and [SEP]
    refunds, footer = head + " and refunds" * 40, head + ", css colours of the footer" * 20
    capped = embedder.embed([refunds, footer, "short"], max_tokens=10)
    whole = embedder.embed([refunds, footer, "short"])
    alone = embedder.embed([head])[0]
    assert float(capped[0] @ alone) > 0.9999 and float(capped[1] @ alone) > 0.9999
    assert float(whole[0] @ whole[1]) < 0.95  # uncut, their tails tell them apart
    assert float(capped[2] @ whole[2]) > 0.9999  # a text within the bound is unchanged


class Counting(LocalEmbedder):
    """The real model, counting how often it runs."""

    def __init__(self) -> None:
        super().__init__(threads=1, optimize=False)
        self.runs = 0

    def _run(self, input_ids: Any, mask: Any) -> Vectors:
        self.runs += 1
        return super()._run(input_ids, mask)


def test_a_request_embedded_twice_at_once_runs_the_model_once(embedder: LocalEmbedder) -> None:
    """A request's re-rank (cut at QUERY_TOKENS) and its examples lookup (whole) ask for the
    same word pieces at the same time: one run serves both."""
    counting = Counting()
    request = "where is the cart total computed"
    with ThreadPoolExecutor(2) as pool:
        cut = pool.submit(counting.embed, [request], QUERY_TOKENS)
        whole = pool.submit(counting.embed, [request])
        vectors = [cut.result()[0], whole.result()[0]]
    assert counting.runs == 1
    for vector in vectors:
        assert float(vector @ embedder.embed([request])[0]) > 0.9999
    vectors[0][:] = 0  # each caller has its own copy
    assert float(counting.embed([request])[0] @ vectors[1]) > 0.9999 and counting.runs == 1
    long = request + " and refunds" * 40  # cut, it reads other word pieces than whole
    counting.embed([long], QUERY_TOKENS)
    counting.embed([long])
    assert counting.runs == 3


def test_undecodable_text_still_embeds(embedder: LocalEmbedder) -> None:
    # A lone surrogate, as in text read with errors="surrogateescape".
    assert embedder.embed(["caf\udce9 menu"]).shape == (1, DIM)


def test_batches_and_empty_input(embedder: LocalEmbedder) -> None:
    texts = [f"function number {i} computes {i * 7}" for i in range(70)]
    vectors = embedder.embed(texts)
    assert vectors.shape == (70, DIM)
    np.testing.assert_allclose(vectors[41], embedder.embed([texts[41]])[0], atol=1e-4)
    assert embedder.embed([]).shape == (0, DIM)


def test_nothing_loads_before_first_use() -> None:
    fresh = LocalEmbedder(model_path=Path("/nonexistent/model.onnx"))
    # Identity is known without loading; the bad path only surfaces when the model is needed.
    assert fresh.dim == DIM and fresh.model_id.startswith("local:")
    with pytest.raises(EmbedderUnavailable, match="cannot read"):
        fresh.load()


def _tampered_copy(source: Path, tmp_path: Path) -> Path:
    copy = tmp_path / source.name
    shutil.copyfile(source, copy)
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0x01
    copy.write_bytes(bytes(data))
    return copy


def test_tampered_tokenizer_is_refused(tmp_path: Path) -> None:
    bad = _tampered_copy(default_tokenizer_path(), tmp_path)
    with pytest.raises(ModelIntegrityError, match="tokenizer"):
        LocalEmbedder(tokenizer_path=bad).load()


def test_tampered_model_is_refused(tmp_path: Path) -> None:
    bad = _tampered_copy(default_model_path(), tmp_path)
    with pytest.raises(ModelIntegrityError, match="embedding model"):
        LocalEmbedder(model_path=bad).load()


def test_untampered_copies_load(tmp_path: Path) -> None:
    model = shutil.copy(default_model_path(), tmp_path / "model.onnx")
    tokenizer = shutil.copy(default_tokenizer_path(), tmp_path / "tokenizer.json")
    copy = LocalEmbedder(threads=1, model_path=Path(model), tokenizer_path=Path(tokenizer))
    assert copy.embed(["hello"]).shape == (1, DIM)
