"""The semantic layer's vectors on disk, for one-shot commands.

Every row the layer holds, grouped as `Stacked` (by file, or by key for memories), saved as one
mapped snapshot (`knowledge.recall.snapshot`) tagged with the store generation and the model
that made it. A one-shot `theus recall` maps it instead of chunking every file to look its
vectors up in the cache, which on a large project costs more than the whole ranking.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from knowledge.embed.indexer import Stacked
from knowledge.recall import snapshot

log = logging.getLogger(__name__)

FORMAT = 1


class FrozenVectors:
    """A read-only `VectorSet` over a saved snapshot."""

    def __init__(self, stacked: Stacked, dim: int) -> None:
        self.dim = dim
        self._stacked = stacked

    def __len__(self) -> int:
        return len(self._stacked.groups)

    def matrix(self) -> Stacked:
        return self._stacked


def save(path: Path, stacked: Stacked, *, generation: int, model_id: str) -> bool:
    """Write the snapshot; False (logged) when the disk refused: the next one-shot looks the
    vectors up in the cache instead."""
    blob, offsets = snapshot.Strings.pack(name for _, name in stacked.groups)
    arrays: dict[str, np.ndarray] = {
        "rows": stacked.rows,
        "group_of": stacked.group_of,
        "keyed": np.array([keyed for keyed, _ in stacked.groups], dtype=np.bool_),
        "names": blob,
        "name_offsets": offsets,
    }
    meta = {"format": FORMAT, "generation": generation, "model_id": model_id}
    try:
        snapshot.write(path, arrays, meta)
    except OSError as exc:
        log.info("vector snapshot not written: %s", exc)
        return False
    return True


def load(path: Path, *, generation: int, model_id: str, dim: int) -> FrozenVectors | None:
    """The vectors saved at `path` when they were made by `model_id` from this generation of
    the store; else None."""
    try:
        arrays, meta = snapshot.read(path)
    except (OSError, snapshot.SnapshotError):
        return None
    rows = arrays.get("rows")
    if (
        meta.get("format") != FORMAT
        or meta.get("generation") != generation
        or meta.get("model_id") != model_id
        or rows is None
        or rows.ndim != 2
        or rows.shape[1] != dim
    ):
        return None
    names = snapshot.Strings(arrays["names"], arrays["name_offsets"]).all()
    groups = list(zip(arrays["keyed"].tolist(), names, strict=True))
    return FrozenVectors(Stacked(groups, arrays["group_of"], rows), dim)
