"""First-index embedding against raw onnxruntime, on the same chunks, in one run.

    python bench/embed_index.py PATH [--runs 3]

PATH is a source tree (a checkout of a public repository; a few thousand chunks take a minute
a run). It is indexed without embeddings in a temporary THEUS_HOME; the chunks a first `theus
index` embeds are listed as its pass lists them (`pending_nodes`, `texts_in_order`). Then,
in turn, each `--runs` times:

  theus   the embedding pass `theus index` runs (`embed_pass` with the vector cache, the
          local model loaded as the foreground command loads it), over those chunks
  raw     the same chunks through the same tokenizer and model file with onnxruntime's own
          defaults (every core, every graph optimisation), sorted by length and fed in
          batches of 8 or of 32 (each a row; the faster is the baseline): the least a program
          embedding them can spend

and prints chunks/s (median and min of the runs) and theus/raw. Model load is left out of
both; each run starts from an empty cache.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from knowledge.index.project import Project

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from entrypoint.settings import apply as apply_settings

RAW_BATCHES = (8, 32)


def theus_rate(project: Project, runs: int, home: Path) -> list[float]:
    from knowledge.embed.cache import VectorCache
    from knowledge.embed.indexer import NodeVectors, embed_pass
    from knowledge.embed.local import DIM, load_local

    embedder = load_local(threads=None)  # as `theus index` loads it: every core
    embedder.embed(["warm up"])
    rates = []
    for run in range(runs):
        cache = VectorCache(home / f"vectors-{run}.db", embedder.model_id, DIM)
        started = time.perf_counter()
        report = embed_pass(project.graph, project.root, embedder, cache, NodeVectors(DIM))
        rates.append(report.embedded / (time.perf_counter() - started))
        cache.close()
    return rates


def raw_rate(texts: list[str], runs: int, batch: int) -> list[float]:
    import onnxruntime
    import tokenizers

    from knowledge.embed.local import MAX_TOKENS, default_model_path, default_tokenizer_path

    tokenizer = tokenizers.Tokenizer.from_file(str(default_tokenizer_path()))
    tokenizer.no_padding()
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    session = onnxruntime.InferenceSession(
        str(default_model_path()), providers=["CPUExecutionProvider"]
    )
    ordered = sorted(texts, key=len)
    rates = []
    for _ in range(runs):
        started = time.perf_counter()
        for at in range(0, len(ordered), batch):
            encodings = tokenizer.encode_batch(ordered[at : at + batch])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            (hidden,) = session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
            pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
        rates.append(len(ordered) / (time.perf_counter() - started))
    return rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="theus-bench-embed-"))
    os.environ["THEUS_HOME"] = str(home)
    apply_settings({}, os.environ)
    from knowledge.embed.indexer import NodeVectors, pending_nodes, texts_in_order
    from knowledge.embed.local import DIM
    from knowledge.index.project import Project

    project = Project(args.path.resolve())
    project.index()
    texts = texts_in_order(pending_nodes(project.graph, project.root, NodeVectors(DIM)), {})
    print(f"# {args.path}: the first index embeds {len(texts)} chunks; {args.runs} runs each")
    theus = theus_rate(project, args.runs, home)
    rows = {"theus": theus} | {
        f"raw, batch {b}": raw_rate(texts, args.runs, b) for b in RAW_BATCHES
    }
    for name, rates in rows.items():
        print(f"  {name:16} median {statistics.median(rates):6.1f}/s  min {min(rates):6.1f}/s")
    raw = max(statistics.median(rows[f"raw, batch {b}"]) for b in RAW_BATCHES)
    ratio = statistics.median(theus) / raw
    print(f"  theus/raw {ratio:.2f}   target >= 0.70: {'met' if ratio >= 0.7 else 'NOT met'}")
    project.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
