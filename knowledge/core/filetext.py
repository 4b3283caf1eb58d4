"""An indexed file's text as recall and the embedder read it, cut into passages.

Both read the same bytes the same way: nothing past `MAX_FILE_BYTES`, nothing binary (a NUL
in the first 4 KiB), never a lockfile (long, and about nothing a request asks). Passages are
runs of `PASSAGE_LINES` lines: the unit of the content index's passage score; the semantic
layer embeds the heads of passages of that length or a multiple of it.
"""

from __future__ import annotations

from pathlib import Path

from knowledge.core.beneath import read_beneath

MAX_FILE_BYTES = 512 * 1024
PASSAGE_LINES = 30
LOCKFILES = frozenset(
    {
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lock",
        "bun.lockb",
        "go.sum",
        "cargo.lock",
        "poetry.lock",
        "pipfile.lock",
        "uv.lock",
        "composer.lock",
        "gemfile.lock",
    }
)


def read_text(root: Path, path: str, size: int = 0) -> str | None:
    """The file's text, or None when it is not read (lockfile, too large, binary, gone).
    `size` is what the index recorded, to skip an oversized file without opening it."""
    if path.rsplit("/", 1)[-1].lower() in LOCKFILES or size > MAX_FILE_BYTES:
        return None
    try:
        data = read_beneath(root, path, MAX_FILE_BYTES + 1)
    except OSError:
        return None
    return text_of(path, data)


def text_of(path: str, data: bytes) -> str | None:
    """What `read_text` reads of the file at `path` whose content is `data` (the indexer,
    which has read it already, tells the content index)."""
    if path.rsplit("/", 1)[-1].lower() in LOCKFILES or len(data) > MAX_FILE_BYTES:
        return None
    if b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", errors="replace")


def passages(text: str, size: int = PASSAGE_LINES) -> list[str]:
    """Runs of `size` lines, blank runs dropped; at least one (maybe empty)."""
    return [body for _, body in passage_runs(text, size)]


def passage_runs(text: str, size: int = PASSAGE_LINES) -> list[tuple[int, str]]:
    """`passages`, each with the index of its first line (from 0)."""
    lines = text.splitlines()
    out = []
    for at in range(0, max(len(lines), 1), size):
        body = "\n".join(lines[at : at + size]).strip()
        if body or at == 0:
            out.append((at, body))
    return out
