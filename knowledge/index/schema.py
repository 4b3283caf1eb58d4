"""Schema discovery: one set of table and column nodes from every schema file of the project.

Table keys are global (`table:orders`), and the same table is often described by a Prisma
model and by SQL migrations. Rebuilding all of them together, in a fixed order, keeps the
result independent of which file changed last: Prisma models first, then SQL files by path;
the first definition of a table or column wins, later files add columns and foreign keys.

A project with Prisma schemas in several folders (a monorepo's sub-projects) has one scope per
folder: same-named models stay apart (`table:apps/web/prisma#user`), and a SQL file belongs to
the deepest such folder above it (its migrations), else to the global scope.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from knowledge.core import keys
from knowledge.core.graph import Edge, Graph, Node
from knowledge.index.model import Table

OWNER = "schema:"
SCHEMA_LANGUAGES = ("prisma", "sql")


def table_dicts(tables: list[Table]) -> list[dict[str, Any]]:
    return [asdict(t) for t in tables]


def discover(graph: Graph, definitions: list[tuple[str, str, list[dict[str, Any]]]]) -> None:
    """Replace every table/column node. `definitions`: (path, language, tables) per file."""
    ordered = sorted(definitions, key=lambda d: (SCHEMA_LANGUAGES.index(d[1]), d[0]))
    scope_of = _scopes([path for path, language, _ in ordered if language == "prisma"])
    nodes: dict[str, Node] = {}
    internal: list[Edge] = []
    defined_in: list[Edge] = []
    references: list[Edge] = []
    for path, language, tables in ordered:
        scope = scope_of(path)
        for table in tables:
            tkey = keys.table_key(table["name"], scope)
            if tkey not in nodes:
                nodes[tkey] = Node(
                    tkey,
                    "table",
                    table["name"],
                    path=path,
                    line=table["line"],
                    end_line=table["end_line"],
                    summary=table.get("summary", ""),
                    subkind=language,
                    source="schema",
                )
            defined_in.append(Edge(keys.file_key(path), tkey, "defines"))
            for col in table.get("columns", []):
                ckey = keys.column_key(table["name"], col["name"], scope)
                if ckey not in nodes:
                    nodes[ckey] = Node(
                        ckey,
                        "column",
                        f"{nodes[tkey].label}.{col['name']}",
                        path=path,
                        line=col["line"],
                        end_line=col["line"],
                        signature=f"{col['name']} {col['type']}".strip(),
                        subkind="column",
                        source="schema",
                    )
                    internal.append(Edge(tkey, ckey, "contains"))
                if col.get("references"):
                    other, other_col = col["references"]
                    references.append(Edge(tkey, keys.table_key(other, scope), "references"))
                    if other_col:
                        references.append(
                            Edge(ckey, keys.column_key(other, other_col, scope), "references")
                        )
    graph.replace_owner(OWNER, list(nodes.values()), internal + references)
    for edge in defined_in:
        graph.add_edge(edge.src, edge.dst, edge.kind)


def _scopes(prisma_files: list[str]) -> Callable[[str], str]:
    """A schema file's scope: "" for every file while Prisma schemas live in one folder at
    most (keys as they always were), else the deepest Prisma folder at or above the file."""
    folders = sorted({posixpath.dirname(p) for p in prisma_files}, key=len, reverse=True)
    if len(folders) < 2:
        return lambda path: ""

    def scope(path: str) -> str:
        here = posixpath.dirname(path)
        return next((f for f in folders if f == "" or here == f or here.startswith(f + "/")), "")

    return scope
