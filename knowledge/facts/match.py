"""Which node a label means, and whether a message really says it.

`Said` answers "does this text name X?": the text's words are compared folded (case, accents
and punctuation ignored, `keys.fold_label`), as a run of whole words, so "Next.js" is found in
"we use nextjs" and "next js", but "Ron" is not found in "environment".

`Names` maps a folded label to the one node it means: an alias (ALIAS_OF) first, then an
entity, a table, a file (by name or path), a symbol (by qualified name, or by its short name
when only one symbol has it). A label two nodes of one rank share means neither.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING

from knowledge.core.keys import fold_label, normalize

if TYPE_CHECKING:  # a graph is handed in: matching imports no graph library
    from knowledge.core.graph import Graph, Node

_WORD = re.compile(r"[^\W_]+")
# Lower ranks win: an alias names its node even where another node has that label.
_ALIAS, _ENTITY, _TABLE, _FILE, _SYMBOL, _SHORT = range(6)
_RANK = {"entity": _ENTITY, "table": _TABLE, "file": _FILE, "symbol": _SYMBOL}


def words(text: str) -> list[str]:
    decomposed = unicodedata.normalize("NFKD", normalize(text))
    return _WORD.findall("".join(c for c in decomposed if not unicodedata.combining(c)))


class Said:
    """The words of one message, to check that a label literally appears in it."""

    def __init__(self, text: str) -> None:
        self._words = words(text)

    def mentions(self, label: str) -> bool:
        wanted = fold_label(label)
        if not wanted:
            return False
        ws = self._words
        for start in range(len(ws)):
            run = ""
            for word in ws[start:]:
                run += word
                if not wanted.startswith(run):
                    break
                if run == wanted:
                    return True
        return False


class Names:
    """Folded label -> node key over the graph; `add` keeps it current as entities are made."""

    def __init__(self, graph: Graph) -> None:
        self._best: dict[str, tuple[int, set[str]]] = {}
        for kind in _RANK:
            for node in graph.nodes(kind):
                self.add(node)
        self.version = graph.version

    def add(self, node: Node) -> None:
        rank = _RANK.get(node.kind)
        if rank is None:
            return
        for alias in node.data.get("aliases", []):
            self.alias(str(alias), node.key)
        self._offer(node.label, rank, node.key)
        if node.kind == "file":
            self._offer(node.path, rank, node.key)
        elif node.kind == "symbol" and "." in node.label:
            self._offer(node.label.rsplit(".", 1)[-1], _SHORT, node.key)

    def alias(self, label: str, key: str) -> None:
        self._offer(label, _ALIAS, key)

    def find(self, label: str) -> str | None:
        found = self._best.get(fold_label(label))
        if found is None or len(found[1]) != 1:
            return None
        return next(iter(found[1]))

    def _offer(self, label: str, rank: int, key: str) -> None:
        folded = fold_label(label)
        if not folded:
            return
        best = self._best.get(folded)
        if best is None or rank < best[0]:
            self._best[folded] = (rank, {key})
        elif rank == best[0]:
            best[1].add(key)


def mentioned(said: Said, labels: Iterable[str]) -> bool:
    return any(said.mentions(label) for label in labels)
