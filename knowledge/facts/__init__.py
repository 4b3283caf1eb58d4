"""The facts layer: entities, relations and facts from the conversation, in the one graph.

See `knowledge.facts.layer` for the storage design, `knowledge.facts.extraction` for what
a model returns (and what a correction means), `knowledge.facts.gate` for which messages are
worth asking about. No model is called here: the agent calls it
and hands the parsed answer to `FactsLayer.apply`. THEUS_NO_FACTS=1 turns the layer off.
"""

from knowledge.facts.apply import ApplyReport, Refusal
from knowledge.facts.extraction import (
    EXTRACTION_SCHEMA,
    Correction,
    Entity,
    Extraction,
    ExtractionError,
    Fact,
    NotJSON,
    Relation,
    extraction_prompt,
    parse_extraction,
    split_by_speaker,
)
from knowledge.facts.gate import can_carry_fact
from knowledge.facts.layer import FactsLayer, stored_lines
from knowledge.facts.ontology import EntityType, Ontology, register_relation, register_type
from knowledge.facts.records import FactView
from knowledge.facts.status import ExtractionStats

__all__ = [
    "EXTRACTION_SCHEMA",
    "ApplyReport",
    "Correction",
    "Entity",
    "EntityType",
    "Extraction",
    "ExtractionError",
    "ExtractionStats",
    "Fact",
    "FactView",
    "FactsLayer",
    "NotJSON",
    "Ontology",
    "Refusal",
    "Relation",
    "can_carry_fact",
    "extraction_prompt",
    "parse_extraction",
    "register_relation",
    "register_type",
    "split_by_speaker",
    "stored_lines",
]
