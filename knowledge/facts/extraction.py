"""What a model extracts from one exchange (a user's request and the assistant's answer, in
one call): the JSON schema, the prompt, the parser, and which part of it each of the two said.

Corrections: `{"subject", "old", "new"}` says that `new` replaces `old` for `subject`. `old`
and `new` are values, not whole sentences: "we moved from SQLite to PostgreSQL" is subject
"project" (or "we"), old "SQLite", new "PostgreSQL". Applying one supersedes every current
relation of the subject whose target is `old` (the same relation to `new` replaces it) and
every current fact of the subject whose text names `old` (the same text with `new` in its
place replaces it); see `knowledge.facts.layer`.

Parsing is strict about the whole and lenient about the parts: input that is not JSON, not an
object, has a list field that is not a list, or has items none of which is usable raises
`ExtractionError`; one malformed item among good ones (not an object, a field missing or not a
string, an unknown layer or source) is dropped and named in `Extraction.dropped`. A model that
drifts on one item should not cost the turn its other facts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from knowledge.core.errors import TheusError
from knowledge.facts.match import Said
from knowledge.facts.ontology import LAYERS, Layer, as_layer

Speaker = Literal["user", "assistant"]
FactSource = Literal["user", "assistant", "world"]
FACT_SOURCES: tuple[FactSource, ...] = ("user", "assistant", "world")
_SOURCE_OF: dict[str, FactSource] = {s: s for s in FACT_SOURCES}
MAX_LABEL = 120  # longer "labels" are sentences, not names
MAX_TEXT = 500  # characters of a fact kept
MAX_KNOWN = 200  # known labels offered to the model, to bound the prompt
_Item = TypeVar("_Item")
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(?P<body>.*?)\n?```$", re.DOTALL)


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    """A strict-mode object: every property required, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _list_of(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": _object(properties)}


_STRING = {"type": "string"}
EXTRACTION_SCHEMA: dict[str, Any] = _object(
    {
        "entities": _list_of(
            {"label": _STRING, "type": _STRING, "layer": {"type": "string", "enum": list(LAYERS)}}
        ),
        "relations": _list_of({"source": _STRING, "target": _STRING, "type": _STRING}),
        "facts": _list_of(
            {
                "subject": _STRING,
                "text": _STRING,
                "source": {"type": "string", "enum": list(FACT_SOURCES)},
            }
        ),
        "corrections": _list_of({"subject": _STRING, "old": _STRING, "new": _STRING}),
    }
)

_SYSTEM = """You extract durable knowledge from one chat exchange (a user's message and the
assistant's reply) for a knowledge graph. Return JSON matching the schema, nothing else.

Only what the messages literally state counts. Never add an entity, relation or fact that
they do not say; never guess; an empty list is a good answer.

- entities: people, organizations, projects, places, technologies, works, documents, rules
  the messages name. "label" is the name exactly as written. "type" is one of Person,
  Character, Organization, Project, Place, Technology, Work, Universe, Publisher, Document,
  Rule, or a new type name if none fits, or "unknown" if the message does not say.
  "layer": PERSONAL for the user's own world (their projects, team, preferences),
  UNIVERSAL for verifiable world knowledge (cities, languages, frameworks).
- relations: "source" and "target" are entity labels; "type" is UPPER_SNAKE_CASE, such as
  WORKS_AT, LIVES_IN, OWNS, USES_TECHNOLOGY, HAS_MODULE, PART_OF, BELONGS_TO, LIKES,
  FAMILY_OF, CREATED_BY, IS_A, ALIAS_OF, RELATED_TO.
- facts: a short sentence about "subject" (an entity label). "source" is "user" for what the
  user asserts about their world, "assistant" for what the assistant states about it,
  "world" for externally verifiable knowledge.
- corrections: when a message replaces an earlier value ("we moved from SQLite to
  PostgreSQL", "actually it is Tuesday, not Monday"): "subject" is what changed (an entity
  label, or "project" / "user"), "old" the replaced value, "new" the value now true.

Reuse the label of a known entity when a message refers to it."""


def extraction_prompt(request: str, answer: str, known: list[str]) -> list[dict[str, str]]:
    """The chat messages asking a model to extract from one exchange: the user's `request`
    and the assistant's `answer` to it (empty when there was none)."""
    labels = ", ".join(known[:MAX_KNOWN]) or "(none yet)"
    said = f"Message from the user:\n<<<\n{request}\n>>>"
    if answer.strip():
        said += f"\n\nThe assistant's reply:\n<<<\n{answer}\n>>>"
    return [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": f"Known entities: {labels}\n\n{said}"},
    ]


class ExtractionError(TheusError, ValueError):
    """The model's answer is not an extraction at all (see the module docstring)."""


class NotJSON(ExtractionError):
    """The model's answer is not JSON: a server that does not follow the format."""


@dataclass(frozen=True, slots=True)
class Entity:
    label: str
    type: str  # as the model gave it; "" when it did not say
    layer: Layer | None  # None: the type's default layer


@dataclass(frozen=True, slots=True)
class Relation:
    source: str
    target: str
    type: str


@dataclass(frozen=True, slots=True)
class Fact:
    subject: str
    text: str
    source: FactSource


@dataclass(frozen=True, slots=True)
class Correction:
    subject: str
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class Extraction:
    entities: tuple[Entity, ...] = ()
    relations: tuple[Relation, ...] = ()
    facts: tuple[Fact, ...] = ()
    corrections: tuple[Correction, ...] = ()
    dropped: tuple[str, ...] = ()  # why each malformed item was left out

    @property
    def empty(self) -> bool:
        """Nothing to apply (the common answer: most messages state nothing new)."""
        return not (self.entities or self.relations or self.facts or self.corrections)


def parse_extraction(raw: str) -> Extraction:
    """An `Extraction` from a model's answer; raises `ExtractionError` (module docstring)."""
    body = raw.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced["body"].strip()
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise NotJSON(f"not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ExtractionError(f"expected a JSON object, got {type(data).__name__}")
    if not any(name in data for name in EXTRACTION_SCHEMA["properties"]):
        raise ExtractionError("none of entities, relations, facts, corrections is present")
    dropped: list[str] = []
    found: dict[str, list[Any]] = {}
    total = 0
    for name, parse_item in _ITEMS.items():
        items = data.get(name, [])
        if not isinstance(items, list):
            raise ExtractionError(f"{name} must be a list, got {type(items).__name__}")
        total += len(items)
        found[name] = []
        for n, item in enumerate(items):
            try:
                found[name].append(parse_item(item))
            except ExtractionError as exc:
                dropped.append(f"{name}[{n}]: {exc}")
    if total and len(dropped) == total:
        raise ExtractionError("no usable item: " + "; ".join(dropped[:3]))
    return Extraction(
        tuple(found["entities"]),
        tuple(found["relations"]),
        tuple(found["facts"]),
        tuple(found["corrections"]),
        tuple(dropped),
    )


def split_by_speaker(extraction: Extraction, request: str) -> tuple[Extraction, Extraction]:
    """The user's part and the assistant's part of one exchange's extraction, to apply each
    as said by its speaker (the request's first): a fact goes by its `source` (a "world" fact
    to the user's part when the request names its subject); an entity, a relation or a
    correction to the user's part when the request names it (both ends of a relation; the
    new value of a correction), else to the assistant's."""
    names = Said(request).mentions
    entities = _parted(extraction.entities, lambda e: names(e.label))
    relations = _parted(extraction.relations, lambda r: names(r.source) and names(r.target))
    facts = _parted(
        extraction.facts,
        lambda f: f.source == "user" or (f.source == "world" and names(f.subject)),
    )
    corrections = _parted(extraction.corrections, lambda c: names(c.new))
    return (
        Extraction(entities[0], relations[0], facts[0], corrections[0]),
        Extraction(entities[1], relations[1], facts[1], corrections[1]),
    )


def _parted(
    items: tuple[_Item, ...], of_user: Callable[[_Item], bool]
) -> tuple[tuple[_Item, ...], tuple[_Item, ...]]:
    return tuple(i for i in items if of_user(i)), tuple(i for i in items if not of_user(i))


def _fields(item: object, names: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, str]:
    """The string fields of one item, stripped; raises for a missing, non-string or empty
    field (an optional one may be missing)."""
    if not isinstance(item, dict):
        raise ExtractionError(f"not an object: {item!r:.40}")
    out: dict[str, str] = {}
    for name in (*names, *optional):
        value = item.get(name)
        if value is None and name in optional:
            continue
        if not isinstance(value, str):
            raise ExtractionError(f"{name} is not a string")
        out[name] = " ".join(value.split())
        if not out[name] and name in names:
            raise ExtractionError(f"{name} is empty")
    return out


def _label(value: str, name: str) -> str:
    if len(value) > MAX_LABEL:
        raise ExtractionError(f"{name} is longer than {MAX_LABEL} characters")
    return value


def _entity(item: object) -> Entity:
    f = _fields(item, ("label",), ("type", "layer"))
    layer = as_layer(f.get("layer", ""))
    if layer is None and f.get("layer"):
        raise ExtractionError(f"layer {f['layer']!r} is not PERSONAL or UNIVERSAL")
    return Entity(_label(f["label"], "label"), f.get("type", ""), layer)


def _relation(item: object) -> Relation:
    f = _fields(item, ("source", "target", "type"))
    return Relation(_label(f["source"], "source"), _label(f["target"], "target"), f["type"])


def _fact(item: object) -> Fact:
    f = _fields(item, ("subject", "text", "source"))
    source = _SOURCE_OF.get(f["source"].lower())
    if source is None:
        raise ExtractionError(f"source {f['source']!r} is not user, assistant or world")
    return Fact(_label(f["subject"], "subject"), f["text"][:MAX_TEXT], source)


def _correction(item: object) -> Correction:
    f = _fields(item, ("subject", "old", "new"))
    return Correction(
        _label(f["subject"], "subject"), _label(f["old"], "old"), _label(f["new"], "new")
    )


_ITEMS = {"entities": _entity, "relations": _relation, "facts": _fact, "corrections": _correction}
