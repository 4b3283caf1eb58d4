"""The ontology: entity types and relation names, built in and registered per project.

Names are English; the Spanish names of the Acervo design are aliases of them. A name is
looked up by `keys.fold_label` (case, accents, spaces and punctuation do not matter), so
"tecnología", "Tecnologia" and "technology" are all `Technology`. What the model names that
is not known yet is registered on the fly (auto-registration) and kept, with the manual
registrations, in `ontology.json` in the project's data folder.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from knowledge.core import atomic
from knowledge.core.keys import fold_label
from knowledge.core.paths import report_unwritable

if TYPE_CHECKING:
    from knowledge.index.project import Project

log = logging.getLogger(__name__)

Layer = Literal["PERSONAL", "UNIVERSAL"]
LAYERS: tuple[Layer, ...] = ("PERSONAL", "UNIVERSAL")
_LAYER_OF: dict[str, Layer] = {layer: layer for layer in LAYERS}
FILE_NAME = "ontology.json"
# What a model says when it cannot tell an entity's type: the node is kept incomplete.
UNKNOWN_TYPES = frozenset({"", "unknown", "desconocido", "none", "other"})


@dataclass(frozen=True, slots=True)
class EntityType:
    name: str
    attributes: tuple[str, ...] = ()
    layer_default: Layer = "PERSONAL"
    builtin: bool = False


_P: Layer = "PERSONAL"
_U: Layer = "UNIVERSAL"
BUILTIN_TYPES: tuple[tuple[EntityType, tuple[str, ...]], ...] = tuple(
    (EntityType(name, tuple(attrs.split()), layer, True), aliases)
    for name, attrs, layer, aliases in (
        ("Person", "name age role relation_to_owner", _P, ("Persona",)),
        ("Character", "name universe creator", _U, ("Personaje",)),
        ("Organization", "name type industry location", _P, ("Organizacion", "Organisation")),
        ("Project", "name stack scaffold architecture modules status", _P, ("Proyecto",)),
        ("Place", "name type region country", _U, ("Lugar", "Location")),
        ("Technology", "name type version", _U, ("Tecnologia", "Tech")),
        ("Work", "name author date", _U, ("Obra",)),
        ("Universe", "name publisher", _U, ("Universo",)),
        ("Publisher", "name country", _U, ("Editorial",)),
        ("Document", "name type path summary", _P, ("Documento",)),
        ("Rule", "description applies_to technology severity", _P, ("Regla",)),
    )
)
# Types whose entities live in the world, never in the code: "Person: User" or "Character:
# Batman" is never the `User` table or a `Batman` class that happens to share the name.
WORLD_TYPES = frozenset(
    {"Person", "Character", "Organization", "Place", "Work", "Universe", "Publisher"}
)
BUILTIN_RELATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("IS_A", ("ES_UN",)),
    ("CREATED_BY", ("CREADO_POR",)),
    ("ALIAS_OF", ("ALIAS_DE",)),
    ("PART_OF", ("PARTE_DE",)),
    ("SET_IN", ()),
    ("DEBUTED_IN", ()),
    ("PUBLISHED_BY", ("PUBLICADO_POR",)),
    ("WORKS_AT", ("TRABAJA_EN",)),
    ("LIVES_IN", ("VIVE_EN",)),
    ("LOCATED_IN", ("UBICADO_EN",)),
    ("OWNS", ("DUEÑO_DE",)),
    ("BELONGS_TO", ("PERTENECE_A",)),
    ("USES_TECHNOLOGY", ("USA_TECNOLOGIA", "USES_TECH")),
    ("HAS_MODULE", ("TIENE_MODULO",)),
    ("LIKES", ("GUSTA_DE", "LE_GUSTA")),
    ("FAMILY_OF", ("FAMILIAR_DE",)),
    ("RELATED_TO", ("RELACIONADO_CON",)),
)
ALIAS_OF = "ALIAS_OF"
_NOT_NAME = re.compile(r"[^\w]+")


def as_layer(value: str) -> Layer | None:
    return _LAYER_OF.get(value.upper())


def relation_name(raw: str) -> str:
    """The spelling a new relation is registered under: upper case, words joined by "_"."""
    return _NOT_NAME.sub("_", raw.strip()).strip("_").upper()


class Ontology:
    """One project's types and relations. Not thread-safe: `FactsLayer` holds the project's
    lock around every change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._types: dict[str, EntityType] = {}
        self._relations: dict[str, str] = {}  # folded name or alias -> canonical name
        self._custom_relations: list[str] = []
        self._stamp: tuple[int, int] | None = None  # the file as last read or written
        for entity_type, aliases in BUILTIN_TYPES:
            for name in (entity_type.name, *aliases):
                self._types[fold_label(name)] = entity_type
        for relation, aliases in BUILTIN_RELATIONS:
            for name in (relation, *aliases):
                self._relations[fold_label(name)] = relation
        self._load()

    @classmethod
    def of(cls, project: Project) -> Ontology:
        return cls(project.paths.home / FILE_NAME)

    # -- reading -----------------------------------------------------------------------------
    def type_of(self, raw: str) -> EntityType | None:
        """The known type `raw` names, or None (unknown types are not registered here)."""
        return self._types.get(fold_label(raw))

    def relation_of(self, raw: str) -> str | None:
        return self._relations.get(fold_label(raw))

    # -- registering -------------------------------------------------------------------------
    def resolve_type(self, raw: str) -> EntityType | None:
        """The type `raw` names, registering it when new; None for "no type" ("unknown")."""
        if raw.strip().casefold() in UNKNOWN_TYPES or not fold_label(raw):
            return None
        return self.type_of(raw) or self.register_type(raw.strip())

    def resolve_relation(self, raw: str) -> str | None:
        """The relation `raw` names, registering it when new; None when it names nothing."""
        return self.relation_of(raw) or (self.register_relation(raw) if fold_label(raw) else None)

    def register_type(
        self, name: str, attributes: tuple[str, ...] = (), layer_default: Layer = "PERSONAL"
    ) -> EntityType:
        known = self.type_of(name)
        entity_type = EntityType(name.strip(), tuple(attributes), layer_default)
        if known is not None and (known.builtin or known == entity_type):
            return known  # a built-in is never redefined; an unchanged one is not rewritten
        self._types[fold_label(name)] = entity_type
        self._save()
        return entity_type

    def register_relation(self, name: str) -> str:
        known = self.relation_of(name)
        if known is not None:
            return known
        canonical = relation_name(name)
        self._relations[fold_label(canonical)] = canonical
        self._custom_relations.append(canonical)
        self._save()
        return canonical

    # -- persistence -------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read what another process (or `register_type`) saved since this one last looked."""
        if self._file_stamp() != self._stamp:
            self._load()

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def _load(self) -> None:
        self._stamp = self._file_stamp()
        raw = atomic.read_state(self.path)
        for item in raw.get("types", []):
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                attributes = item.get("attributes", [])
                entity_type = EntityType(
                    item["name"],
                    tuple(str(a) for a in attributes if isinstance(a, str)),
                    as_layer(str(item.get("layer_default"))) or "PERSONAL",
                )
                if self.type_of(entity_type.name) is None:
                    self._types[fold_label(entity_type.name)] = entity_type
        for name in raw.get("relations", []):
            if isinstance(name, str) and fold_label(name) and self.relation_of(name) is None:
                self._relations[fold_label(name)] = name
                self._custom_relations.append(name)

    def _save(self) -> None:
        """Best effort: a data folder that refuses writes keeps the registration for this
        process only (the graph's nodes still carry their type's name)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Another process may have registered something since: merge it in, not over it.
            with atomic.locked(self.path.with_name(f".{FILE_NAME}.lock")):
                self._load()
                custom = sorted(
                    {t for t in self._types.values() if not t.builtin}, key=lambda t: t.name
                )
                state = {
                    "types": [
                        {
                            "name": t.name,
                            "attributes": list(t.attributes),
                            "layer_default": t.layer_default,
                        }
                        for t in custom
                    ],
                    "relations": sorted(set(self._custom_relations)),
                }
                atomic.write_text(self.path, json.dumps(state, indent=1) + "\n")
                self._stamp = self._file_stamp()
        except OSError as exc:
            if not report_unwritable(exc):
                log.warning("facts: the ontology was not saved to %s: %s", self.path, exc)


def register_type(
    project: Project, name: str, attributes: tuple[str, ...] = (), layer_default: Layer = "PERSONAL"
) -> EntityType:
    """Add (or redefine) a custom entity type of `project`; built-ins stay as they are."""
    return Ontology.of(project).register_type(name, attributes, layer_default)


def register_relation(project: Project, name: str) -> str:
    """Add a relation to `project`'s ontology; returns its canonical name."""
    return Ontology.of(project).register_relation(name)
