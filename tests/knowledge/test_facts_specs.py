"""Graph-quality specs: multi-turn conversations (`facts_specs/*.json`) run through
`FactsLayer`, then checked for what must and must not be in the graph.

A spec: {"name", "files" (a small tree to index, may be empty), "turns": [{"speaker", "text",
"extraction" (what a model would return)}], "checks": {kind: [item, ...]}}. Every declared
check runs and is counted; a kind this runner does not know fails the spec.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from knowledge.core.graph import Node
from knowledge.core.keys import fold_label
from knowledge.facts.extraction import parse_extraction
from knowledge.facts.layer import FactsLayer
from knowledge.facts.records import FactView
from knowledge.index.project import Project
from tests.conftest import TickingClock, write_tree

SPECS = sorted((Path(__file__).parent / "facts_specs").glob("*.json"))
Check = Callable[[FactsLayer, dict[str, Any]], str | None]  # None when it passed


def _entity(layer: FactsLayer, label: str) -> Node | None:
    return next(
        (
            n
            for n in layer.project.graph.nodes("entity")
            if fold_label(n.label) == fold_label(label)
        ),
        None,
    )


def _type(layer: FactsLayer, name: str) -> str:
    known = layer.ontology.type_of(name)
    return known.name if known is not None else name


def _relations(layer: FactsLayer, item: dict[str, Any]) -> list[FactView]:
    wanted = layer.ontology.relation_of(item["type"]) or item["type"]
    graph = layer.project.graph
    return [
        v
        for v in layer.current()
        if v.kind == "relation"
        and fold_label(v.subject) == fold_label(item["source"])
        and v.relation == wanted
        and (target := graph.get(v.target_key)) is not None
        and fold_label(target.label) == fold_label(item["target"])
    ]


def required_entity(layer: FactsLayer, item: dict[str, Any]) -> str | None:
    node = _entity(layer, item["label"])
    if node is None:
        return "no such entity"
    expected = {
        "type": _type(layer, item["type"]),
        "layer": item.get("layer", node.layer),
        "status": item.get("status", node.status),
    }
    found = {"type": node.subkind, "layer": node.layer, "status": node.status}
    return None if found == expected else f"found {found}, expected {expected}"


def forbidden_entity(layer: FactsLayer, item: dict[str, Any]) -> str | None:
    bad = [
        n.label
        for n in layer.project.graph.nodes("entity")
        if item["label_contains"].casefold() in n.label.casefold()
    ]
    return f"found {bad}" if bad else None


def entity_count(layer: FactsLayer, item: dict[str, Any]) -> str | None:
    labels = sorted(n.label for n in layer.project.graph.nodes("entity"))
    return None if len(labels) == item["equals"] else f"{len(labels)} entities: {labels}"


def required_relation(layer: FactsLayer, item: dict[str, Any]) -> str | None:
    return None if _relations(layer, item) else "no such current relation"


def forbidden_relation(layer: FactsLayer, item: dict[str, Any]) -> str | None:
    return "it is current" if _relations(layer, item) else None


def _texts(layer: FactsLayer, subject: str, current: bool) -> list[str]:
    return [v.text.casefold() for v in layer.history(subject) if v.current == current]


def required_history(layer: FactsLayer, item: dict[str, Any]) -> str | None:
    past = _texts(layer, item["subject"], current=False)
    return None if item["text"].casefold() in past else f"history is {past}"


def required_fact(layer: FactsLayer, item: dict[str, Any]) -> str | None:
    now = _texts(layer, item["subject"], current=True)
    return None if item["text"].casefold() in now else f"current is {now}"


def block(layer: FactsLayer, item: dict[str, Any]) -> str | None:
    text = "\n".join(layer.block_lines(item["query"])).casefold()
    missing = [s for s in item.get("contains", []) if s.casefold() not in text]
    present = [s for s in item.get("excludes", []) if s.casefold() in text]
    return f"missing {missing}, present {present} in:\n{text}" if missing or present else None


CHECKS: dict[str, Check] = {
    "required_entities": required_entity,
    "forbidden_entities": forbidden_entity,
    "entity_count": entity_count,
    "required_relations": required_relation,
    "forbidden_relations": forbidden_relation,
    "required_history": required_history,
    "required_facts": required_fact,
    "block": block,
}


def run_spec(spec: dict[str, Any], root: Path) -> tuple[int, list[str]]:
    """(checks run, failures) after playing the spec's turns into a fresh project."""
    project = Project(write_tree(root, spec.get("files", {})))
    try:
        if spec.get("files"):
            project.index()
        layer = FactsLayer(project, TickingClock())
        for turn in spec["turns"]:
            if turn["speaker"] == "user":  # a turn starts with the user's message
                layer.cycle()
            extraction = parse_extraction(json.dumps(turn["extraction"]))
            report = layer.apply(extraction, turn["text"], turn["speaker"])
            assert report.error == ""
        ran, failures = 0, []
        for kind, items in spec["checks"].items():
            check = CHECKS.get(kind)
            if check is None:
                failures.append(f"unknown check kind {kind!r}")
                continue
            for item in items:
                ran += 1
                problem = check(layer, item)
                if problem is not None:
                    failures.append(f"{kind} {item}: {problem}")
        return ran, failures
    finally:
        project.close()


def test_there_are_three_specs() -> None:
    assert [p.name for p in SPECS] == [
        "c1_portfolio.json",
        "c2_progressive_build.json",
        "c3_personal_es.json",
    ]


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_spec(path: Path, tmp_path: Path) -> None:
    spec = json.loads(path.read_text(encoding="utf-8"))
    declared = sum(len(items) for items in spec["checks"].values())
    ran, failures = run_spec(spec, tmp_path / "repo")
    assert failures == []
    assert ran == declared and declared >= 15


def test_an_unknown_check_kind_fails_the_spec(tmp_path: Path) -> None:
    spec = {"turns": [], "checks": {"required_entitys": [{"label": "X", "type": "Person"}]}}
    ran, failures = run_spec(spec, tmp_path / "repo")
    assert ran == 0 and failures == ["unknown check kind 'required_entitys'"]


def test_a_check_that_does_not_hold_fails(tmp_path: Path) -> None:
    spec = json.loads(SPECS[0].read_text(encoding="utf-8"))
    spec["checks"] = {
        "required_entities": [{"label": "Butaco", "type": "Person"}],
        "forbidden_entities": [{"label_contains": "Walletfy"}],
        "required_relations": [{"source": "Butaco", "type": "USES_TECHNOLOGY", "target": "React"}],
    }
    ran, failures = run_spec(spec, tmp_path / "repo")
    assert ran == 3 and len(failures) == 3
