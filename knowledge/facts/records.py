"""The fact and relation records a node carries, and how they read.

A fact is a dict in `Node.facts`; a relation is a dict in `Node.data["relations"]` of its
source node. Both have an `id` (`<node key>#<n>`, n from `Node.data["seq"]`), `valid_from`,
and `valid_to` (None while current; a time once superseded, when `superseded_by` names the
record that replaced it). Records are never edited otherwise, so a node's list is its history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from knowledge.core.graph import RELATION_EDGE, Node

SUMMARY_CHARS = 1000  # of an entity's summary, what recall indexes (newest first)
LINE_CHARS = 300  # of one line of the injected block


@dataclass(frozen=True, slots=True)
class FactView:
    id: str
    subject: str  # the node's label
    subject_key: str
    kind: Literal["fact", "relation"]
    text: str  # the fact, or "RELATION target"
    source: str  # user | assistant | world
    layer: str
    valid_from: float
    valid_to: float | None
    superseded_by: str = ""
    relation: str = ""  # relations only
    target_key: str = ""  # relations only

    @property
    def current(self) -> bool:
        return self.valid_to is None


def relations(node: Node) -> list[dict[str, Any]]:
    found = node.data.get("relations")
    return found if isinstance(found, list) else []


def is_current(record: dict[str, Any]) -> bool:
    return record.get("valid_to") is None


def holds_records(node: Node) -> bool:
    return bool(node.facts or relations(node))


def next_id(node: Node) -> str:
    """A new record id on `node` (call on the working copy, which it changes)."""
    seq = int(node.data.get("seq", 0)) + 1
    node.data["seq"] = seq
    return f"{node.key}#{seq}"


def supersede(record: dict[str, Any], by: str, when: float) -> None:
    record["valid_to"] = when
    record["superseded_by"] = by


def edge_kind(relation: str) -> str:
    return RELATION_EDGE + relation


def human(relation: str) -> str:
    """USES_TECHNOLOGY -> "uses technology": what a reader (and recall's words) understand."""
    return relation.replace("_", " ").lower()


def views(node: Node) -> list[FactView]:
    """Every record of `node`, oldest first."""
    out = [
        FactView(
            r["id"],
            node.label,
            node.key,
            "fact",
            str(r["text"]),
            str(r["source"]),
            str(r["layer"]),
            float(r["valid_from"]),
            r.get("valid_to"),
            str(r.get("superseded_by", "")),
        )
        for r in node.facts
    ]
    out += [
        FactView(
            r["id"],
            node.label,
            node.key,
            "relation",
            f"{r['type']} {r['label']}",
            str(r["source"]),
            str(r["layer"]),
            float(r["valid_from"]),
            r.get("valid_to"),
            str(r.get("superseded_by", "")),
            str(r["type"]),
            str(r["target"]),
        )
        for r in relations(node)
    ]
    return sorted(out, key=lambda v: (v.valid_from, v.id))


def described(node: Node) -> str:
    """The node's current relations then facts, newest first: an entity's summary."""
    parts: list[str] = []
    grouped: dict[str, list[str]] = {}
    for record in reversed(relations(node)):
        if is_current(record):
            grouped.setdefault(str(record["type"]), []).append(str(record["label"]))
    parts += [f"{human(kind)} {', '.join(targets)}" for kind, targets in grouped.items()]
    parts += [str(r["text"]) for r in reversed(node.facts) if is_current(r)]
    return "; ".join(parts)[:SUMMARY_CHARS]


def line(node: Node, used_by: dict[str, list[str]]) -> str:
    """One line of the injected block: "Checkear [Project]: uses technology React; ..."
    `used_by`: relation -> labels of the nodes pointing here with it."""
    kind = node.subkind if node.kind == "entity" else node.kind
    head = f"{node.label} [{kind}]" if kind else node.label
    body = described(node)
    back = "; ".join(
        f"{', '.join(labels)} {human(relation)} it" for relation, labels in used_by.items()
    )
    text = "; ".join(part for part in (body, back) if part)
    return (f"{head}: {text}" if text else head)[:LINE_CHARS]
