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


def test_replace_names_only_what_now_links_elsewhere() -> None:
    defs = Definitions.of_symbols(
        [
            ("a.py", "a.py::render", "render", "function"),
            ("b.py", "b.py::render", "render", "function"),  # ambiguous before and after
            ("a.py", "a.py::tokenize", "tokenize", "function"),
        ]
    )
    before = {"render": frozenset({"a.py::render"}), "tokenize": frozenset({"a.py::tokenize"})}
    # a.py moves render (still two definitions), drops tokenize, adds a unique parse_tree.
    after = {
        "render": frozenset({"a.py::View.render"}),
        "parse_tree": frozenset({"a.py::parse_tree"}),
    }
    assert defs.replace("a.py", before, after) == {"tokenize", "parse_tree"}
    assert defs.unique("render") is None and defs.unique("tokenize") is None
    assert defs.unique("parse_tree") == ("a.py::parse_tree", "a.py")
    # b.py's render goes: the name now links to a.py's, so the files naming it change.
    assert defs.replace("b.py", {"render": frozenset({"b.py::render"})}, {}) == {"render"}
    assert defs.unique("render") == ("a.py::View.render", "a.py")
