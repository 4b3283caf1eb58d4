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


def test_unparsable_source_is_partial_not_fatal() -> None:
    for data in (
        b"def broken(:\n",
        b"x = '\xed\xa0\x80'\n",
        b"(" * 300 + b")" * 300,
        b"\x00\x00",
        b"# -*- coding: bogus-codec -*-\nx=1\n",
    ):
        ex = extract(data)
        assert ex.partial.startswith("parse error"), data[:20]


def test_comments_after_the_header_are_not_signature() -> None:
    ex = extract(
        b"def f(a,  # the first\n      b):  # trailing\n    # notes on the body\n    return a\n"
    )
    assert ex.symbols[0].signature == "def f(a, b)"
    assert extract(b"def g(c='#fff'): pass\n").symbols[0].signature == "def g(c='#fff')"
    assert extract(b"def h(x): return {1: 2}\n").symbols[0].signature == "def h(x)"
