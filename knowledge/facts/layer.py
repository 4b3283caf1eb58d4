"""`FactsLayer`: what the conversation says, kept in the project's one graph.

The agent asks a model to extract from each user message (S1) and each assistant reply (S1.5)
with `EXTRACTION_SCHEMA` and `extraction_prompt`, parses the answer with `parse_extraction`
and hands it to `apply`; `cycle` at the start of each turn ages what was discussed, and
`block_lines` gives the lines of the injected context block.

Storage, in the nodes the graph already has (no second store):
- An entity is a node of kind "entity", key `keys.entity_key(label)`, owning itself; its
  type in `subkind`, `status` "complete" or "incomplete" (`data["pending_fields"]`), its
  layer and source ("user_assertion" or "world"), `data["confidence"]`. A label that names an
  existing node (file, symbol, table, entity, alias) means that node: facts go there.
- Facts are records in `Node.facts`. Relations are records in the source node's
  `data["relations"]` (graph edges carry no attributes, so validity lives in the record),
  and each current relation is also a plain edge "rel:<RELATION>" so traversal and recall's
  spreading see it. A superseded relation loses its edge and keeps its record.
- A correction ends a record (`valid_to`, `superseded_by`) only when it adds the new one;
  a chain SQLite -> PostgreSQL -> MySQL leaves one current relation and two in history.
- Lifecycle: `data["heat"]` hot | warm | cold. Created or mentioned (in an applied extraction
  or `block_lines`' query) -> hot; `cycle` moves hot -> warm -> cold.
- An entity's `summary` (and `data["text"]`) is its current relations and facts, which is
  what recall's lexical index and the embedder read for entity nodes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace

from knowledge.core.graph import RELATION_EDGE, Graph, GraphReader, Node
from knowledge.core.redact import redact
from knowledge.core.settings import is_off
from knowledge.core.store import Store, StoreError, StoreGraph
from knowledge.facts.apply import ApplyReport, Turn, commit, redacted
from knowledge.facts.extraction import Extraction, Speaker
from knowledge.facts.match import Names, Said, mentioned
from knowledge.facts.ontology import Ontology
from knowledge.facts.records import FactView, holds_records, line, relations, views
from knowledge.index.project import Project

log = logging.getLogger(__name__)

_COOLER = {"hot": "warm", "warm": "cold"}


class FactsLayer:
    def __init__(self, project: Project, now: Callable[[], float] = time.time) -> None:
        self.project = project
        self.now = now
        self.ontology = Ontology.of(project)
        self.last_error: str | None = None  # the last save that failed, for `theus status`
        self._names: Names | None = None
        self._holders: set[str] | None = None

    # -- writing -----------------------------------------------------------------------------
    def apply(self, extraction: Extraction, text: str, speaker: Speaker) -> ApplyReport:
        """Apply what was extracted from `text` (said by `speaker`), redacted, and save. A
        failed save is logged and reported; the changes stay in the graph for the next save."""
        report = ApplyReport()
        if is_off("facts"):
            report.enabled = False
            return report
        extraction, text = redacted(extraction), redact(text)
        with self.project.lock:
            graph = self.project.graph
            with graph.lock:
                self.ontology.refresh()
                names = self._names_of(graph)
                turn = Turn(
                    graph,
                    names,
                    self.ontology,
                    Said(text),
                    speaker,
                    self.now(),
                    self._holders_of(graph),
                    report,
                )
                turn.run(extraction)
                names.version = graph.version  # `Names` followed this turn's changes
            if turn.work:
                report.error = self._save()
        return report

    def cycle(self) -> None:
        """Start of a turn: hot -> warm -> cold."""
        if is_off("facts"):
            return
        graph = self.project.graph
        with graph.lock:  # not the project's lock: a long index must not hold up a turn
            for node in self._nodes(graph):
                cooler = _COOLER.get(str(node.data.get("heat")))
                if cooler is not None:
                    self._put(graph, replace(node, data={**node.data, "heat": cooler}))

    def forget(self, ident: str) -> int:
        """Remove a record (by id, `<key>#<n>`) or everything known about a subject (a label
        or key: an entity node goes, with the relations pointing at it; another node keeps
        itself and loses its records). Returns the number of records removed."""
        with self.project.lock:
            graph = self.project.graph
            with graph.lock:
                removed = self._forget(graph, ident)
            if removed:
                self._save()
        return removed

    # -- reading -----------------------------------------------------------------------------
    def block_lines(self, query: str, limit: int = 8) -> list[str]:
        """Lines for the injected block: the subjects `query` names (which become hot), then
        the other hot ones; current records only."""
        if is_off("facts") or limit <= 0:
            return []
        said = Said(query)
        picked: list[tuple[int, Node]] = []
        graph = self.project.graph
        with graph.lock:  # in the request's path: not behind an index holding the project
            for node in self._nodes(graph):
                if mentioned(said, _names(node)):
                    node = replace(
                        node, data={**node.data, "heat": "hot", "mentioned_at": self.now()}
                    )
                    self._put(graph, node)
                    picked.append((0, node))
                elif node.data.get("heat") == "hot":
                    picked.append((1, node))
            return _lines(picked, graph, limit)

    def current(self) -> list[FactView]:
        """Every current fact and relation, by subject."""
        graph = self.project.graph
        with graph.lock:
            found = [v for node in self._nodes(graph) for v in views(node) if v.current]
        return sorted(found, key=lambda v: (v.subject.casefold(), v.valid_from, v.id))

    def history(self, subject: str) -> list[FactView]:
        """Every record of `subject` (a label or key), superseded ones included, oldest first."""
        graph = self.project.graph
        with graph.lock:
            node = graph.get(self._key_of(graph, subject) or "")
            return views(node) if node is not None else []

    def known_labels(self, limit: int = 100) -> list[str]:
        """Labels to offer the model (`extraction_prompt`'s `known`): hot, then warm, then cold,
        most recently mentioned first."""
        order = {"hot": 0, "warm": 1}
        graph = self.project.graph
        with graph.lock:
            nodes = sorted(
                self._nodes(graph),
                key=lambda n: (
                    order.get(str(n.data.get("heat")), 2),
                    -float(n.data.get("mentioned_at", 0)),
                    n.label,
                ),
            )
        return [n.label for n in nodes[:limit]]

    # -- helpers -----------------------------------------------------------------------------
    def _names_of(self, graph: Graph) -> Names:
        if self._names is None or self._names.version != graph.version:
            self._names = Names(graph)
        return self._names

    def _holders_of(self, graph: Graph) -> set[str]:
        """Keys of the nodes this layer looks after; found once, then kept up to date."""
        if self._holders is None:
            self._holders = {n.key for n in graph.nodes() if _looked_after(n)}
        return self._holders

    def _nodes(self, graph: Graph) -> list[Node]:
        holders = self._holders_of(graph)
        found = []
        for key in sorted(holders):
            node = graph.get(key)
            if node is None:
                holders.discard(key)  # re-indexed away, or removed by someone else
            else:
                found.append(node)
        return found

    def _put(self, graph: Graph, node: Node) -> None:
        """A heat change: no label changes, so `Names` stays valid."""
        before = graph.version
        graph.upsert(node, graph.owner_of(node.key) or node.key)
        if self._names is not None and self._names.version == before:
            self._names.version = graph.version

    def _key_of(self, graph: Graph, ident: str) -> str | None:
        return ident if ident in graph else self._names_of(graph).find(ident)

    def _forget(self, graph: Graph, ident: str) -> int:
        subject, _, seq = ident.rpartition("#")  # a symbol's key holds a "#" too
        record_of = graph.get(subject) if seq.isdigit() else None
        if record_of is not None:
            changed = _without(record_of, {ident})
            if changed is None:
                return 0
            commit(graph, changed)
            return 1
        key = self._key_of(graph, ident)
        node = graph.get(key or "")
        if key is None or node is None:
            return 0
        removed = len(node.facts) + len(relations(node))
        for other in self._nodes(graph):  # the relations pointing at it go with it
            ids = {r["id"] for r in relations(other) if r["target"] == key}
            changed = _without(other, ids) if ids and node.kind == "entity" else None
            if changed is not None:
                commit(graph, changed)
                removed += len(ids)
        if node.kind == "entity":
            graph.remove_node(key)
            self._holders_of(graph).discard(key)
        else:
            data = {k: v for k, v in node.data.items() if k not in ("heat", "mentioned_at")}
            commit(graph, replace(node, facts=[], data={**data, "relations": []}))
        self._names = None  # labels and aliases may have gone
        return removed

    def _save(self) -> str:
        try:
            self.project.save()
        except StoreError as exc:  # fail open: kept in the graph, saved by the next save
            log.warning("facts: not saved yet: %s", exc)
            self.last_error = str(exc)
            return str(exc)
        self.last_error = None
        return ""


def stored_lines(store: Store, said: str, limit: int = 8) -> list[str]:
    """`block_lines` for a process that has not opened the layer (a one-shot run, or a
    resumed conversation's first turn), read from the store without loading the graph: the
    subjects `said` names. Heat is left to the open layer, which ages it turn by turn."""
    if is_off("facts") or limit <= 0:
        return []
    words = Said(said)
    picked = [
        (0, node)
        for node in store.fact_holders()
        if _looked_after(node) and mentioned(words, _names(node))
    ]
    return _lines(picked, StoreGraph(store), limit)


def _looked_after(node: Node) -> bool:
    return node.kind == "entity" or holds_records(node) or "heat" in node.data


def _names(node: Node) -> list[str]:
    return [node.label, *node.data.get("aliases", [])]


def _lines(picked: list[tuple[int, Node]], graph: GraphReader, limit: int) -> list[str]:
    """The block's lines for `picked` (rank, node): lower ranks first, then the most recently
    mentioned; a subject with no current record and nothing pointing at it says nothing."""
    kept = [
        (rank, -float(node.data.get("mentioned_at", 0)), node.label, node, used_by)
        for rank, node in picked
        if (used_by := _used_by(graph, node)) or _current(node)
    ]
    kept.sort(key=lambda k: k[:3])
    return [line(node, used_by) for *_, node, used_by in kept[:limit]]


def _current(node: Node) -> bool:
    return any(v.current for v in views(node))


def _used_by(graph: GraphReader, node: Node) -> dict[str, list[str]]:
    """Relation -> labels of the nodes pointing at `node` with it (current relations)."""
    out: dict[str, list[str]] = {}
    for edge in graph.in_edges(node.key):
        source = graph.get(edge.src)
        if edge.kind.startswith(RELATION_EDGE) and source is not None:
            out.setdefault(edge.kind.removeprefix(RELATION_EDGE), []).append(source.label)
    return out


def _without(node: Node, ids: set[str]) -> Node | None:
    """A copy of `node` without the records `ids`; None when it has none of them."""
    facts = [r for r in node.facts if r["id"] not in ids]
    kept = [r for r in relations(node) if r["id"] not in ids]
    if len(facts) == len(node.facts) and len(kept) == len(relations(node)):
        return None
    return replace(node, facts=facts, data={**node.data, "relations": kept})
