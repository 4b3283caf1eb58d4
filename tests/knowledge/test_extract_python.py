from __future__ import annotations

from knowledge.index.extract.python import extract

SOURCE = b'''"""Shopping cart maths."""
import os
from .pricing import price_of, TAX
from ..core import models as m
try:
    import ujson as json
except ImportError:
    import json

MAX_ITEMS: int = 100
_lower = 3

@dataclass
class Cart(Base):
    """A cart of line items.

    More text.
    """

    def total(self, items: list[Item],
              discount: float = 0.0) -> int:
        """Sum of line prices."""
        return sum(price_of(i) for i in items)

    async def refresh(self): return None

    class Line:
        pass

def helper(x): return x
'''


def test_symbols_with_lines_signatures_and_docs() -> None:
    ex = extract(SOURCE)
    assert ex.partial == ""
    assert ex.summary == "Shopping cart maths."
    by_name = {s.name: s for s in ex.symbols}
    assert set(by_name) == {
        "MAX_ITEMS",
        "Cart",
        "Cart.total",
        "Cart.refresh",
        "Cart.Line",
        "helper",
    }
    cart = by_name["Cart"]
    assert (cart.kind, cart.line, cart.end_line) == ("class", 13, 28)
    assert cart.signature == "class Cart(Base)"
    assert cart.doc == "A cart of line items."
    total = by_name["Cart.total"]
    assert total.kind == "method" and total.parent == "Cart"
    assert total.signature == ("def total(self, items: list[Item], discount: float = 0.0) -> int")
    assert total.doc == "Sum of line prices."
    assert by_name["Cart.refresh"].signature == "async def refresh(self)"
    assert by_name["helper"].signature == "def helper(x)"
    assert by_name["MAX_ITEMS"].kind == "const"


def test_imports_relative_and_guarded() -> None:
    ex = extract(SOURCE)
    got = {(i.module, i.level, i.names) for i in ex.imports}
    assert ("os", 0, ()) in got
    assert ("pricing", 1, ("price_of", "TAX")) in got
    assert ("core", 2, ("models",)) in got
    assert ("ujson", 0, ()) in got and ("json", 0, ()) in got
    assert {"price_of", "Item", "discount"} <= ex.identifiers


def test_syntax_errors_are_partial_with_what_was_recovered() -> None:
    """tree-sitter recovers from a syntax error: the definitions it still parsed are kept,
    and the extract says it is partial."""
    ex = extract(b"def broken(:\n    pass\n\n\ndef fine(x):\n    return x\n")
    assert ex.partial.startswith("parse error")
    assert "fine" in {s.name for s in ex.symbols}
    for data in (b"def broken(:\n", b"\x00\x00", b"class (:\n"):
        assert extract(data).partial.startswith("parse error"), data


def test_what_python_refuses_but_parses_is_extracted_and_nothing_raises() -> None:
    """Bytes that are no UTF-8 in a string (the analysis marks the file `invalid-utf8`), an
    unknown coding, nesting past Python's limits: read as the text they are, never a crash."""
    for data in (
        b"x = '\xed\xa0\x80'\nMAX = 1\n",
        b"(" * 300 + b")" * 300 + b"\nMAX = 1\n",
        b"# -*- coding: bogus-codec -*-\nMAX = 1\n",
    ):
        assert [s.name for s in extract(data).symbols] == ["MAX"], data[:20]
    deep = b"".join(b" " * i + b"def f%d():\n" % i for i in range(3000)) + b" " * 3000 + b"pass\n"
    assert extract(deep).symbols  # a stack, not recursion: whatever tree-sitter kept


def test_decorators_nested_blocks_and_trailing_comments_end_as_ast_ends_them() -> None:
    ex = extract(
        b'\xef\xbb\xbf"""Module."""\n'  # a BOM before the module docstring
        b"if True:\n"
        b"    import a\n"
        b"    def guarded():\n"
        b"        pass\n"
        b"        # trailing comment, not part of it\n"
        b"import b\n"
        b"class A:\n"
        b"    @property\n"
        b"    def x(self): return 1\n"
        b"    def y(self):\n"
        b'        r"""Raw \\d doc."""\n'
        b"        def inner(): pass\n"
        b"        return f'{inner}'\n"
        b"    # the end\n"
    )
    assert ex.summary == "Module."
    assert [i.module for i in ex.imports] == ["a", "b"]
    got = [(s.name, s.kind, s.line, s.end_line, s.doc) for s in ex.symbols]
    assert got == [
        ("guarded", "function", 4, 5, ""),
        ("A", "class", 8, 14, ""),
        ("A.x", "method", 9, 10, ""),
        ("A.y", "method", 11, 14, "Raw \\d doc."),
        ("A.y.inner", "function", 13, 13, ""),
    ]
    assert ex.symbols[1].signature == "class A" and ex.symbols[2].signature == "def x(self)"


def test_comments_after_the_header_are_not_signature() -> None:
    ex = extract(
        b"def f(a,  # the first\n      b):  # trailing\n    # notes on the body\n    return a\n"
    )
    assert ex.symbols[0].signature == "def f(a, b)"
    assert extract(b"def g(c='#fff'): pass\n").symbols[0].signature == "def g(c='#fff')"
    assert extract(b"def h(x): return {1: 2}\n").symbols[0].signature == "def h(x)"


def test_an_extract_pickles_back_as_it_was() -> None:
    """Parse workers send extracts back pickled, symbols and imports as their fields and the
    identifiers as one string (`Extract.__reduce__`)."""
    import pickle

    from knowledge.index.model import Column, Extract, Section, Table

    for ex in (
        extract(SOURCE),
        Extract("markdown"),
        Extract(
            "sql",
            sections=[Section("Intro", 1, 1, 3, "first")],
            tables=[Table("orders", 1, 4, [Column("user_id", "int", 2, ("users", "id"))])],
            partial="parse error: x",
        ),
    ):
        assert pickle.loads(pickle.dumps(ex)) == ex


DOCSTRINGS = [
    '"""One line."""',
    '"""\n    Starts on the next line.\n\n    More.\n    """',
    "'''Single quotes, a \"quoted\" word.'''",
    '"short"',
    "'short too'",
    '""""""',
    '"""   \n\n   """',
    '"""Tab\tinside, tabs expanded."""',
    '"""Escapes: \\t and \\n and \\u00e9."""',
    'r"""Raw \\d+ stays."""',
    'u"""Unicode prefix."""',
    'b"""Bytes are no docstring."""',
    'f"""An f-string is none: {x}."""',
    '"Joined" " strings"',
    '"""Line\x0cfeed and\x85next."""',
    '"""Carriage\r\nreturn."""',
    '"""Unicode: naïve café → done."""',
]


def test_a_docstring_summary_is_the_first_line_ast_cleans() -> None:
    """The summary of a module, class or function is the first non-blank line of
    `ast.get_docstring(clean=True)`, for every form of string literal."""
    import ast

    for literal in DOCSTRINGS:
        source = f"{literal}\n\ndef f():\n    {literal}\n    return 1\n"
        tree = ast.parse(source)
        expected = ""
        doc = ast.get_docstring(tree, clean=True)
        for line in (doc or "").splitlines():
            if line.strip():
                expected = line.strip()
                break
        found = extract(source.encode())
        assert found.summary == expected, literal
        assert found.symbols[0].doc == expected, literal
