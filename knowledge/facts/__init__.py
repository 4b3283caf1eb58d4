"""The facts layer: entities, relations and facts from the conversation, in the one graph.

See `knowledge.facts.layer` for the storage design, `knowledge.facts.extraction` for what
a model returns (and what a correction means), `knowledge.facts.gate` for which messages are
worth asking about. No model is called here: the agent calls it
and hands the parsed answer to `FactsLayer.apply`. THEUS_NO_FACTS=1 turns the layer off.
The package itself imports nothing: the agent's extractor needs the gate and the parsing, not
the graph.
"""

__all__ = [  # its modules: the package itself imports none of them
    "apply",
    "extraction",
    "gate",
    "layer",
    "match",
    "ontology",
    "records",
    "status",
]
