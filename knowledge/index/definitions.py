"""Which symbol each name points at, kept in step with the graph one file at a time.

`references` edges link a file to the one symbol a name it uses defines. Only names whose set
of definitions changed can change another file's links, so an update reports exactly those.
"""

from __future__ import annotations

from knowledge.core.graph import Graph

# Names too generic to link by name even when only one definition exists.
GENERIC = frozenset(
    {
        "main",
        "init",
        "run",
        "get",
        "set",
        "new",
        "test",
        "setup",
        "start",
        "stop",
        "close",
        "open",
        "read",
        "write",
        "update",
        "create",
        "delete",
        "load",
        "save",
        "name",
        "value",
        "data",
        "type",
        "self",
        "this",
        "none",
        "true",
        "false",
        "null",
    }
)
LINKED_KINDS = frozenset(
    {"class", "function", "interface", "type", "struct", "enum", "trait", "const", "method"}
)

FileNames = dict[str, frozenset[str]]  # name -> keys of the symbols of one file with that name


def names_of(graph: Graph, rel: str) -> FileNames:
    """Linkable names a file defines: the short name (`total`) and the qualified one
    (`Cart.total`, as docs write it)."""
    out: dict[str, set[str]] = {}
    for node in graph.owned_nodes(rel):
        if node.kind != "symbol" or node.subkind not in LINKED_KINDS:
            continue
        short = node.label.rsplit(".", 1)[-1]
        if len(short) < 4 or short.lower() in GENERIC:
            continue
        out.setdefault(short, set()).add(node.key)
        if node.label != short:
            out.setdefault(node.label, set()).add(node.key)
    return {name: frozenset(found) for name, found in out.items()}


class Definitions:
    def __init__(self) -> None:
        self._by_name: dict[str, dict[str, str]] = {}  # name -> {symbol key: path}

    @classmethod
    def build(cls, graph: Graph) -> Definitions:
        defs = cls()
        for rel in graph.owners():
            defs.replace(rel, {}, names_of(graph, rel))
        return defs

    def replace(self, rel: str, before: FileNames, after: FileNames) -> set[str]:
        """Swap one file's definitions; returns the names whose definitions changed."""
        changed = {
            name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
        }
        for name in changed:
            entry = self._by_name.get(name, {})
            for key in before.get(name, ()):
                entry.pop(key, None)
            for key in after.get(name, ()):
                entry[key] = rel
            if entry:
                self._by_name[name] = entry
            else:
                self._by_name.pop(name, None)
        return changed

    def unique(self, name: str) -> tuple[str, str] | None:
        """(symbol key, path) when exactly one symbol has this name."""
        entry = self._by_name.get(name)
        if entry is None or len(entry) != 1:
            return None
        return next(iter(entry.items()))
