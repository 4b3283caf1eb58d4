"""Turn one file's `Extract` into graph nodes and the edges that stay inside the file."""

from __future__ import annotations

from pathlib import PurePosixPath

from knowledge.core import keys
from knowledge.core.graph import Edge, Node
from knowledge.index.analyse import Analysed


def file_nodes(result: Analysed, language: str) -> tuple[list[Node], list[Edge]]:
    rel = result.rel
    ex = result.extract
    fkey = keys.file_key(rel)
    file_node = Node(
        key=fkey,
        kind="file",
        label=PurePosixPath(rel).name,
        path=rel,
        line=1,
        end_line=ex.lines if ex else 0,
        summary=ex.summary if ex else "",
        subkind=language,
        status=result.status,
        data={"size": result.size, **({"reason": result.reason} if result.reason else {})},
    )
    nodes = [file_node]
    edges: list[Edge] = []
    if ex is None:
        return nodes, edges
    for sym in ex.symbols:
        key = keys.symbol_key(rel, sym.name)
        nodes.append(
            Node(
                key=key,
                kind="symbol",
                label=sym.name,
                path=rel,
                line=sym.line,
                end_line=sym.end_line,
                summary=sym.doc,
                subkind=sym.kind,
                signature=sym.signature,
            )
        )
        edges.append(Edge(fkey, key, "defines"))
        if sym.parent:
            edges.append(Edge(keys.symbol_key(rel, sym.parent), key, "contains"))
        else:
            edges.append(Edge(fkey, key, "contains"))
    seen: dict[str, int] = {}
    for sec in ex.sections:
        slug = keys.slugify(sec.title)
        seen[slug] = seen.get(slug, 0) + 1
        if seen[slug] > 1:
            slug = f"{slug}-{seen[slug]}"
        key = keys.section_key(rel, slug)
        nodes.append(
            Node(
                key=key,
                kind="section",
                label=sec.title,
                path=rel,
                line=sec.line,
                end_line=sec.end_line,
                summary=sec.summary,
                subkind=f"h{sec.level}",
            )
        )
        edges.append(Edge(fkey, key, "contains"))
    return nodes, edges
