"""Schema discovery: one set of table and column nodes from every schema file of the project.

Table keys are global (`table:orders`), and the same table is often described by a Prisma
model and by SQL migrations. Rebuilding all of them together, in a fixed order, keeps the
result independent of which file changed last: Prisma models first, then SQL files by path;
the first definition of a table or column wins, later files add columns and foreign keys.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from knowledge import keys
from knowledge.graph import Edge, Graph, Node
from knowledge.index.model import Table

OWNER = "schema:"
SCHEMA_LANGUAGES = ("prisma", "sql")


def table_dicts(tables: list[Table]) -> list[dict[str, Any]]:
    return [asdict(t) for t in tables]


def discover(graph: Graph, definitions: list[tuple[str, str, list[dict[str, Any]]]]) -> None:
    """Replace every table/column node. `definitions`: (path, language, tables) per file."""
    ordered = sorted(definitions, key=lambda d: (SCHEMA_LANGUAGES.index(d[1]), d[0]))
    nodes: dict[str, Node] = {}
    internal: list[Edge] = []
    defined_in: list[Edge] = []
    references: list[Edge] = []
    for path, language, tables in ordered:
        for table in tables:
            tkey = keys.table_key(table["name"])
            if tkey not in nodes:
                nodes[tkey] = Node(tkey, "table", table["name"], path=path, line=table["line"],
                                   end_line=table["end_line"], summary=table.get("summary", ""),
                                   subkind=language, source="schema")
            defined_in.append(Edge(keys.file_key(path), tkey, "defines"))
            for col in table.get("columns", []):
                ckey = keys.column_key(table["name"], col["name"])
                if ckey not in nodes:
                    nodes[ckey] = Node(ckey, "column", f"{nodes[tkey].label}.{col['name']}",
                                       path=path, line=col["line"], end_line=col["line"],
                                       signature=f"{col['name']} {col['type']}".strip(),
                                       subkind="column", source="schema")
                    internal.append(Edge(tkey, ckey, "contains"))
                if col.get("references"):
                    other, other_col = col["references"]
                    references.append(Edge(tkey, keys.table_key(other), "references"))
                    if other_col:
                        references.append(Edge(ckey, keys.column_key(other, other_col),
                                               "references"))
    graph.replace_owner(OWNER, list(nodes.values()), internal + references)
    for edge in defined_in:
        graph.add_edge(edge.src, edge.dst, edge.kind)
