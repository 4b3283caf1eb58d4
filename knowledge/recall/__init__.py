"""Recall: a request's text in, the project's files and nodes ranked for it out
(`knowledge.recall.recaller`). The package itself imports nothing, so a module that needs one
light part (the gate, the counters) does not load the ranking and numpy with it."""

__all__ = [  # its modules: the package itself imports none of them
    "content",
    "definitions",
    "gate",
    "hashvec",
    "history",
    "intent",
    "kinds",
    "lexical",
    "postings",
    "rank",
    "recaller",
    "saved",
    "snapshot",
    "status",
    "tokens",
    "track",
    "traverse",
]
