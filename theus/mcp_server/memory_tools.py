"""What `theus mcp` answers, over one project's `Memory`: plain functions that return
JSON-ready dicts and raise `MemoryToolError` (a clear message for the calling model) for bad
input or a layer that is off. The server (`theus.mcp_server.server`) turns them into MCP tools."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from knowledge.core.filetext import read_text
from knowledge.memory import Memory

if TYPE_CHECKING:
    from knowledge.core.graph import Graph, Node
    from knowledge.episodes import EpisodeStore
    from knowledge.index.project import Project

MAX_EDGES = 50  # per direction, in read_node
MAX_SOURCE_LINES = 200
FILE_HEAD_LINES = 60  # a file node shows its head; a symbol shows its own lines
_TEXT_KINDS = ("memory", "episode", "entity")
KEY_HINT = (
    "keys look like file:src/app.py or sym:src/app.py#Cart.total; "
    "`recall` returns the keys of what it finds"
)


class MemoryToolError(Exception):
    """Bad input, or a layer that is off: said to the caller as an error result."""


@dataclass
class MemoryTools:
    memory: Memory

    # -- the graph ------------------------------------------------------------------------------
    def recall(self, query: str, top: int = 10) -> dict[str, Any]:
        from knowledge.memory.context import INJECT_TOP, build_context

        query = query.strip()
        if not query:
            raise MemoryToolError('recall needs a query, e.g. "where is the cart total"')
        top = _bounded(top, 1, 50)
        recaller = self.memory.recaller()
        context = build_context(recaller, query)  # the block exactly as the agent gets it
        result = context.recall
        if top > INJECT_TOP:
            wider = recaller.recall(query, top=top)
            result.hits, result.files = wider.hits, wider.files
        return {
            "query": query,
            "took_ms": round(result.took_ms, 2),
            "best_score": round(result.best_score, 3),
            "files": result.files[:top],
            "results": [
                {
                    "key": h.key,
                    "kind": h.kind,
                    "path": h.path,
                    "name": h.name,
                    "line": h.line,
                    "score": round(h.score, 3),
                    "why": h.why,
                    "layer": h.layer,
                }
                for h in result.hits[:top]
            ],
            "block": context.block,
            "notes": result.notes,
        }

    def read_node(self, key: str) -> dict[str, Any]:
        graph = self._graph()
        with graph.lock:
            node = self._node(graph, key)
            out = graph.out_edges(node.key)[:MAX_EDGES]
            into = graph.in_edges(node.key)[:MAX_EDGES]
            details = _details(node)
        details["edges_out"] = [{"to": e.dst, "kind": e.kind} for e in out]
        details["edges_in"] = [{"from": e.src, "kind": e.kind} for e in into]
        lines = self._source_lines(node)
        if lines:
            details["lines"] = lines
        return details

    def neighbours(self, key: str, limit: int = 30) -> dict[str, Any]:
        graph = self._graph()
        limit = _bounded(limit, 1, 200)
        with graph.lock:
            node = self._node(graph, key)
            out, into, degree = graph.neighbours(node.key, limit)
            rows = [(k, kind, "out") for k, kind in out] + [(k, kind, "in") for k, kind in into]
            found = [(graph.get(k), kind, way) for k, kind, way in rows]
        return {
            "key": node.key,
            "degree": degree,
            "neighbours": [
                {
                    "key": n.key,
                    "kind": n.kind,
                    "label": n.label,
                    "path": n.path,
                    "edge": kind,
                    "direction": way,
                }
                for n, kind, way in found
                if n is not None
            ],
        }

    # -- memories, episodes, facts --------------------------------------------------------------
    def search_memory(self, query: str, top: int = 10) -> dict[str, Any]:
        """Recall among what was remembered and told: memories, episodes, entities."""
        if not query.strip():
            raise MemoryToolError("search_memory needs a query")
        top = _bounded(top, 1, 50)
        result = self.memory.recaller().recall(query.strip(), top=200)
        graph = self._graph()
        hits = [h for h in result.hits if h.kind in _TEXT_KINDS][:top]
        with graph.lock:
            nodes = [(h, graph.get(h.key)) for h in hits]
        return {
            "query": query,
            "results": [
                {
                    "key": h.key,
                    "kind": h.kind,
                    "name": h.name,
                    "score": round(h.score, 3),
                    "text": _text_of(n) if n is not None else "",
                }
                for h, n in nodes
            ],
        }

    def add_memory(self, text: str) -> dict[str, Any]:
        from knowledge import memdir

        if not text.strip():
            raise MemoryToolError("add_memory needs the memory's text")
        project = self._project()
        change = memdir.add_memory(project, text.strip())
        if not change.durable:
            reason = change.warnings[-1] if change.warnings else "the disk refused it"
            raise MemoryToolError(f"the memory was not saved: {reason}")
        return {
            "key": change.key,
            "result": "added" if change.created else "already known",
            "warnings": change.warnings,
        }

    def list_episodes(self, limit: int = 20) -> dict[str, Any]:
        episodes, problems = self._episodes().list()
        return {
            "episodes": [e.to_json(full=False) for e in episodes[: _bounded(limit, 1, 500)]],
            "unreadable": [str(p) for p in problems],
        }

    def read_episode(self, episode_id: str) -> dict[str, Any]:
        from knowledge.episodes import AmbiguousEpisode, EpisodeNotFound

        try:
            return self._episodes().get(episode_id).to_json()
        except EpisodeNotFound:
            raise MemoryToolError(
                f"no episode {episode_id!r} (list_episodes gives the ids)"
            ) from None
        except AmbiguousEpisode as exc:
            raise MemoryToolError(str(exc)) from None

    def facts(self, subject: str = "") -> dict[str, Any]:
        layer = self.memory.facts_layer()
        if layer is None:
            raise MemoryToolError("the facts layer is off (THEUS_NO_FACTS) or unavailable")
        views = layer.history(subject) if subject.strip() else layer.current()
        return {
            "subject": subject or None,
            "facts": [
                {
                    "id": v.id,
                    "subject": v.subject,
                    "kind": v.kind,
                    "text": v.text,
                    "source": v.source,
                    "current": v.current,
                    "valid_from": v.valid_from,
                    "valid_to": v.valid_to,
                }
                for v in views
            ],
        }

    def memory_index(self) -> str:
        """MEMORY.md as it is on disk ("" when nothing was remembered yet)."""
        from knowledge.memdir.bridge import memory_dir

        return memory_dir(self._project()).read_index_text()

    # -- plumbing -------------------------------------------------------------------------------
    def _project(self) -> Project:
        self.memory.open()
        if self.memory.project is None:
            raise MemoryToolError(f"the project memory could not be opened: {self.memory.error}")
        return self.memory.project

    def _graph(self) -> Graph:
        return self._project().graph

    def _episodes(self) -> EpisodeStore:
        self.memory.open()
        if self.memory.episodes is None:
            raise MemoryToolError("episodes are off (THEUS_NO_EPISODES) or unavailable")
        return self.memory.episodes

    @staticmethod
    def _node(graph: Graph, key: str) -> Node:
        node = graph.get(key.strip())
        if node is None:
            raise MemoryToolError(f"no node has the key {key!r}: {KEY_HINT}")
        return node

    def _source_lines(self, node: Node) -> str:
        if not node.path or node.kind in _TEXT_KINDS:
            return ""
        text = read_text(self.memory.root, node.path)
        if text is None:
            return ""
        lines = text.splitlines()
        first = max(node.line, 1) if node.kind != "file" else 1
        last = (
            node.end_line
            if node.kind != "file" and node.end_line >= first
            else first + FILE_HEAD_LINES - 1
        )
        last = min(last, first + MAX_SOURCE_LINES - 1, len(lines))
        return "\n".join(f"{n:>6}\t{lines[n - 1]}" for n in range(first, last + 1))


def _details(node: Node) -> dict[str, Any]:
    details: dict[str, Any] = {
        "key": node.key,
        "kind": node.kind,
        "label": node.label,
        "path": node.path,
        "line": node.line,
        "end_line": node.end_line,
        "summary": node.summary,
        "signature": node.signature,
        "subkind": node.subkind,
        "layer": node.layer,
        "source": node.source,
        "status": node.status,
    }
    if node.kind in _TEXT_KINDS:
        details["text"] = _text_of(node)
    if node.facts:
        details["facts"] = node.facts
    return details


def _text_of(node: Node) -> str:
    return str(node.data.get("text") or node.summary or node.label)


def _bounded(value: int, low: int, high: int) -> int:
    return max(low, min(high, int(value)))
