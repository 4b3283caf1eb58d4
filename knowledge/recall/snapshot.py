"""The scoring index on disk: named numpy arrays in one file, read back by mapping it.

Format: 8 bytes magic, 8 bytes little-endian header length, a JSON header (`meta`, and per
array its dtype, shape and offset), then each array's bytes at a 64-byte aligned offset. A
reader maps the file and gets every array as a read-only view without copying, so a one-shot
`theus recall` opens a large project's index in milliseconds. Written atomically (temp file,
fsync, rename): a crash leaves the old snapshot or the new one. Strings travel as `Strings`:
one UTF-8 blob and the offsets of its items.
"""

from __future__ import annotations

import bisect
import json
import mmap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from knowledge.core import atomic
from knowledge.core.errors import TheusError

MAGIC = b"THEUSIDX"
ALIGN = 64


class SnapshotError(TheusError):
    """The file is not a snapshot this version can read."""


def write(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    header: dict[str, Any] = {"meta": meta, "arrays": {}}
    offset = 0
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        arrays[name] = array
        header["arrays"][name] = {
            "dtype": array.dtype.str,
            "shape": list(array.shape),
            "offset": offset,
        }
        offset += _aligned(array.nbytes)
    head = json.dumps(header, separators=(",", ":")).encode()
    start = _aligned(16 + len(head))
    out = bytearray(MAGIC + len(head).to_bytes(8, "little") + head)
    out += b"\0" * (start - len(out))
    for array in arrays.values():
        out += array.tobytes()
        out += b"\0" * (_aligned(array.nbytes) - array.nbytes)
    atomic.write_bytes(path, bytes(out))


def read(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Every array of the snapshot at `path` (read-only views on the mapped file), and its
    meta. Raises OSError when the file cannot be read, `SnapshotError` when it is not one."""
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        if size < 16:
            raise SnapshotError(f"{path}: too short")
        view = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    if view[:8] != MAGIC:
        raise SnapshotError(f"{path}: not a Theus scoring index")
    length = int.from_bytes(view[8:16], "little")
    try:
        header = json.loads(view[16 : 16 + length])
    except ValueError as exc:
        raise SnapshotError(f"{path}: unreadable header") from exc
    start = _aligned(16 + length)
    arrays = {}
    for name, spec in header["arrays"].items():
        dtype = np.dtype(spec["dtype"])
        count = int(np.prod(spec["shape"], dtype=np.int64))
        at = start + spec["offset"]
        if at + count * dtype.itemsize > size:
            raise SnapshotError(f"{path}: truncated at {name}")
        arrays[name] = np.frombuffer(view, dtype=dtype, count=count, offset=at).reshape(
            spec["shape"]
        )
    return arrays, header["meta"]


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class Strings(Sequence[str]):
    """A list of strings kept as one UTF-8 blob, items separated by NUL (no path, key or
    term holds one), with the offsets of their starts: built from a snapshot without a Python
    object per item; `find` answers in a sorted one by bisection, `all` decodes at C speed."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self._blob = blob.tobytes()
        self._offsets = offsets

    @classmethod
    def pack(cls, items: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """(blob, offsets) arrays for `items`."""
        items = list(items)
        text = "\0".join(items)
        blob = text.encode("utf-8", "surrogatepass")
        offsets = np.zeros(len(items) + 1, np.int64)
        if len(blob) == len(text):  # one byte a character: their lengths, without a loop
            np.cumsum(np.fromiter(map(len, items), np.int64, len(items)) + 1, out=offsets[1:])
        else:
            np.cumsum([len(s.encode("utf-8", "surrogatepass")) + 1 for s in items], out=offsets[1:])
        return np.frombuffer(blob + b"\0", np.uint8).copy(), offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        start, end = int(self._offsets[i]), int(self._offsets[i + 1]) - 1
        return self._blob[start:end].decode("utf-8", "surrogatepass")

    def all(self) -> list[str]:
        if not len(self):
            return []
        return self._blob[:-1].decode("utf-8", "surrogatepass").split("\0")

    def find(self, item: str) -> int:
        """The index of `item` in these (sorted) strings, or -1."""
        at = bisect.bisect_left(self, item)
        return at if at < len(self) and self[at] == item else -1
