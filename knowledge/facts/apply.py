"""Applying one extraction to the graph: one `Turn` per message, under the project's lock.

What the model extracted is redacted first (`redacted`): labels become keys and lines of the
injected block, facts are stored; a label that held a secret is refused.

Order: aliases are read first (an alias names its target, so it makes no node of its own),
then entities, relations, corrections, facts. Corrections run before facts so that a fact of
this very message ("we moved from SQLite to PostgreSQL") is not itself "corrected", and they
never touch a record made in this turn.

Nodes are edited on working copies and put back once at the end (`commit`), so the recall
index, which tracks node identities, sees each changed node as changed.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field, replace
from typing import Any

from knowledge.core.graph import RELATION_EDGE, Graph, Node
from knowledge.core.keys import ENTITY_PREFIX, entity_key, fold_label, normalize
from knowledge.core.redact import MARK, redact
from knowledge.facts.extraction import Correction, Extraction, Fact, Relation, Speaker
from knowledge.facts.match import Names, Said
from knowledge.facts.ontology import ALIAS_OF, WORLD_TYPES, Layer, Ontology, as_layer
from knowledge.facts.records import described, edge_kind, is_current, next_id, relations, supersede

SELF_LABEL = "User"  # the entity first-person subjects ("I", "me", "yo") stand for
_SELF = frozenset(
    fold_label(w)
    for w in ("I", "me", "my", "myself", "user", "the user", "yo", "mi", "usuario", "el usuario")
)
_CONFIDENCE = {"user": 1.0, "assistant": 0.8}  # what the user asserts is ground truth
PHANTOM = "not said in the message and not in the graph"
_LAYER_SOURCE = {"PERSONAL": "user_assertion", "UNIVERSAL": "world"}


@dataclass(frozen=True, slots=True)
class Refusal:
    label: str
    why: str


@dataclass(slots=True)
class ApplyReport:
    enabled: bool = True  # False: THEUS_NO_FACTS=1, nothing was applied
    added: list[str] = field(default_factory=list)  # keys of new entity nodes
    merged: list[str] = field(default_factory=list)  # keys of existing nodes named again
    completed: list[str] = field(default_factory=list)  # incomplete entities given a type
    refused: list[Refusal] = field(default_factory=list)  # phantoms and unusable items
    superseded: list[str] = field(default_factory=list)  # ids of records a correction ended
    facts: int = 0  # fact records added
    relations: int = 0  # relation records added
    error: str = ""  # the save failed: the changes stay in the graph for the next save

    def counts(self) -> dict[str, int]:
        return {
            "added": len(self.added),
            "merged": len(self.merged),
            "completed": len(self.completed),
            "refused": len(self.refused),
            "superseded": len(self.superseded),
            "facts": self.facts,
            "relations": self.relations,
        }


def redacted(found: Extraction) -> Extraction:
    """Every text of `found` redacted, before any of it is applied."""
    return Extraction(
        tuple(replace(e, label=redact(e.label)) for e in found.entities),
        tuple(
            replace(r, source=redact(r.source), target=redact(r.target)) for r in found.relations
        ),
        tuple(replace(f, subject=redact(f.subject), text=redact(f.text)) for f in found.facts),
        tuple(
            replace(c, subject=redact(c.subject), old=redact(c.old), new=redact(c.new))
            for c in found.corrections
        ),
        tuple(redact(d) for d in found.dropped),
    )


def commit(graph: Graph, node: Node) -> None:
    """Put an edited working copy back: refresh an entity's summary (what recall indexes),
    keep the node's owner, and make the relation edges match its current relations."""
    if node.kind == "entity":
        node.summary = described(node)
        node.data["text"] = f"{node.label}: {node.summary}" if node.summary else node.label
    graph.upsert(replace(node), graph.owner_of(node.key) or node.key)
    stale = {e.kind for e in graph.out_edges(node.key) if e.kind.startswith(RELATION_EDGE)}
    if stale:
        graph.remove_out_edges(node.key, stale)
    for record in relations(node):
        if is_current(record):
            graph.add_edge(node.key, record["target"], edge_kind(record["type"]))


class Turn:
    def __init__(
        self,
        graph: Graph,
        names: Names,
        ontology: Ontology,
        said: Said,
        speaker: Speaker,
        now: float,
        holders: set[str],
        report: ApplyReport,
    ) -> None:
        self.graph, self.names, self.ontology = graph, names, ontology
        self.said, self.speaker, self.now = said, speaker, now
        self.holders, self.report = holders, report
        self.work: dict[str, Node] = {}
        self.created: set[str] = set()
        self.fresh: set[str] = set()  # ids of records made in this turn

    def run(self, extraction: Extraction) -> None:
        aliases = [r for r in extraction.relations if self.ontology.relation_of(r.type) == ALIAS_OF]
        alias_labels = {fold_label(r.source) for r in aliases}
        for entity in extraction.entities:
            if fold_label(entity.label) not in alias_labels:
                self.admit(entity.label, entity.type, entity.layer)
        for relation in aliases:
            self.alias(relation)
        for relation in extraction.relations:
            if relation not in aliases:
                self.relation(relation)
        for correction in extraction.corrections:
            self.correction(correction)
        for fact in extraction.facts:
            self.fact(fact)
        for node in self.work.values():
            commit(self.graph, node)

    # -- nodes -------------------------------------------------------------------------------
    def node(self, key: str) -> Node:
        """The working copy of an existing node."""
        node = self.work.get(key)
        if node is None:
            found = self.graph.get(key)
            assert found is not None  # keys come from `Names`, built over this graph
            node = self.work[key] = copy.deepcopy(found)
        return node

    def refuse(self, label: str, why: str) -> None:
        refusal = Refusal(label, why)
        if refusal not in self.report.refused:  # an entity and its relation: said once
            self.report.refused.append(refusal)

    def admit(self, label: str, type_name: str = "", layer: Layer | None = None) -> str | None:
        """The key of the node `label` means, made when new: None (and a refusal) when the
        message does not say it and no node has it (a phantom)."""
        folded = fold_label(label)
        if not folded:
            self.refuse(label, "no letters or digits")
            return None
        if MARK in label:
            self.refuse(label, "holds a secret")
            return None
        is_self = folded in _SELF
        if is_self:
            label, type_name, layer = SELF_LABEL, type_name or "Person", "PERSONAL"
        key = self.names.find(label)
        if (
            key is not None
            and not key.startswith(ENTITY_PREFIX)
            and (is_self or self._of_the_world(type_name))
        ):
            key = None  # the user is the user; a person is never a table or a class
        if key is None and entity_key(label) in self.graph:  # an alias two nodes share
            key = entity_key(label)
        if key is not None:
            self.mention(key)
            if type_name:
                self.complete(key, type_name)
            return key
        if not is_self and not self.said.mentions(label):
            self.refuse(label, PHANTOM)
            return None
        return self.create(label, type_name, layer)

    def _of_the_world(self, type_name: str) -> bool:
        entity_type = self.ontology.resolve_type(type_name) if type_name else None
        return entity_type is not None and entity_type.name in WORLD_TYPES

    def _self_key(self) -> str | None:
        key = entity_key(SELF_LABEL)
        return key if key in self.work or key in self.graph else None

    def create(self, label: str, type_name: str, layer: Layer | None) -> str:
        entity_type = self.ontology.resolve_type(type_name)
        layer = layer or (entity_type.layer_default if entity_type else "PERSONAL")
        node = Node(
            key=entity_key(label),
            kind="entity",
            label=label,
            subkind=entity_type.name if entity_type else "",
            layer=layer,
            source=_LAYER_SOURCE[layer],
            status="complete" if entity_type else "incomplete",
            valid_from=self.now,
            data={
                "confidence": _CONFIDENCE[self.speaker],
                "pending_fields": [] if entity_type else ["type"],
            },
        )
        self.graph.upsert(node)  # in the graph now, so relations can reach it
        self.names.add(node)
        self.work[node.key] = node
        self.created.add(node.key)
        self.holders.add(node.key)
        self.report.added.append(node.key)
        self.mention(node.key)
        return node.key

    def mention(self, key: str) -> None:
        node = self.node(key)
        node.data["heat"], node.data["mentioned_at"] = "hot", self.now
        self.holders.add(key)
        if key not in self.created and key not in self.report.merged:
            self.report.merged.append(key)

    def complete(self, key: str, type_name: str) -> None:
        node = self.node(key)
        if node.kind != "entity" or node.status != "incomplete":
            return  # a known type stays: one model answer does not flip it
        entity_type = self.ontology.resolve_type(type_name)
        if entity_type is None:
            return
        node.subkind, node.status = entity_type.name, "complete"
        node.data["pending_fields"] = [
            f for f in node.data.get("pending_fields", []) if f != "type"
        ]
        self.report.completed.append(key)

    # -- records -----------------------------------------------------------------------------
    def alias(self, relation: Relation) -> None:
        target = self.admit(relation.target)
        if target is None:
            return
        if not self.said.mentions(relation.source) and self.names.find(relation.source) is None:
            self.refuse(relation.source, PHANTOM)
            return
        node = self.node(target)
        aliases = node.data.setdefault("aliases", [])
        if relation.source not in aliases:
            aliases.append(relation.source)
        self.names.alias(relation.source, target)

    def relation(self, relation: Relation) -> None:
        name = self.ontology.resolve_relation(relation.type)
        said = f"{relation.source} {relation.type} {relation.target}"
        if name is None:
            self.refuse(said, "the relation has no name")
            return
        src, dst = self.admit(relation.source), self.admit(relation.target)
        if src is None or dst is None:
            self.refuse(said, "an end of the relation was refused")
        elif src == dst:
            self.refuse(said, "relates a node to itself")
        else:
            self.add_relation(src, name, dst)

    def add_relation(self, src: str, name: str, dst: str) -> str:
        node = self.node(src)
        for known in relations(node):
            if is_current(known) and known["type"] == name and known["target"] == dst:
                return str(known["id"])
        record: dict[str, Any] = {
            "id": next_id(node),
            "type": name,
            "target": dst,
            "label": self.node(dst).label,
            "source": self.speaker,
            "layer": node.layer,
            "valid_from": self.now,
            "valid_to": None,
        }
        node.data.setdefault("relations", []).append(record)
        self.fresh.add(record["id"])
        self.report.relations += 1
        return str(record["id"])

    def fact(self, fact: Fact) -> None:
        key = self.admit(fact.subject)
        if key is not None:
            self.add_fact(
                key, fact.text, fact.source, "UNIVERSAL" if fact.source == "world" else "PERSONAL"
            )

    def add_fact(self, key: str, text: str, source: str, layer: str) -> str:
        node = self.node(key)
        wanted = normalize(text)
        for known in node.facts:
            if is_current(known) and normalize(str(known["text"])) == wanted:
                return str(known["id"])
        record: dict[str, Any] = {
            "id": next_id(node),
            "text": text,
            "source": source,
            "layer": layer,
            "speaker": self.speaker,
            "valid_from": self.now,
            "valid_to": None,
        }
        node.facts.append(record)
        self.fresh.add(record["id"])
        self.report.facts += 1
        return str(record["id"])

    # -- corrections -------------------------------------------------------------------------
    def correction(self, correction: Correction) -> None:
        """Supersede what names `old` with the same thing naming `new` (module docstring of
        `knowledge.facts.extraction`): of the subject when it is a known node, else of every
        node holding records. Nothing is ended unless its replacement is added."""
        old, new = correction.old, correction.new
        if not fold_label(old) or fold_label(old) == fold_label(new):
            self.refuse(old, "a correction needs an old and a different new value")
            return
        if not self.said.mentions(new) and self.names.find(new) is None:
            self.refuse(new, PHANTOM)  # the new value of a fact is checked like an entity
            return
        subject = (
            self._self_key()
            if fold_label(correction.subject) in _SELF
            else self.names.find(correction.subject)
        )
        pattern = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)", re.IGNORECASE)
        old_key = self.names.find(old)
        matched = False
        for key in [subject] if subject else sorted(self.holders):
            found = self.work.get(key) or self.graph.get(key)
            if found is None or not any(
                self._names_old(r, old, old_key, pattern) for r in (*relations(found), *found.facts)
            ):
                continue
            matched = True
            self.mention(key)
            node = self.node(key)
            for record in list(relations(node)):
                if self._names_old(record, old, old_key, pattern) and "target" in record:
                    self._replace_target(node, record, new)
            for record in list(node.facts):
                if self._names_old(record, old, old_key, pattern):
                    text = pattern.sub(lambda _: new, str(record["text"]))
                    supersede(
                        record,
                        self.add_fact(key, text, record["source"], record["layer"]),
                        self.now,
                    )
                    self.report.superseded.append(record["id"])
        if not matched:
            self.refuse(old, "no current relation or fact names it")

    def _names_old(
        self, record: dict[str, Any], old: str, old_key: str | None, pattern: re.Pattern[str]
    ) -> bool:
        if not is_current(record) or record["id"] in self.fresh:
            return False
        if "target" in record:
            return bool(
                record["target"] == old_key or fold_label(str(record["label"])) == fold_label(old)
            )
        return pattern.search(str(record["text"])) is not None

    def _replace_target(self, node: Node, record: dict[str, Any], new: str) -> None:
        before = self.graph.get(record["target"])
        if before is not None and before.kind == "entity":  # the new value is of its kind
            target = self.admit(new, before.subkind, as_layer(before.layer))
        else:
            target = self.admit(new)
        if target is None or target == node.key:
            return  # the old value stays current: never ended without its replacement
        supersede(record, self.add_relation(node.key, record["type"], target), self.now)
        self.report.superseded.append(record["id"])
