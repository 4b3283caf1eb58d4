"""What the graph panel shows, computed off the event loop: the folder tree of the indexed
files, and a node's detail (edges grouped by kind, the file text for the preview). Names,
labels and file text may carry escape sequences: what this module hands out is `printable`,
and `shown` makes a label for a widget that would read markup."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from rich.text import Text

from knowledge.core.graph import Graph, Node
from knowledge.facts.records import holds_records
from knowledge.index.languages import LANGUAGES
from theus.printable import printable

PREVIEW_BYTES = 400_000  # larger files are previewed truncated
# The preview's syntax by suffix: each indexed language's, then formats that are not indexed.
HIGHLIGHT = {
    **{s: spec.highlight for spec in LANGUAGES.values() if spec.highlight for s in spec.suffixes},
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".html": "html",
    ".css": "css",
    ".sh": "bash",
    ".xml": "xml",
}


@dataclass(slots=True)
class Folders:
    """Folder -> its sub-folders and file keys, for a lazily expanded Tree."""

    dirs: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # (name, file key)
    with_parts: set[str] = field(default_factory=set)  # file keys that contain something
    # What conversations told (`knowledge.facts`): (label, key) of each node holding facts.
    told: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def build(cls, graph: Graph) -> Folders:
        dirs: dict[str, set[str]] = defaultdict(set)
        files: dict[str, list[tuple[str, str]]] = defaultdict(list)
        with graph.lock:
            paths = [(n.path, n.key) for n in graph.nodes("file")]
            with_parts = {key for _, key in paths if graph.out_edges(key, "contains")}
            told = sorted(
                ((printable(n.label), n.key) for n in graph.nodes() if holds_records(n)),
                key=lambda t: t[0].casefold(),
            )
        for path, key in paths:
            pure = PurePosixPath(path)
            parent = "" if str(pure.parent) == "." else str(pure.parent)
            files[parent].append((printable(pure.name), key))
            while parent:
                up = PurePosixPath(parent).parent
                up_s = "" if str(up) == "." else str(up)
                dirs[up_s].add(parent)
                parent = up_s
        return cls(
            {d: sorted(s, key=str.casefold) for d, s in dirs.items()},
            {d: sorted(f, key=lambda t: t[0].casefold()) for d, f in files.items()},
            with_parts,
            told,
        )


def children(graph: Graph, key: str) -> list[Node]:
    """A file's or symbol's direct parts (the `contains` edges), in source order."""
    with graph.lock:
        nodes = [n for e in graph.out_edges(key, "contains") if (n := graph.get(e.dst))]
    return sorted(nodes, key=lambda n: (n.line, n.label))


@dataclass(slots=True)
class EdgeRow:
    direction: str  # "out" | "in"
    kind: str
    key: str
    label: str
    where: str


@dataclass(slots=True)
class Detail:
    node: Node
    edges: list[EdgeRow]
    text: str  # the preview: the file's text, or a memory's/episode's text
    language: str | None
    line: int  # 1-based line to show in the preview (0: top)


def detail(graph: Graph, root: Path, key: str) -> Detail | None:
    with graph.lock:
        node = graph.get(key)
        if node is None:
            return None
        rows = [_row(graph, "out", e.kind, e.dst) for e in graph.out_edges(key)]
        rows += [_row(graph, "in", e.kind, e.src) for e in graph.in_edges(key)]
    rows.sort(key=lambda r: (r.direction != "out", r.kind, r.where, r.label))
    text, language = _preview(root, node)
    return Detail(node, rows, printable(text), language, node.line)


def _row(graph: Graph, direction: str, kind: str, key: str) -> EdgeRow:
    node = graph.get(key)
    if node is None:
        return EdgeRow(direction, kind, key, printable(key), "")
    where = f"{node.path}:{node.line}" if node.path and node.line else node.path
    return EdgeRow(direction, kind, key, printable(node.label or key), printable(where))


def _preview(root: Path, node: Node) -> tuple[str, str | None]:
    if not node.path:
        return str(node.data.get("text") or node.summary or ""), "markdown"
    path = root / node.path
    try:
        with path.open("rb") as handle:
            raw = handle.read(PREVIEW_BYTES + 1)
    except OSError as exc:
        return f"(cannot read {node.path}: {exc.strerror or exc})", None
    text = raw[:PREVIEW_BYTES].decode("utf-8", errors="replace")
    if len(raw) > PREVIEW_BYTES:
        text += "\n… (preview truncated)"
    return text, HIGHLIGHT.get(PurePosixPath(node.path).suffix.lower())


def header(node: Node) -> str:
    """The detail view's text: kind, path, lines, signature, summary, facts."""
    kind = f"{node.kind} · {node.subkind}" if node.subkind else node.kind
    lines = [f"{kind}  {node.label}", f"key      {node.key}"]
    if node.path:
        span = f"{node.line}-{node.end_line}" if node.end_line > node.line else str(node.line)
        lines.append(f"path     {node.path}" + (f"  lines {span}" if node.line else ""))
    if node.signature:
        lines.append(f"sig      {node.signature}")
    if node.summary:
        lines.append(f"summary  {node.summary}")
    records = [(r, str(r.get("text", ""))) for r in node.facts]
    records += [
        (r, f"{r.get('type', '')} → {r.get('label', r.get('target', ''))}")
        for r in node.data.get("relations", [])
    ]
    for record, text in sorted(records, key=lambda rt: rt[0].get("valid_to") is not None):
        until = record.get("valid_to")
        said = f"[{str(record.get('layer', '')).lower()}, {record.get('source', '')}]"
        if until is None:
            lines.append(f"fact     {text}  {said}")
        else:
            day = time.strftime("%Y-%m-%d", time.localtime(float(until)))
            lines.append(f"was      {text}  {said} until {day}")
    return printable("\n".join(lines))


def shown(text: str) -> Text:
    """`text` for a tree or a list: printable, and its brackets text, not markup (a file
    named `[b]x.py` is shown so, not as a bold `x.py`; `[/]` in a label would raise)."""
    return Text(printable(text))
