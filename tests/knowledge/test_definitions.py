from __future__ import annotations

from knowledge.index.definitions import Definitions


def test_linked_names_are_the_unique_ones_in_name_order() -> None:
    defs = Definitions.of_symbols(
        [
            ("a.py", "a.py::Parser", "Parser", "class"),
            ("a.py", "a.py::Parser.parse_args", "Parser.parse_args", "method"),
            ("b.py", "b.py::tokenize", "tokenize", "function"),
            ("b.py", "b.py::render", "render", "function"),
            ("c.py", "c.py::render", "render", "function"),  # two definitions: no link
            ("c.py", "c.py::run", "run", "function"),  # too generic to link
            ("c.py", "c.py::LIMIT", "LIMIT", "variable"),  # not a linked kind
        ]
    )
    names = ["tokenize", "unknown", "render", "parse_args", "run", "LIMIT", "Parser"]
    assert defs.linked(names) == [
        ("a.py::Parser", "a.py"),
        ("a.py::Parser.parse_args", "a.py"),
        ("b.py::tokenize", "b.py"),
    ], "in the names' sorted order"
    assert defs.linked(names) == [u for n in sorted(names) if (u := defs.unique(n)) is not None]
    assert defs.linked(["unknown", "other"]) == []
