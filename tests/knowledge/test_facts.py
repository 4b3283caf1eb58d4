"""The facts layer: one graph, no phantoms, layers, lifecycle, incomplete nodes, ontology,
corrections that keep history, and a parser that refuses what is not an extraction."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from knowledge.core import keys
from knowledge.core.store import StoreError
from knowledge.facts.extraction import (
    EXTRACTION_SCHEMA,
    Extraction,
    ExtractionError,
    extraction_prompt,
    parse_extraction,
    split_by_speaker,
)
from knowledge.facts.layer import FactsLayer
from knowledge.facts.ontology import Layer, Ontology, register_relation, register_type
from knowledge.index.project import Project
from knowledge.recall.recaller import Recaller
from tests.conftest import TickingClock, configure, indexed_project, present

FILES: dict[str, str | bytes] = {
    "src/cart.py": "class Cart:\n    def total(self):\n        return 0\n",
    "src/login.py": "def redirect_after_login(user):\n    return '/home'\n",
    "db/schema.sql": "CREATE TABLE orders (\n  id INTEGER PRIMARY KEY,\n  total INTEGER\n);\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    proj = indexed_project(tmp_path / "repo", FILES)
    yield proj
    proj.close()


P: Layer = "PERSONAL"  # the two layers, short for the tables below
U: Layer = "UNIVERSAL"


def layer_of(project: Project) -> FactsLayer:
    return FactsLayer(project, TickingClock())


Triples = Sequence[tuple[str, str, str]]


def ex(
    entities: Triples = (), relations: Triples = (), facts: Triples = (), corrections: Triples = ()
) -> Extraction:
    """An extraction written the way a model answers, through the parser."""
    raw = {
        "entities": [{"label": a, "type": b, "layer": c} for a, b, c in entities],
        "relations": [{"source": a, "target": b, "type": c} for a, b, c in relations],
        "facts": [{"subject": a, "text": b, "source": c} for a, b, c in facts],
        "corrections": [{"subject": a, "old": b, "new": c} for a, b, c in corrections],
    }
    return parse_extraction(json.dumps(raw))


def entities(project: Project) -> dict[str, Any]:
    return {n.label: n for n in project.graph.nodes("entity")}


# -- 1. one graph ------------------------------------------------------------------------------
def test_a_label_naming_an_indexed_node_gets_the_facts_not_a_duplicate(project: Project) -> None:
    layer = layer_of(project)
    text = "CART.PY is old; src/login.py redirects; Cart.total sums; the ORDERS table grows."
    report = layer.apply(
        ex(
            entities=[
                ("CART.PY", "Document", P),
                ("src/login.py", "Document", P),
                ("Cart.total", "Technology", P),
                ("orders", "Table", P),
            ],
            facts=[
                ("CART.PY", "cart.py is old", "user"),
                ("src/login.py", "login.py redirects after login", "user"),
                ("Cart.total", "Cart.total sums the lines", "user"),
                ("orders", "the orders table grows", "user"),
            ],
        ),
        text,
        "user",
    )
    assert report.added == [] and report.refused == []
    assert not list(project.graph.nodes("entity"))
    graph = project.graph
    by_key = {
        keys.file_key("src/cart.py"): "cart.py is old",
        keys.file_key("src/login.py"): "login.py redirects after login",
        keys.symbol_key("src/cart.py", "Cart.total"): "Cart.total sums the lines",
        keys.table_key("orders"): "the orders table grows",
    }
    for key, fact in by_key.items():
        node = graph.get(key)
        assert node is not None and [f["text"] for f in node.facts] == [fact], key
    assert sorted(report.merged) == sorted(by_key)
    # the file keeps its owner and its index summary
    assert graph.owner_of(keys.file_key("src/cart.py")) == "src/cart.py"


def test_an_earlier_entity_is_found_again_whatever_its_spelling(project: Project) -> None:
    layer = layer_of(project)
    layer.apply(
        ex(entities=[("Next.js", "Technology", U), ("Tecnología Ñandú", "Place", U)]),
        "We use Next.js near Tecnología Ñandú",
        "user",
    )
    report = layer.apply(
        ex(
            entities=[("nextjs", "Technology", U), ("  tecnologia   ñandu ", "Place", U)],
            facts=[("NEXTJS", "NextJS renders the pages", "user")],
        ),
        "nextjs and tecnologia nandu again",
        "user",
    )
    assert report.added == []
    assert sorted(report.merged) == ["ent:nextjs", "ent:tecnologianandu"]
    found = entities(project)
    assert sorted(found) == ["Next.js", "Tecnología Ñandú"]  # the first spelling stays
    assert [f["text"] for f in found["Next.js"].facts] == ["NextJS renders the pages"]


def test_an_alias_names_its_target(project: Project) -> None:
    layer = layer_of(project)
    report = layer.apply(
        ex(
            entities=[("PostgreSQL", "Technology", U), ("Postgres", "Technology", U)],
            relations=[("Postgres", "PostgreSQL", "ALIAS_OF")],
        ),
        "PostgreSQL, Postgres for short",
        "user",
    )
    assert report.added == ["ent:postgresql"]  # the alias makes no node of its own
    later = layer.apply(
        ex(facts=[("postgres", "Postgres holds the orders", "user")]),
        "postgres holds the orders",
        "user",
    )
    assert later.merged == ["ent:postgresql"] and later.added == []
    node = project.graph.get("ent:postgresql")
    assert node is not None and node.data["aliases"] == ["Postgres"]
    assert [f["text"] for f in node.facts] == ["Postgres holds the orders"]


def test_entities_persist_without_bumping_the_store_generation(project: Project) -> None:
    before = project.store.generation()
    layer_of(project).apply(
        ex(
            entities=[("Butaco", "Proyecto", P), ("Angular", "Tecnologia", U)],
            relations=[("Butaco", "Angular", "USA_TECNOLOGIA")],
            facts=[("Butaco", "Butaco is an ERP", "user")],
        ),
        "Butaco is an ERP built with Angular",
        "user",
    )
    assert project.store.generation() == before  # an entity is conversation, like a memory
    root = project.root
    project.close()
    again = Project(root)
    try:
        node = again.graph.get("ent:butaco")
        assert node is not None and node.kind == "entity" and node.subkind == "Project"
        assert [f["text"] for f in node.facts] == ["Butaco is an ERP"]
        assert [(e.dst, e.kind) for e in again.graph.out_edges("ent:butaco")] == [
            ("ent:angular", "rel:USES_TECHNOLOGY")
        ]
    finally:
        again.close()


# -- 2. no phantoms ----------------------------------------------------------------------------
def test_what_the_message_does_not_say_is_refused_with_a_reason(project: Project) -> None:
    report = layer_of(project).apply(
        ex(
            entities=[
                ("Sherlock Holmes", "Person", U),
                ("Ron Weasley", "Person", U),
                ("Ron", "Person", U),
            ],
            relations=[("Sherlock Holmes", "MongoDB", "USES_TECHNOLOGY")],
            facts=[
                ("Foundation Sprint", "a sprint", "user"),
                ("Sherlock Holmes", "a detective", "world"),
            ],
        ),
        "Sherlock Holmes lives in the environment of Baker Street.",
        "user",
    )
    refused = {(r.label, r.why) for r in report.refused}
    phantom = "not said in the message and not in the graph"
    assert ("Ron Weasley", phantom) in refused
    assert ("Ron", phantom) in refused  # not found inside "environment"
    assert ("MongoDB", phantom) in refused
    relation = "Sherlock Holmes USES_TECHNOLOGY MongoDB"
    assert (relation, "an end of the relation was refused") in refused
    assert ("Foundation Sprint", phantom) in refused
    assert sorted(entities(project)) == ["Sherlock Holmes"]
    assert report.facts == 1 and report.relations == 0


# -- 3. layers -------------------------------------------------------------------------------
def test_personal_and_universal_layers_and_cross_layer_edges(project: Project) -> None:
    report = layer_of(project).apply(
        ex(
            entities=[("Sandy", "Persona", P), ("Cipolletti", "Lugar", U)],
            relations=[("Sandy", "Cipolletti", "VIVE_EN")],
            facts=[
                ("Sandy", "Sandy owns Altovallestudio", "user"),
                ("Cipolletti", "Cipolletti is a city in Rio Negro, Argentina", "world"),
            ],
        ),
        "Sandy lives in Cipolletti",
        "user",
    )
    assert report.refused == []
    found = entities(project)
    sandy, cipo = found["Sandy"], found["Cipolletti"]
    assert (sandy.layer, sandy.source, sandy.subkind) == ("PERSONAL", "user_assertion", "Person")
    assert (cipo.layer, cipo.source, cipo.subkind) == ("UNIVERSAL", "world", "Place")
    assert sandy.data["confidence"] == 1.0 and sandy.status == "complete"
    assert [(f["layer"], f["source"]) for f in sandy.facts] == [("PERSONAL", "user")]
    assert [(f["layer"], f["source"]) for f in cipo.facts] == [("UNIVERSAL", "world")]
    assert [e.kind for e in project.graph.out_edges(sandy.key)] == ["rel:LIVES_IN"]


# -- 4. lifecycle ------------------------------------------------------------------------------
def test_hot_warm_cold_and_a_mention_makes_hot_again(project: Project) -> None:
    layer = layer_of(project)
    layer.apply(
        ex(
            entities=[("Walletfy", "Project", P)],
            facts=[("Walletfy", "Walletfy tracks personal finances", "user")],
        ),
        "Walletfy tracks personal finances",
        "user",
    )

    def heat() -> str:
        node = project.graph.get("ent:walletfy")
        assert node is not None
        return str(node.data["heat"])

    line = "Walletfy [Project]: Walletfy tracks personal finances"
    assert heat() == "hot" and layer.block_lines("anything") == [line]
    layer.cycle()
    assert heat() == "warm"
    assert layer.block_lines("anything else") == []  # warm: only when the query names it
    assert layer.block_lines("how is walletfy doing?") == [line]
    assert heat() == "hot"  # the query's mention
    layer.cycle()
    layer.cycle()
    assert heat() == "cold" and layer.block_lines("nothing") == []
    layer.apply(ex(entities=[("Walletfy", "Project", P)]), "Walletfy again", "user")
    assert heat() == "hot"
    assert layer.known_labels() == ["Walletfy"]  # what the next prompt offers the model


def test_first_person_subjects_are_the_user(project: Project) -> None:
    report = layer_of(project).apply(
        ex(
            facts=[("I", "The user prefers tabs", "user")],
            relations=[("me", "Cipolletti", "VIVE_EN")],
            entities=[("Cipolletti", "Lugar", U)],
        ),
        "I prefer tabs and live in Cipolletti",
        "user",
    )
    user = project.graph.get("ent:user")
    assert report.refused == [] and user is not None and user.subkind == "Person"
    assert [f["text"] for f in user.facts] == ["The user prefers tabs"]


def test_a_person_is_never_a_table_or_a_class_of_the_same_name(tmp_path: Path) -> None:
    """Batman: "I like Batman" in a project with a `User` table and a `Batman` class."""
    project = indexed_project(
        tmp_path / "repo",
        {
            "prisma/schema.prisma": "model User {\n  id Int @id\n}\n",
            "src/heroes.py": "class Batman:\n    pass\n",
        },
    )
    report = FactsLayer(project, TickingClock()).apply(
        ex(
            entities=[("User", "Person", P), ("Batman", "Character", U)],
            relations=[("User", "Batman", "LIKES")],
            facts=[("I", "likes Batman", "user")],
        ),
        "I like Batman",
        "user",
    )
    graph = project.graph
    assert report.refused == []
    assert present(graph.get(keys.table_key("user"))).facts == []  # the table is not the user
    assert present(graph.get(keys.symbol_key("src/heroes.py", "Batman"))).facts == []
    user, batman = graph.get("ent:user"), graph.get("ent:batman")
    assert user is not None and user.subkind == "Person"
    assert [f["text"] for f in user.facts] == ["likes Batman"]
    assert batman is not None and batman.kind == "entity" and batman.subkind == "Character"
    assert [r["target"] for r in user.data["relations"]] == ["ent:batman"]
    project.close()


# -- 5. incomplete nodes -----------------------------------------------------------------------
def test_an_entity_of_unknown_type_is_incomplete_until_a_type_comes(project: Project) -> None:
    layer = layer_of(project)
    for unknown in ("", "unknown", "Desconocido"):
        layer.apply(
            ex(entities=[(f"ProjectX{len(unknown)}", unknown, P)]),
            f"ProjectX{len(unknown)} exists",
            "user",
        )
    node = project.graph.get("ent:projectx0")
    assert node is not None and node.status == "incomplete" and node.subkind == ""
    assert node.data["pending_fields"] == ["type"]
    assert all(n.status == "incomplete" for n in project.graph.nodes("entity"))
    report = layer.apply(
        ex(entities=[("ProjectX0", "Proyecto", P)]), "ProjectX0 is a project", "user"
    )
    node = project.graph.get("ent:projectx0")
    assert report.completed == ["ent:projectx0"]
    assert node is not None and (node.status, node.subkind) == ("complete", "Project")
    assert node.data["pending_fields"] == []
    again = layer.apply(ex(entities=[("ProjectX0", "Person", P)]), "ProjectX0", "user")
    assert again.completed == [] and project.graph.get("ent:projectx0").subkind == "Project"  # type: ignore[union-attr]


# -- 6. corrections ----------------------------------------------------------------------------
def test_a_correction_chain_leaves_one_current_value_and_the_history(project: Project) -> None:
    layer = layer_of(project)
    layer.apply(
        ex(
            entities=[("TaskFlow", "Project", P), ("SQLite", "Technology", U)],
            relations=[("TaskFlow", "SQLite", "USES_TECHNOLOGY")],
            facts=[("TaskFlow", "TaskFlow keeps its data in SQLite", "user")],
        ),
        "TaskFlow keeps its data in SQLite",
        "user",
    )
    first = layer.apply(
        ex(corrections=[("project", "SQLite", "PostgreSQL")]),
        "We moved from SQLite to PostgreSQL",
        "user",
    )
    second = layer.apply(
        ex(corrections=[("TaskFlow", "postgresql", "MySQL")]),
        "Actually TaskFlow went from PostgreSQL to MySQL",
        "user",
    )
    assert len(first.superseded) == 2 and len(second.superseded) == 2
    relations = [v for v in layer.history("TaskFlow") if v.kind == "relation"]
    assert [(v.text, v.current) for v in relations] == [
        ("USES_TECHNOLOGY SQLite", False),
        ("USES_TECHNOLOGY PostgreSQL", False),
        ("USES_TECHNOLOGY MySQL", True),
    ]
    assert relations[0].superseded_by == relations[1].id
    facts = [(v.text, v.current) for v in layer.history("taskflow") if v.kind == "fact"]
    assert facts == [
        ("TaskFlow keeps its data in SQLite", False),
        ("TaskFlow keeps its data in PostgreSQL", False),
        ("TaskFlow keeps its data in MySQL", True),
    ]
    assert [e.dst for e in project.graph.out_edges("ent:taskflow")] == ["ent:mysql"]
    mysql = project.graph.get("ent:mysql")
    assert mysql is not None and (mysql.subkind, mysql.layer) == ("Technology", U)
    current = {v.text for v in layer.current() if v.subject == "TaskFlow"}
    assert current == {"USES_TECHNOLOGY MySQL", "TaskFlow keeps its data in MySQL"}
    lines = layer.block_lines("taskflow")
    assert lines[0].startswith("TaskFlow [Project]") and "SQLite" not in " ".join(lines)


def test_a_correction_never_ends_a_value_without_its_replacement(project: Project) -> None:
    layer = layer_of(project)
    layer.apply(
        ex(
            entities=[("Checkear", "Project", P), ("React", "Technology", U)],
            relations=[("Checkear", "React", "USES_TECHNOLOGY")],
        ),
        "Checkear uses React",
        "user",
    )
    # "Vue" is not in the message: the new value is a phantom, so React stays current
    report = layer.apply(
        ex(corrections=[("Checkear", "React", "Vue")]), "Checkear no longer uses React", "user"
    )
    assert report.superseded == [] and ("Vue", "not said in the message and not in the graph") in {
        (r.label, r.why) for r in report.refused
    }
    nothing = layer.apply(
        ex(corrections=[("Checkear", "Svelte", "Solid")]), "Svelte to Solid", "user"
    )
    assert ("Svelte", "no current relation or fact names it") in {
        (r.label, r.why) for r in nothing.refused
    }
    assert [v.text for v in layer.current()] == ["USES_TECHNOLOGY React"]


# -- 7. recall ---------------------------------------------------------------------------------
def test_recall_finds_an_entity_by_its_current_facts(project: Project) -> None:
    recaller = Recaller(project.graph, project.root)
    layer = layer_of(project)
    layer.apply(
        ex(
            entities=[("Ledgerly", "Project", P)],
            facts=[("Ledgerly", "Ledgerly uses PostgreSQL as its database", "user")],
        ),
        "Ledgerly uses PostgreSQL as its database",
        "user",
    )
    hits = recaller.recall("what database do we use").hits
    assert hits and hits[0].key == "ent:ledgerly" and hits[0].kind == "entity"


def test_an_entity_brings_its_neighbourhood_warm_then_cold(project: Project) -> None:
    """Acervo's BFS over what the conversation related: Supabase and the project that says it
    uses it (HOT: the request's words) -> the project's other framework (WARM) -> what that is
    built on (COLD), and into the block within its memory lines."""
    from tests.knowledge.test_context import build_block

    layer_of(project).apply(
        ex(
            entities=[
                ("Ledgerly", "Project", P),
                ("Supabase", "Technology", U),
                ("Next.js", "Technology", U),
                ("React", "Technology", U),
            ],
            relations=[
                ("Ledgerly", "Supabase", "USES_TECHNOLOGY"),
                ("Ledgerly", "Next.js", "USES_TECHNOLOGY"),
                ("Next.js", "React", "BUILT_ON"),
            ],
        ),
        "Ledgerly uses Supabase and Next.js; Next.js is built on React",
        "user",
    )
    recall = Recaller(project.graph, project.root).recall("how do we set up supabase auth?")
    layers = {h.key: h.layer for h in recall.hits if h.kind == "entity"}
    assert layers == {
        "ent:supabase": "HOT",
        "ent:ledgerly": "HOT",
        "ent:nextjs": "WARM",
        "ent:react": "COLD",
    }
    scores = {h.key: h.score for h in recall.hits}
    assert scores["ent:ledgerly"] > scores["ent:nextjs"] > scores["ent:react"] > 0
    block = build_block(recall, project.graph, threshold=0.0)
    assert "Next.js" in block and "React" in block


# -- 8. ontology -------------------------------------------------------------------------------
def test_ontology_aliases_auto_registration_and_restart(project: Project) -> None:
    ontology = Ontology.of(project)
    assert ontology.type_of("tecnología").name == "Technology"  # type: ignore[union-attr]
    assert ontology.type_of("Organización").name == "Organization"  # type: ignore[union-attr]
    for spanish, english in (
        ("TRABAJA_EN", "WORKS_AT"),
        ("vive en", "LIVES_IN"),
        ("DUEÑO_DE", "OWNS"),
        ("dueno_de", "OWNS"),
        ("USA_TECNOLOGIA", "USES_TECHNOLOGY"),
        ("TIENE_MODULO", "HAS_MODULE"),
        ("PERTENECE_A", "BELONGS_TO"),
        ("GUSTA_DE", "LIKES"),
        ("FAMILIAR_DE", "FAMILY_OF"),
        ("RELACIONADO_CON", "RELATED_TO"),
    ):
        assert ontology.relation_of(spanish) == english
    layer = layer_of(project)
    layer.apply(
        ex(
            entities=[("Batman", "Superhero", U), ("Robin", "Superhero", U)],
            relations=[("Robin", "Batman", "mentored by")],
        ),
        "Robin was mentored by Batman",
        "user",
    )
    register_type(project, "Recipe", ("ingredients", "time"), P)
    assert register_relation(project, "coauthored with") == "COAUTHORED_WITH"
    assert entities(project)["Batman"].subkind == "Superhero"
    root = project.root
    project.close()
    again = Ontology.of(Project(root))
    assert again.type_of("superhero") is not None
    assert again.relation_of("MENTORED_BY") == "MENTORED_BY"
    recipe = again.type_of("recipe")
    assert recipe is not None and recipe.attributes == ("ingredients", "time")
    assert again.relation_of("Coauthored_With") == "COAUTHORED_WITH"
    assert layer.ontology.relation_of("COAUTHORED_WITH") is None  # until it looks again
    layer.ontology.refresh()
    assert layer.ontology.relation_of("COAUTHORED_WITH") == "COAUTHORED_WITH"
    on_disk = json.loads((project.paths.home / "ontology.json").read_text())
    assert {t["name"] for t in on_disk["types"]} == {"Superhero", "Recipe"}
    assert register_type(project, "Persona").builtin  # a built-in is not redefined


# -- 9. failing open, kill switch, forget -------------------------------------------------------
def test_a_failed_save_keeps_the_facts_in_the_graph(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: object, **__: object) -> int:
        raise StoreError("disk full")

    monkeypatch.setattr(project.store, "save", refuse)
    layer = layer_of(project)
    report = layer.apply(ex(entities=[("Butaco", "Project", P)]), "Butaco", "user")
    assert report.error == "disk full" and layer.last_error == "disk full"
    assert project.graph.get("ent:butaco") is not None and project.unsaved


def test_the_kill_switch_turns_the_layer_off(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, no_facts=True)
    layer = layer_of(project)
    report = layer.apply(ex(entities=[("Butaco", "Project", P)]), "Butaco", "user")
    assert not report.enabled and report.counts()["added"] == 0
    assert not list(project.graph.nodes("entity")) and layer.block_lines("Butaco") == []


def test_forget_a_record_or_a_subject(project: Project) -> None:
    layer = layer_of(project)
    layer.apply(
        ex(
            entities=[("Butaco", "Project", P), ("Angular", "Technology", U)],
            relations=[("Butaco", "Angular", "USES_TECHNOLOGY")],
            facts=[("Butaco", "Butaco is an ERP", "user"), ("cart.py", "cart is old", "user")],
        ),
        "Butaco is an ERP in Angular; cart.py is old",
        "user",
    )
    fact = next(v for v in layer.current() if v.text == "Butaco is an ERP")
    assert layer.forget(fact.id) == 1
    assert layer.forget("angular") == 1  # the relation pointing at it goes with it
    assert project.graph.get("ent:angular") is None
    assert project.graph.out_edges("ent:butaco") == []
    assert layer.forget("src/cart.py") == 1  # a file keeps itself, loses its records
    cart = project.graph.get(keys.file_key("src/cart.py"))
    assert cart is not None and cart.facts == []
    assert layer.current() == []


# -- 10. the model's side: schema, prompt, parser ----------------------------------------------
def test_the_schema_is_strict_mode_compatible() -> None:
    def objects(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if schema.get("type") == "object":
            yield schema
            for sub in schema["properties"].values():
                yield from objects(sub)
        if schema.get("type") == "array":
            yield from objects(schema["items"])

    found = list(objects(EXTRACTION_SCHEMA))
    assert len(found) == 5
    for schema in found:
        assert schema["additionalProperties"] is False
        assert sorted(schema["required"]) == sorted(schema["properties"])


def test_the_prompt_holds_the_exchange_the_known_labels_and_the_literal_rule() -> None:
    messages = extraction_prompt(
        "Alice joined the team.", "Alice is the lead developer.", ["Alice", "Butaco"]
    )
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "literally" in messages[0]["content"]
    asked = messages[1]["content"]
    assert "Alice, Butaco" in asked
    assert asked.index("from the user:\n<<<\nAlice joined the team.") < asked.index(
        "The assistant's reply:\n<<<\nAlice is the lead developer."
    )
    assert "reply" not in extraction_prompt("we use Redis", " ", [])[1]["content"]


def test_an_exchange_is_split_by_who_said_each_part() -> None:
    extraction = parse_extraction(
        json.dumps(
            {
                "entities": [
                    {"label": "Walletfy", "type": "Project", "layer": "PERSONAL"},
                    {"label": "Supabase", "type": "Technology", "layer": "UNIVERSAL"},
                ],
                "relations": [
                    {"source": "Walletfy", "target": "Supabase", "type": "USES_TECHNOLOGY"},
                    {"source": "Walletfy", "target": "Alice", "type": "HAS_MEMBER"},
                ],
                "facts": [
                    {"subject": "user", "text": "the user is Ana", "source": "user"},
                    {"subject": "Walletfy", "text": "Walletfy is small", "source": "assistant"},
                    {"subject": "Supabase", "text": "Supabase is Postgres", "source": "world"},
                ],
                "corrections": [{"subject": "project", "old": "SQLite", "new": "Supabase"}],
            }
        )
    )
    user, assistant = split_by_speaker(extraction, "I'm Ana; Walletfy runs on Supabase now")
    assert [e.label for e in user.entities] == ["Walletfy", "Supabase"]
    assert [r.target for r in user.relations] == ["Supabase"]
    assert [r.target for r in assistant.relations] == ["Alice"]
    assert [f.text for f in user.facts] == ["the user is Ana", "Supabase is Postgres"]
    assert [f.text for f in assistant.facts] == ["Walletfy is small"]
    assert len(user.corrections) == 1 and not assistant.corrections and not assistant.entities


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "not json",
        "{",
        "[]",
        '"entities"',
        "42",
        '{"intent": "chat"}',
        '{"entities": {"label": "A"}}',
        '{"facts": "none"}',
        '{"entities": [1, "x", {"label": 3}]}',  # items, none usable
    ],
)
def test_parse_refuses_what_is_not_an_extraction(raw: str) -> None:
    with pytest.raises(ExtractionError):
        parse_extraction(raw)


def test_parse_tolerates_fences_whitespace_and_drops_one_bad_item() -> None:
    raw = """
    ```json
    {"entities": [{"label": " Butaco ", "type": "Proyecto", "layer": "personal"},
                  {"label": "", "type": "x", "layer": "PERSONAL"},
                  {"label": "Rio Negro", "type": "Lugar", "layer": "galactic"}],
     "relations": [], "facts": [{"subject": "Butaco", "text": "an ERP", "source": "moon"}],
     "corrections": [{"subject": "we", "old": "SQLite", "new": "PostgreSQL"}],
     "intent": "specific"}
    ```
    """
    parsed = parse_extraction(raw)
    assert [(e.label, e.type, e.layer) for e in parsed.entities] == [("Butaco", "Proyecto", P)]
    assert parsed.facts == () and len(parsed.dropped) == 3
    assert parsed.corrections[0].new == "PostgreSQL"
    assert parse_extraction('{"entities": []}') == Extraction()
    no_layer = parse_extraction('{"entities": [{"label": "Angular", "type": "Tecnologia"}]}')
    assert no_layer.entities[0].layer is None  # the type's default layer applies


def test_an_entity_without_a_layer_takes_its_types_default(project: Project) -> None:
    parsed = parse_extraction(
        '{"entities": [{"label": "Angular", "type": "Tecnologia"},'
        ' {"label": "Sandy", "type": "Persona"}]}'
    )
    layer_of(project).apply(parsed, "Sandy uses Angular", "assistant")
    found = entities(project)
    assert found["Angular"].layer == "UNIVERSAL" and found["Sandy"].layer == "PERSONAL"
    assert found["Sandy"].data["confidence"] < 1.0  # the assistant said it


def test_what_was_said_of_a_file_outlives_its_re_index_and_is_recalled(project: Project) -> None:
    layer = layer_of(project)
    said = "cart.py belongs to the payments team; it uses Stripe"
    layer.apply(
        ex(
            entities=[("cart.py", "Document", P), ("Stripe", "Technology", U)],
            relations=[("cart.py", "Stripe", "USES_TECHNOLOGY")],
            facts=[("cart.py", "cart.py belongs to the payments team", "user")],
        ),
        said,
        "user",
    )
    cart = keys.file_key("src/cart.py")
    assert [f["text"] for f in present(project.graph.get(cart)).facts] == [
        "cart.py belongs to the payments team"
    ]
    (project.root / "src/cart.py").write_text(
        "class Cart:\n    def total(self):\n        return 1\n"
    )
    project.update(["src/cart.py"])  # the file's nodes are rebuilt from the code
    node = present(project.graph.get(cart))
    assert [f["text"] for f in node.facts] == ["cart.py belongs to the payments team"]
    assert any(e.kind == "rel:USES_TECHNOLOGY" for e in project.graph.out_edges(cart))
    hits = Recaller(project.graph, project.root).recall("which file do the payments team own")
    assert hits.files[0] == "src/cart.py"


def test_a_request_about_the_users_world_prefers_what_they_said(project: Project) -> None:
    layer = layer_of(project)
    layer.apply(
        ex(
            entities=[("SQLite", "Technology", U)],
            facts=[("SQLite", "SQLite is a database engine you embed", "world")],
        ),
        "SQLite is a database engine you embed",
        "assistant",
    )
    layer.apply(
        ex(
            entities=[("Ledger", "Project", P)],
            facts=[("Ledger", "Ledger keeps its database in PostgreSQL", "user")],
        ),
        "Ledger keeps its database in PostgreSQL",
        "user",
    )
    recaller = Recaller(project.graph, project.root)

    def entities(query: str) -> list[str]:
        return [h.name for h in recaller.recall(query).hits if h.kind == "entity"]

    assert entities("which database do we use?")[0] == "Ledger"  # ours first
    assert entities("what is a database engine?")[0] == "SQLite"  # the world's
