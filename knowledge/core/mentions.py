"""Mentions: the files and symbols a free text names, as derived-from edges.

Memories and episodes point at what they are about through backticked paths and identifiers
(`src/app.py`, `Cart.total`, `src/app.py#Cart.total`, `f(x)`, `src/app.py:12`), and through
the same written plainly, as people write them ("rounding lives in billing/invoice.py",
"see invoice.py", "Cart.total", "redirect_after_login"): a plain token links only to a file or
symbol that exists, and a bare name only when one file or symbol has it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from knowledge.core import keys
from knowledge.core.graph import Graph

_BACKTICK_RE = re.compile(r"`([^`\n]{2,200})`")
# Written without backticks: a path (a/b.py), a dotted name (invoice.py, Cart.total), or an
# identifier only code has (snake_case, CamelCase with an inner capital).
_PLAIN_RE = re.compile(
    r"(?<![\w/.`-])(?:[\w.-]+/)+[\w.-]*\w|(?<![\w/.`-])(?:"
    r"\w+(?:\.[A-Za-z_]\w*)+|[A-Za-z]\w*_\w+|[A-Z][a-z0-9]+[A-Z]\w*)"
    r"(?![\w/])"
)
_LINE_SUFFIX = re.compile(r":\d+(?::\d+)?$")


class Mentions:
    """Resolve backticked paths and identifiers in a text to keys that exist in the graph."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._by_name: dict[str, list[str]] | None = None

    def keys_for(self, text: str, files: Iterable[str] = ()) -> list[str]:
        found: list[str] = []
        plain = _PLAIN_RE.findall(_BACKTICK_RE.sub(" ", text))
        for token in [*files, *_BACKTICK_RE.findall(text), *plain]:
            # `f(x)` names f; `src/app.py:12` names the file
            key = self._resolve(_LINE_SUFFIX.sub("", token.strip().split("(", 1)[0]))
            if key and key not in found:
                found.append(key)
        return found

    def link(self, src: str, text: str, files: Iterable[str] = ()) -> None:
        for dst in self.keys_for(text, files):
            self.graph.add_edge(src, dst, "derived-from")

    def _resolve(self, token: str) -> str | None:
        if not token or " " in token:
            return None
        graph = self.graph
        path, _, symbol = token.partition("#")
        path = path.removeprefix("./")
        if symbol:
            key = keys.symbol_key(path, symbol)
            if key in graph:
                return key
        if path and keys.file_key(path) in graph:
            return keys.file_key(path)
        if symbol or "/" in token:
            return None
        candidates = self._names().get(token, [])
        return candidates[0] if len(candidates) == 1 else None

    def _names(self) -> dict[str, list[str]]:
        if self._by_name is None:  # built once per sync, only when a bare identifier shows up
            names: dict[str, list[str]] = {}
            for node in self.graph.nodes("symbol"):
                names.setdefault(node.label, []).append(node.key)
                short = node.label.rsplit(".", 1)[-1]
                if short != node.label:
                    names.setdefault(short, []).append(node.key)
            for node in self.graph.nodes("file"):  # "invoice.py" names the one file so called
                names.setdefault(node.path.rsplit("/", 1)[-1], []).append(node.key)
            self._by_name = names
        return self._by_name
