"""Child process for the crash test: saves a realistic graph forever, acknowledging each save.

Usage: python -m tests.knowledge.store_child DB_PATH
Prints "ack N" after save N is committed; each save rewrites every node of a few owners with
generation N and sets meta["gen"] = N in the same transaction.
"""

from __future__ import annotations

import sys
from pathlib import Path

from knowledge.core import keys
from knowledge.core.graph import Edge, Graph, Node
from knowledge.core.store import Store

FILES = 200
SYMBOLS = 10


def file_nodes(rel: str, gen: int) -> tuple[list[Node], list[Edge]]:
    fkey = keys.file_key(rel)
    nodes = [Node(fkey, "file", rel, path=rel, data={"gen": gen})]
    edges = []
    for i in range(SYMBOLS):
        skey = keys.symbol_key(rel, f"func_{i}")
        nodes.append(
            Node(
                skey,
                "symbol",
                f"func_{i}",
                path=rel,
                line=i * 10 + 1,
                signature=f"def func_{i}(a, b) -> int",
                summary="x" * 80,
                data={"gen": gen},
            )
        )
        edges.append(Edge(fkey, skey, "defines"))
    return nodes, edges


def main(db: str) -> None:
    store = Store.open(Path(db))
    graph = Graph()
    rels = [f"src/mod_{i}.py" for i in range(FILES)]
    gen = 0
    while True:
        gen += 1
        # First save writes everything; later saves rewrite a rotating tenth of the files.
        targets = rels if gen == 1 else rels[(gen * 20) % FILES : (gen * 20) % FILES + 20]
        for rel in targets:
            nodes, edges = file_nodes(rel, gen)
            graph.replace_owner(rel, nodes, edges)
        store.save(graph, meta={"gen": str(gen)})
        sys.stdout.write(f"ack {gen}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
