"""The dashboard's JSON answers, built from a `Snapshot`. Pure: no I/O, no locks.

- ``graph_page``: nodes (with layout positions and importance) and edges, filtered by kind,
  folder, text or a node's neighbourhood, paged so a 100,000-node graph never ships whole.
  Nodes come most important first; an edge is sent with the later of its two ends, so each edge
  arrives exactly once, on the page where both its ends are known.
- ``database``: tables, columns and foreign keys from table/column nodes and `references` edges.
- ``schema``: the shape of the graph itself — node and edge kinds with counts, node fields, and
  the schema files (Prisma, SQL) tables were discovered in.
- ``status``: counts, folders, plus whatever status sections the host application provides.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from knowledge.core.errors import TheusError
from knowledge.core.graph import EDGE_KINDS, NODE_KINDS
from theus.dashboard.snapshot import Snapshot

DEFAULT_LIMIT = 2000
MAX_LIMIT = 20000
MAX_DEPTH = 3
MAX_NEIGHBOURS = 300
_MEMO_SIZE = 32
_PUBLIC_DATA = ("size", "reason", "references", "language", "relations")
_TEXT_CAP = 400


class QueryError(TheusError, ValueError):
    """A malformed query parameter: answered with 400."""


@dataclass(frozen=True, slots=True)
class GraphQuery:
    kinds: frozenset[str] = frozenset()
    folder: str = ""
    q: str = ""
    node: str = ""
    depth: int = 1
    limit: int = DEFAULT_LIMIT
    offset: int = 0
    version: int | None = None  # pinned by a cursor

    @property
    def selection_key(self) -> tuple[object, ...]:
        return ("sel", self.kinds, self.folder, self.q.casefold().strip(), self.node, self.depth)


def parse_graph_query(params: Mapping[str, list[str]]) -> GraphQuery:
    def one(name: str, default: str = "") -> str:
        values = params.get(name)
        return values[-1] if values else default

    def number(name: str, default: int, low: int, high: int) -> int:
        raw = one(name, str(default))
        try:
            value = int(raw)
        except ValueError:
            raise QueryError(f"{name} must be an integer") from None
        if not low <= value <= high:
            raise QueryError(f"{name} must be between {low} and {high}")
        return value

    kinds = frozenset(k for raw in params.get("kind", []) for k in raw.split(",") if k)
    unknown = kinds - set(NODE_KINDS)
    if unknown:
        raise QueryError(f"unknown kind: {', '.join(sorted(unknown))}")
    offset, version = number("offset", 0, 0, 10**9), None
    cursor = one("cursor")
    if cursor:
        try:
            v, o = cursor.split(".", 1)
            version, offset = int(v), int(o)
        except ValueError:
            raise QueryError("malformed cursor") from None
    return GraphQuery(
        kinds=kinds,
        folder=one("folder").strip("/"),
        q=one("q")[:200],
        node=one("node"),
        depth=number("depth", 1, 0, MAX_DEPTH),
        limit=number("limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
        offset=max(offset, 0),
        version=version,
    )


# -- /api/graph --------------------------------------------------------------------------------
def graph_page(snap: Snapshot, query: GraphQuery) -> dict[str, Any]:
    if query.node and query.node not in snap.index:
        raise LookupError(f"no such node: {query.node}")
    selected, rank, hops = _selection(snap, query)
    page = selected[query.offset : query.offset + query.limit]
    end = query.offset + len(page)
    edges: list[list[Any]] = []
    src, dst, kinds = snap.src, snap.dst, snap.kinds
    for i in page:
        mine = rank[i]
        for eid in snap.adjacency[i]:
            other = dst[eid] if src[eid] == i else src[eid]
            theirs = rank.get(other)
            if theirs is not None and theirs < mine:
                edges.append([src[eid], dst[eid], kinds[eid]])
    out: dict[str, Any] = {
        "version": snap.version,
        "total": len(selected),
        "offset": query.offset,
        "limit": query.limit,
        "next_cursor": f"{snap.version}.{end}" if end < len(selected) else None,
        "nodes": [_brief(snap, i, hops) for i in page],
        "edges": edges,
    }
    if query.node:
        out["focus"] = node_detail(snap, snap.index[query.node])
    return out


def _selection(
    snap: Snapshot, query: GraphQuery
) -> tuple[list[int], dict[int, int], dict[int, int] | None]:
    key = query.selection_key
    found = snap.memo.get(key)
    if found is None:
        if query.node:
            selected, hops = _neighbourhood(snap, query)
        else:
            selected, hops = _filtered(snap, query), None
        found = (selected, {i: r for r, i in enumerate(selected)}, hops)
        if len(snap.memo) >= _MEMO_SIZE:
            snap.memo.clear()
        snap.memo[key] = found
    return found  # type: ignore[return-value]


def _matches(snap: Snapshot, i: int, query: GraphQuery) -> bool:
    if query.kinds and snap.nodes[i].kind not in query.kinds:
        return False
    if query.folder:
        folder = snap.folder[i]
        if folder != query.folder and not folder.startswith(query.folder + "/"):
            return False
    return True


def _filtered(snap: Snapshot, query: GraphQuery) -> list[int]:
    candidates = snap.order
    words = query.q.casefold().split()
    if words:
        hay = _haystack(snap)
        for word in words:  # narrowing one word at a time keeps the loops in C
            candidates = [i for i in candidates if word in hay[i]]
    if query.kinds or query.folder:
        candidates = [i for i in candidates if _matches(snap, i, query)]
    if not words:
        return candidates
    phrase = " ".join(words)

    def tier(i: int) -> int:
        label = snap.nodes[i].label.casefold()
        short = label.rsplit(".", 1)[-1]
        if phrase in (label, short):
            return 0
        if label.startswith(phrase) or short.startswith(phrase):
            return 1
        return 2 if phrase in label else 3

    return sorted(candidates, key=tier)  # stable: importance order within a tier


def _haystack(snap: Snapshot) -> list[str]:
    hay = snap.memo.get("hay")
    if hay is None:
        hay = [f"{n.label}\n{n.path}\n{n.key}".casefold() for n in snap.nodes]
        snap.memo["hay"] = hay
    return hay  # type: ignore[return-value]


def _neighbourhood(snap: Snapshot, query: GraphQuery) -> tuple[list[int], dict[int, int]]:
    """The node, then everything within ``depth`` hops (either direction), nearest first."""
    start = snap.index[query.node]
    hops = {start: 0}
    frontier = [start]
    for hop in range(1, query.depth + 1):
        nxt: list[int] = []
        for i in frontier:
            for eid in snap.adjacency[i]:
                other = snap.dst[eid] if snap.src[eid] == i else snap.src[eid]
                if other not in hops:
                    hops[other] = hop
                    nxt.append(other)
        frontier = nxt
    importance = snap.importance
    chosen = [i for i in hops if i == start or _matches(snap, i, query)]
    chosen.sort(key=lambda i: (hops[i], -importance[i], i))
    return chosen, hops


def _brief(snap: Snapshot, i: int, hops: dict[int, int] | None) -> dict[str, Any]:
    n = snap.nodes[i]
    out: dict[str, Any] = {
        "id": i,
        "key": n.key,
        "kind": n.kind,
        "label": n.label,
        "path": n.path,
        "sub": n.subkind,
        "line": n.line,
        "x": snap.x[i],
        "y": snap.y[i],
        "w": snap.importance[i],
        "deg": snap.degree(i),
    }
    if hops is not None:
        out["hop"] = hops[i]
    return out


def node_detail(snap: Snapshot, i: int) -> dict[str, Any]:
    """Everything the details panel shows about one node, and its neighbours."""
    n = snap.nodes[i]
    neighbours: list[dict[str, Any]] = []
    for eid in snap.adjacency[i]:
        out_edge = snap.src[eid] == i
        other = snap.dst[eid] if out_edge else snap.src[eid]
        m = snap.nodes[other]
        neighbours.append(
            {
                "id": other,
                "key": m.key,
                "label": m.label,
                "kind": m.kind,
                "path": m.path,
                "edge": snap.kinds[eid],
                "dir": "out" if out_edge else "in",
                "w": snap.importance[other],
            }
        )
    neighbours.sort(key=lambda e: (e["edge"], e["dir"], -e["w"], e["key"]))
    return {
        "id": i,
        "key": n.key,
        "kind": n.kind,
        "label": n.label,
        "path": n.path,
        "line": n.line,
        "end_line": n.end_line,
        "summary": n.summary[:_TEXT_CAP],
        "subkind": n.subkind,
        "signature": n.signature[:_TEXT_CAP],
        "layer": n.layer,
        "source": n.source,
        "status": n.status,
        "valid_from": n.valid_from,
        "valid_to": n.valid_to,
        "facts": n.facts[:20],
        "data": {k: n.data[k] for k in _PUBLIC_DATA if k in n.data},
        "folder": snap.folder[i],
        "x": snap.x[i],
        "y": snap.y[i],
        "w": snap.importance[i],
        "degree": len(neighbours),
        "neighbours": neighbours[:MAX_NEIGHBOURS],
        "neighbour_count": len(neighbours),
    }


# -- /api/database -----------------------------------------------------------------------------
def database(snap: Snapshot) -> dict[str, Any]:
    nodes = snap.nodes
    tables: list[dict[str, Any]] = []
    foreign_keys = []
    for i, n in enumerate(nodes):
        if n.kind != "table":
            continue
        columns = []
        referenced_by: set[str] = set()
        for eid in snap.adjacency[i]:
            a, b, kind = snap.src[eid], snap.dst[eid], snap.kinds[eid]
            if kind == "contains" and a == i and nodes[b].kind == "column":
                columns.append(_column(snap, b))
            elif kind == "references" and b == i and nodes[a].kind == "table":
                referenced_by.add(nodes[a].label)
        columns.sort(key=lambda c: (c["line"], c["name"]))
        for col in columns:
            if col["references"]:
                ref = col["references"]
                foreign_keys.append(
                    {
                        "from_table": n.label,
                        "from_column": col["name"],
                        "to_table": ref["table"],
                        "to_column": ref["column"],
                        "resolved": ref["resolved"],
                    }
                )
        tables.append(
            {
                "key": n.key,
                "name": n.label,
                "path": n.path,
                "line": n.line,
                "summary": n.summary[:_TEXT_CAP],
                "source": n.subkind,
                "columns": columns,
                "referenced_by": sorted(referenced_by),
            }
        )
    tables.sort(key=lambda t: t["name"].casefold())
    return {"version": snap.version, "tables": tables, "foreign_keys": foreign_keys}


def _column(snap: Snapshot, i: int) -> dict[str, Any]:
    n = snap.nodes[i]
    name = n.label.split(".", 1)[-1]
    parts = n.signature.split(None, 1)
    ref: dict[str, Any] | None = None
    for eid in snap.adjacency[i]:
        target = snap.dst[eid]
        if snap.kinds[eid] == "references" and snap.src[eid] == i:
            t = snap.nodes[target]
            if t.kind == "column":
                table, _, column = t.label.partition(".")
                ref = {"table": table, "column": column, "key": t.key, "resolved": True}
    raw = n.data.get("references")
    if ref is None and isinstance(raw, list | tuple) and len(raw) == 2:
        ref = {"table": str(raw[0]), "column": str(raw[1]), "key": None, "resolved": False}
    return {
        "key": n.key,
        "name": name,
        "type": parts[1] if len(parts) == 2 else "",
        "line": n.line,
        "references": ref,
    }


# -- /api/schema -------------------------------------------------------------------------------
def schema(snap: Snapshot) -> dict[str, Any]:
    node_kinds, edge_kinds = _counts(snap)
    tables_per_file = Counter(n.path for n in snap.nodes if n.kind == "table")
    files = []
    for path, count in sorted(tables_per_file.items()):
        file = snap.index.get(f"file:{path}")
        language = snap.nodes[file].subkind if file is not None else ""
        files.append({"path": path, "language": language, "tables": count})
    return {
        "version": snap.version,
        "node_kinds": {k: node_kinds.get(k, 0) for k in _ordered(NODE_KINDS, node_kinds)},
        "edge_kinds": {k: edge_kinds.get(k, 0) for k in _ordered(EDGE_KINDS, edge_kinds)},
        "node_fields": [
            "key",
            "kind",
            "label",
            "path",
            "line",
            "end_line",
            "summary",
            "subkind",
            "signature",
            "layer",
            "source",
            "status",
            "facts",
            "valid_from",
            "valid_to",
        ],
        "schema_files": files,
    }


def _ordered(known: tuple[str, ...], seen: Counter[str]) -> list[str]:
    return [*known, *sorted(set(seen) - set(known))]


# -- /api/status -------------------------------------------------------------------------------
def status(snap: Snapshot, sections: Mapping[str, Any]) -> dict[str, Any]:
    kinds, edge_kinds = _counts(snap)
    return {
        "version": snap.version,
        "nodes": len(snap.nodes),
        "edges": len(snap.kinds),
        "counts": {k: kinds[k] for k in _ordered(NODE_KINDS, kinds) if kinds[k]},
        "edge_counts": dict(edge_kinds.most_common()),
        "folders": folders(snap),
        "snapshot_ms": round(snap.built_ms, 1),
        "sections": dict(sections),
    }


def _counts(snap: Snapshot) -> tuple[Counter[str], Counter[str]]:
    found = snap.memo.get("counts")
    if found is None:
        found = snap.memo["counts"] = (Counter(n.kind for n in snap.nodes), Counter(snap.kinds))
    return found  # type: ignore[return-value]


def folders(snap: Snapshot, limit: int = 300) -> list[list[Any]]:
    """Folders by number of nodes under them (ancestors included), for the folder filter."""
    memo = snap.memo.get("folders")
    if memo is None:
        per_folder = Counter(snap.folder)
        total: Counter[str] = Counter()
        for folder, count in per_folder.items():
            parts = folder.split("/") if folder else []
            for depth in range(1, len(parts) + 1):
                total["/".join(parts[:depth])] += count
        memo = [[f, c] for f, c in sorted(total.items(), key=lambda fc: (-fc[1], fc[0]))]
        snap.memo["folders"] = memo
    return cast("list[list[Any]]", memo)[:limit]
