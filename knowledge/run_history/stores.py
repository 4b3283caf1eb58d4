"""Which vector store holds the history: a Qdrant server when `THEUS_QDRANT_URL` is set (a
team shares its history there), else the embedded store in the Theus home (one file for all
projects, like a server: the project filter keeps them apart). One collection per embedding
model and dimension, since vectors of different models are not comparable.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from knowledge.core.paths import data_home
from knowledge.core.settings import MemorySettings
from knowledge.vectors.port import StoreMismatch, VectorStore, collection_name

DEFAULT_COLLECTION = "theus_runs"
EMBEDDED_FILE = "history.db"
GIT_TIMEOUT_S = 2.0
_SCP_LIKE = re.compile(r"^(?:[\w.-]+@)?([\w.-]+):(?!//)(.+)$")  # git@host:owner/repo


def open_store(settings: MemorySettings, model_id: str, dim: int) -> VectorStore:
    """The history's store for this embedder; raises `StoreMismatch` when a configured
    dimension (`THEUS_QDRANT_DIM`) or the collection's differs from the embedder's, and
    `VectorStoreUnavailable` when it cannot be reached."""
    wanted = settings.qdrant_dim
    if wanted and wanted != dim:
        raise StoreMismatch(
            f"THEUS_QDRANT_DIM={wanted} but the embedder ({model_id}) makes "
            f"{dim}-d vectors: unset it or set it to {dim}"
        )
    base = settings.qdrant_collection or DEFAULT_COLLECTION
    if settings.qdrant_url:
        from knowledge.vectors.qdrant import QdrantStore

        return QdrantStore(
            url=settings.qdrant_url,
            api_key=settings.qdrant_api_key or None,
            collection_base=base,
            model_id=model_id,
            dim=dim,
        )
    from knowledge.vectors.embedded import EmbeddedStore

    return EmbeddedStore(data_home() / EMBEDDED_FILE, collection_name(base, model_id, dim), dim)


def project_id(root: Path) -> str:
    """The project as the history names it: its git remote when it has one (the same on every
    teammate's machine), else its folder."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        remote = done.stdout.strip() if done.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        remote = ""
    return f"git:{normal_remote(remote)}" if remote else f"path:{root.resolve()}"


def normal_remote(url: str) -> str:
    """github.com/owner/repo for every way of writing that remote (ssh, https, .git, user)."""
    url = url.strip()
    scp = _SCP_LIKE.match(url)
    if scp and "://" not in url:
        host, path = scp.groups()
    else:
        rest = url.split("://", 1)[-1]
        host, _, path = rest.partition("/")
        host = host.rsplit("@", 1)[-1].split(":")[0]
    path = path.strip("/").removesuffix(".git")
    return f"{host.lower()}/{path}"
