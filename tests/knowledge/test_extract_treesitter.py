"""Tree-sitter extraction: symbols, imports, identifiers, budgets and hostile input."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.index.extract.treesitter import extract
from knowledge.index.languages import LANGUAGES as SPECS
from knowledge.index.model import Extract, Import, Symbol

LANGUAGES = ("typescript", "tsx", "javascript", "go", "rust", "java")


def run(source: str, language: str) -> Extract:
    result = extract(textwrap.dedent(source).lstrip("\n").encode(), language)
    assert result.partial == ""
    return result


def by_name(result: Extract) -> dict[str, Symbol]:
    return {symbol.name: symbol for symbol in result.symbols}


TS = """
/** Shopping cart. */
import React, { a as b, c } from "./x";
import * as ns from '../y';
export { z } from "./z";
const r = require("./r");

/** Adds numbers.
 * Second line. */
export const add = async (a: number): Promise<void> => {};
export const LIMIT = 10;
let notConst = 1;

// The cart.
export default class Cart<T> extends Base {
  /** Sum of items */
  total(x: T): number {
    function inner() {}
    return 1;
  }
  handle = (e: Event) => {};
}
interface Shape { area(): number }
namespace Geo { export function k() {} }
enum Color { Red }
type Id = string;
"""


class TestTypeScript:
    def test_symbols(self) -> None:
        symbols = by_name(run(TS, "typescript"))
        assert set(symbols) == {
            "add", "LIMIT", "Cart", "Cart.total", "Cart.handle", "Shape", "Shape.area",
            "Geo", "Geo.k", "Color", "Id", "r",
        }  # fmt: skip
        add = symbols["add"]
        assert (add.kind, add.line, add.end_line) == ("function", 9, 9)
        assert add.signature == "const add = async (a: number): Promise<void> =>"
        assert add.doc == "Adds numbers."
        cart = symbols["Cart"]
        assert (cart.kind, cart.line, cart.end_line) == ("class", 14, 21)
        assert cart.signature == "class Cart<T> extends Base"
        assert cart.doc == "The cart."
        total = symbols["Cart.total"]
        assert (total.kind, total.parent, total.line, total.end_line) == ("method", "Cart", 16, 19)
        assert total.signature == "total(x: T): number"
        assert total.doc == "Sum of items"
        assert symbols["LIMIT"].kind == "const"
        assert (symbols["Shape"].kind, symbols["Shape.area"].parent) == ("interface", "Shape")
        assert (symbols["Geo.k"].kind, symbols["Geo.k"].parent) == ("function", "Geo")
        assert (symbols["Color"].kind, symbols["Id"].kind) == ("enum", "type")
        assert symbols["Id"].signature == "type Id = string"

    def test_imports_and_identifiers(self) -> None:
        result = run(TS, "typescript")
        assert result.imports == [
            Import("./x", 2, ("default", "a", "c")),
            Import("../y", 3, ("*",)),
            Import("./z", 4, ("z",)),
            Import("./r", 5),
        ]
        assert {"Cart", "Event", "Promise", "notConst", "inner"} <= result.identifiers
        assert "const" not in result.identifiers
        assert result.summary == "Shopping cart."
        assert result.lines == 25

    def test_tsx_and_dynamic_import(self) -> None:
        result = run(
            """
            import React from "react";
            export function App({ x }: Props) { return <div>{x}</div>; }
            const Lazy = () => import("./lazy");
            """,
            "tsx",
        )
        symbols = by_name(result)
        assert symbols["App"].signature == "function App({ x }: Props)"
        assert symbols["Lazy"].kind == "function"
        assert [i.module for i in result.imports] == ["react", "./lazy"]

    def test_overloads_keep_one_symbol(self) -> None:
        result = run("function f(a: string): void;\nfunction f(a: any) {}\n", "typescript")
        assert [s.name for s in result.symbols] == ["f"]


class TestJavaScript:
    def test_symbols_and_imports(self) -> None:
        result = run(
            """
            #!/usr/bin/env node
            'use strict';
            const { a } = require('./a');
            x.require("./not-a-require");

            /**
             * Counts things.
             */
            class Counter {
              constructor() {}
              get value() { return 1 }
            }
            function helper() { const local = () => 1; }
            export * as ns from "./ns";
            """,
            "javascript",
        )
        symbols = by_name(result)
        assert set(symbols) == {"Counter", "Counter.constructor", "Counter.value", "helper"}
        assert symbols["Counter"].doc == "Counts things."
        assert (symbols["Counter"].line, symbols["Counter"].end_line) == (9, 12)
        assert result.imports == [Import("./a", 3), Import("./ns", 14, ("*",))]
        assert {"Counter", "helper", "local"} <= result.identifiers


class TestGo:
    SOURCE = """
    // Package shop sells things.
    package shop

    import (
    \t"fmt"
    \tx "github.com/acme/shop/internal/util"
    )
    import "os"

    // Cart holds items.
    type Cart[T any] struct {
    \titems []T
    }

    type (
    \t// Shape is a shape.
    \tShape interface{ Area() float64 }
    \tID = string
    )

    // Max is the limit.
    const Max = 3

    var Default = Cart[int]{}

    // Total sums.
    func (c *Cart[T]) Total(n int) (int, error) {
    \tinner := func() {}
    \treturn 0, nil
    }

    func (o Other) Elsewhere() {}

    func New() *Cart[int] { return nil }
    """

    def test_symbols(self) -> None:
        symbols = by_name(run(self.SOURCE, "go"))
        assert set(symbols) == {
            "Cart", "Shape", "ID", "Max", "Default", "Cart.Total", "Other.Elsewhere", "New",
        }  # fmt: skip
        cart = symbols["Cart"]
        assert (cart.kind, cart.line, cart.end_line) == ("struct", 11, 13)
        assert cart.doc == "Cart holds items."
        assert cart.signature == "type Cart[T any] struct"
        shape = symbols["Shape"]
        assert (shape.kind, shape.doc) == ("interface", "Shape is a shape.")
        assert shape.signature == "type Shape interface"
        total = symbols["Cart.Total"]
        assert (total.kind, total.parent, total.line, total.end_line) == ("method", "Cart", 27, 30)
        assert total.signature == "func (c *Cart[T]) Total(n int) (int, error)"
        assert total.doc == "Total sums."
        assert symbols["Other.Elsewhere"].parent is None  # receiver type lives elsewhere
        assert (symbols["Max"].kind, symbols["Max"].doc) == ("const", "Max is the limit.")
        assert symbols["Default"].kind == "var"

    def test_imports(self) -> None:
        result = run(self.SOURCE, "go")
        assert result.imports == [
            Import("fmt", 5),
            Import("github.com/acme/shop/internal/util", 6),
            Import("os", 8),
        ]
        assert result.summary == "Package shop sells things."
        assert {"Cart", "Total", "inner", "fmt"} <= result.identifiers


class TestRust:
    SOURCE = """
    //! Inventory crate.
    use crate::a::{b, c::d as e, *};
    use super::x::{self, Y};
    use std::io;
    mod store;
    extern crate serde;

    /// A stock item.
    /// More text.
    #[derive(Debug)]
    pub struct Item<T> {
        qty: T,
    }

    impl<T> Item<T> {
        /// Makes one.
        pub fn new(qty: T) -> Self {
            fn helper() {}
            Item { qty }
        }
    }
    impl<T> Display for Item<T> { fn fmt(&self) -> u8 { 1 } }
    impl<T> Debug for Item<T> { fn fmt(&self) -> u8 { 2 } }
    impl Foreign { fn ext(&self) {} }
    pub trait Stock { fn count(&self) -> usize; }
    pub enum Kind { A }
    const MAX: usize = 3;
    type Alias = Vec<u8>;
    mod inline { pub fn f() {} }
    macro_rules! mac { () => {} }
    """

    def test_symbols(self) -> None:
        symbols = by_name(run(self.SOURCE, "rust"))
        assert set(symbols) == {
            "Item", "Item.new", "Item.fmt", "Foreign.ext", "Stock", "Stock.count", "Kind",
            "MAX", "Alias", "inline", "inline.f", "mac",
        }  # fmt: skip
        item = symbols["Item"]
        assert (item.kind, item.line, item.end_line) == ("struct", 11, 13)
        assert (item.doc, item.signature) == ("A stock item.", "pub struct Item<T>")
        new = symbols["Item.new"]
        assert (new.kind, new.parent, new.line, new.end_line) == ("method", "Item", 17, 20)
        assert (new.signature, new.doc) == ("pub fn new(qty: T) -> Self", "Makes one.")
        assert symbols["Item.fmt"].line == 22  # first impl wins, names stay unique
        assert symbols["Foreign.ext"].parent is None
        assert (symbols["Stock"].kind, symbols["Stock.count"].parent) == ("trait", "Stock")
        assert (symbols["MAX"].kind, symbols["mac"].kind) == ("const", "macro")
        assert (symbols["inline"].kind, symbols["inline.f"].kind) == ("module", "function")

    def test_imports(self) -> None:
        result = run(self.SOURCE, "rust")
        assert result.imports == [
            Import("crate::a::b", 2, ("b",)),
            Import("crate::a::c::d", 2, ("d",)),
            Import("crate::a", 2, ("*",)),
            Import("super::x", 3, ("x",)),
            Import("super::x::Y", 3, ("Y",)),
            Import("std::io", 4, ("io",)),
            Import("mod:store", 5, ("store",)),
            Import("serde", 6),
        ]
        assert not any(i.module == "mod:inline" for i in result.imports)
        assert result.summary == "Inventory crate."
        assert {"Item", "Display", "helper", "qty"} <= result.identifiers


class TestJava:
    SOURCE = """
    /*
     * Copyright 2024 Acme
     */
    package com.acme.shop;

    import static com.acme.util.Strings.join;
    import com.acme.model.*;
    import java.util.List;

    /** A shopping cart.
     * Details. */
    public class Cart extends Base {
        public static final int MAX = 3;
        private int count = 0;

        /** Makes a cart. */
        @Override public Cart(int n) { super(n); }

        public <T> List<T> items(T t) throws Oops {
            Runnable r = new Runnable() { public void run() {} };
            return null;
        }

        static class Line { void add() {} }
    }

    interface Priced { int price(); }
    enum Mode { ON; void flip() {} }
    record Pair(int a) {}
    """

    def test_symbols(self) -> None:
        symbols = by_name(run(self.SOURCE, "java"))
        assert set(symbols) == {
            "Cart", "Cart.MAX", "Cart.Cart", "Cart.items", "Cart.Line", "Cart.Line.add",
            "Priced", "Priced.price", "Mode", "Mode.flip", "Pair",
        }  # fmt: skip
        cart = symbols["Cart"]
        assert (cart.kind, cart.line, cart.end_line) == ("class", 12, 25)
        assert (cart.doc, cart.signature) == ("A shopping cart.", "public class Cart extends Base")
        items = symbols["Cart.items"]
        assert (items.kind, items.parent, items.line, items.end_line) == ("method", "Cart", 19, 22)
        assert items.signature == "public <T> List<T> items(T t) throws Oops"
        assert symbols["Cart.Cart"].doc == "Makes a cart."
        assert (symbols["Cart.MAX"].kind, symbols["Cart.Line.add"].parent) == ("const", "Cart.Line")
        assert (symbols["Priced"].kind, symbols["Mode"].kind) == ("interface", "enum")

    def test_imports(self) -> None:
        result = run(self.SOURCE, "java")
        assert result.imports == [
            Import("com.acme.util.Strings.join", 6, ("join",)),
            Import("com.acme.model", 7, ("*",)),
            Import("java.util.List", 8, ("List",)),
        ]
        assert result.summary == ""  # a licence header is no summary
        assert {"Cart", "Runnable", "List"} <= result.identifiers


def test_every_language_with_a_grammar_is_tested_here() -> None:
    assert {name for name, spec in SPECS.items() if spec.grammar} == set(LANGUAGES)


@pytest.mark.parametrize("language", LANGUAGES)
def test_cancelled_parse_leaves_the_parser_usable(language: str) -> None:
    big = b"function f(a) { return [a, {b: (a + 1)}]; }\nfn g() {}\n" * 100_000
    assert extract(big, language, budget_s=0.001).partial == "parse timeout"
    source = {
        "go": b"package p\n\nfunc Ok() {}\n",
        "rust": b"fn ok() {}\n",
        "java": b"class Ok {}\n",
    }.get(language, b"function ok() {}\n")
    after = extract(source, language)
    assert after.partial == ""
    assert [s.name.lower() for s in after.symbols] == ["ok"]


def test_unknown_language_is_partial_not_an_error() -> None:
    assert extract(b"x", "cobol").partial.startswith("no parser")


HOSTILE = [
    b"",
    b"\x00" * 100,
    b"\xff\xfe" + "class A {}".encode("utf-16-le"),
    b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 20,
    b"function f() {\r\n  return 1;\r\n}\r\n",
    b"const s = '\xe9\xff\xfe';\nfunction g() {}\n",
    b"{" * 5000 + b"}" * 5000,
    b"(" * 5000,
    b"class A { " * 300,
    b"var x = 1;" * 20_000,  # one long minified line
]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("data", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_input_never_raises(language: str, data: bytes) -> None:
    result = extract(data, language)
    assert result.language == language
    assert result.partial in ("", "parse timeout")
    for symbol in result.symbols:
        assert 1 <= symbol.line <= symbol.end_line
        assert len(symbol.signature) <= 160


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=2000), language=st.sampled_from(LANGUAGES))
def test_arbitrary_bytes_never_raise(data: bytes, language: str) -> None:
    result = extract(data, language)
    assert result.partial in ("", "parse timeout")
    names = [symbol.name for symbol in result.symbols]
    assert len(names) == len(set(names))
    assert all(symbol.parent in names for symbol in result.symbols if symbol.parent)


FRAGMENTS = [
    "class A {", "}", "function f() {", "fn g() {", "impl X {", "type T = {", "/**", "*/",
    "// c", "import x from 'y';", "use a::{b", "func (r R) M() {", "\n", "\xe9", ";",
]  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    body=st.lists(st.sampled_from(FRAGMENTS), max_size=60),
    language=st.sampled_from(LANGUAGES),
)
def test_code_like_fragments_never_raise(body: list[str], language: str) -> None:
    result = extract(" ".join(body).encode(), language)
    assert result.partial in ("", "parse timeout")
