"""Symbols, imports and identifiers via tree-sitter, for each language whose spec has a grammar.

The spec's query (``knowledge.index.languages``) finds definitions and imports; identifiers come
from a regex over the raw bytes, which is ~7x cheaper than capturing every identifier node and
also catches names mentioned in comments and strings (a mention is a reference worth an edge).
Parsers and queries are cached per process because extraction runs in a pool over many files.

Conventions the indexer relies on:
- Symbol names are unique within one Extract (first definition wins: a Rust type with two trait
  impls defining ``fmt`` yields one ``Type.fmt``); ``parent`` is always the name of another symbol
  in the same Extract, or None (a Go method whose receiver type lives in another file has none).
- Rust ``mod x;`` is the import ``mod:x``; each leaf of a ``use`` tree is its own import with the
  full path as module (``use crate::a::{b, c as d}`` -> ``crate::a::b``, ``crate::a::c``), a glob
  is ``names=("*",)``. Java ``import a.b.*;`` is module ``a.b`` with ``names=("*",)``; other Java
  imports keep the full dotted name (static ones included) with the last segment as name.

Over 400 lines: the per-language node walks (Rust use trees, Go receivers, Java imports)
are small but many; the specs themselves live in `knowledge.index.languages`.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter as ts

from knowledge.index.languages import LANGUAGES
from knowledge.index.model import Extract, Import, Symbol

SIGNATURE_LIMIT = 160
IDENTIFIER_LIMIT = 5000
_CHUNK = 1 << 20  # bytes handed to tree-sitter per read callback
_SCAN = 640  # bytes of a declaration read to build its one-line signature

# Kinds whose members get qualified names; members of anything else (functions, consts) are
# locals and are dropped. "impl" is a Rust impl block: a container that is not itself a symbol.
_CONTAINERS = frozenset({"class", "interface", "enum", "trait", "impl", "namespace", "module"})
_NAMESPACES = frozenset({"namespace", "module"})
_WRAPPERS = frozenset(
    {
        "export_statement",
        "lexical_declaration",
        "variable_declaration",
        "expression_statement",
        "type_declaration",
        "const_declaration",
        "var_declaration",
    }
)
_GO_SPECS = frozenset({"type_spec", "type_alias"})  # inside a `type (...)` group: no keyword
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
_SKIPPABLE = frozenset({"attribute_item", "decorator"})  # between a doc comment and its item
_NOT_SUMMARY = ("copyright", "spdx-", "eslint", "@license", "license", "@ts-", "prettier-")

# Two characters at least: one-letter names would link everything to everything.
_WORD = re.compile(r"(?<![A-Za-z0-9_$])[A-Za-z_$][A-Za-z0-9_$]+")
# `require("x")` and `import("x")` sit deep inside functions, below the query's depth limit.
# One pattern per keyword: a literal prefix makes the scan ~10x faster than an alternation.
_REQUIRES = tuple(
    re.compile(keyword + rb"""\s*\(\s*(["'`])([^"'`\n]{1,500})\1\s*\)""")
    for keyword in (b"require", b"import")
)
_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.")
# Definitions worth a symbol sit near the root; not descending into function bodies saves ~20%
# of the query time. 10 levels reach a method in a class in a namespace in a namespace.
_MAX_DEPTH = 10
_SPACE = re.compile(r"\s+")
_HAS_WORD = re.compile(r"\w")
_TYPE_END = re.compile(r"[\[<(\s)]")  # where type arguments or a receiver's parens begin
_COMMENT_EDGE = re.compile(r"^\s*(?:/\*+!?|//[/!]?|\*+(?!/))|\*+/\s*$")


@dataclass(slots=True)
class _Lang:
    parser: ts.Parser
    cursor: ts.QueryCursor
    keywords: frozenset[str]
    call_imports: bool


_CACHE: dict[str, _Lang] = {}


def _lang(language: str) -> _Lang:
    cached = _CACHE.get(language)
    if cached is None:
        spec = LANGUAGES.get(language)
        grammar = spec.grammar if spec else None
        if grammar is None:
            raise ValueError(f"unsupported language: {language}")
        lang = ts.Language(getattr(importlib.import_module(grammar.module), grammar.function)())
        cursor = ts.QueryCursor(ts.Query(lang, grammar.query))
        cursor.set_max_start_depth(_MAX_DEPTH)
        cached = _Lang(ts.Parser(lang), cursor, grammar.keywords, grammar.call_imports)
        _CACHE[language] = cached
    return cached


def count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def extract(data: bytes, language: str, budget_s: float = 2.0) -> Extract:
    """Never raises: any failure becomes ``Extract.partial`` with the reason."""
    result = Extract(language=language, lines=count_lines(data))
    try:
        lang = _lang(language)
    except Exception as exc:  # missing grammar wheel, unknown language
        result.partial = f"no parser: {exc}"
        return result
    try:
        tree = _parse(lang.parser, data, time.monotonic() + budget_s)
        if tree is None:
            lang.parser.reset()  # a cancelled parse leaves state that corrupts the next one
            result.partial = "parse timeout"
        else:
            _Walk(data, result, lang.call_imports).run(lang.cursor, tree.root_node)
    except Exception as exc:  # tree-sitter tolerates garbage; this guards our own walk
        lang.parser.reset()
        result.partial = f"extract error: {type(exc).__name__}: {exc}"[:200]
    result.identifiers = _identifiers(data, lang.keywords)
    return result


def _parse(parser: ts.Parser, data: bytes, deadline: float) -> ts.Tree | None:
    """The tree, or None when the budget ran out."""

    # The budget is only honoured for callable input, so bytes go through a read callable.
    def read(offset: int, _point: object) -> bytes:
        return data[offset : offset + _CHUNK]

    def cancel(_offset: int, _has_error: bool, clock: Callable[[], float] = time.monotonic) -> bool:
        return clock() > deadline

    try:
        tree = parser.parse(read, progress_callback=cancel)
    except ValueError:  # 0.26 raises "Parsing failed" for a cancelled parse
        if time.monotonic() > deadline:
            return None
        raise
    return tree


def _identifiers(data: bytes, keywords: frozenset[str]) -> set[str]:
    # latin-1 never fails and maps ASCII to itself, which is all the pattern matches.
    found = _WORD.findall(data.decode("latin-1"))
    names = set(found).difference(keywords)
    if len(names) > IDENTIFIER_LIMIT:  # keep the first-seen names so the cap is stable
        names = set(list(dict.fromkeys(n for n in found if n not in keywords))[:IDENTIFIER_LIMIT])
    return names


@dataclass(slots=True)
class _Def:
    start: int
    end: int
    kind: str
    name: str
    node: ts.Node
    value: ts.Node | None


class _Walk:
    """Turns query matches into symbols and imports for one file."""

    def __init__(self, data: bytes, result: Extract, call_imports: bool) -> None:
        self.data = data
        self.result = result
        self.call_imports = call_imports

    def text(self, node: ts.Node, limit: int) -> str:
        """At most ``limit`` bytes: a node can span a whole 1 MB file."""
        end = min(node.end_byte, node.start_byte + limit)
        return self.data[node.start_byte : end].decode("utf-8", errors="replace")

    def run(self, cursor: ts.QueryCursor, root: ts.Node) -> None:
        defs: list[_Def] = []
        for _pattern, caps in cursor.matches(root):
            kind = next((k[4:] for k in caps if k.startswith("def.")), None)
            if kind is not None:
                found = self.definition(kind, caps)
                if found is not None:
                    defs.append(found)
            else:
                self.imports(caps)
        self.symbols(defs)
        if self.call_imports:
            self.requires()
            self.result.imports.sort(key=lambda imp: imp.line)
        self.result.summary = self.summary(root)

    def definition(self, kind: str, caps: dict[str, list[ts.Node]]) -> _Def | None:
        node = caps[f"def.{kind}"][0]
        name = self.text(caps["name"][0], 200)
        if name == "_":  # Go's `var _ Iface = (*T)(nil)` defines nothing
            return None
        if kind == "impl" or "recv" in caps:
            owner = _type_name(self.text(caps["recv"][0], 200) if "recv" in caps else name)
            if kind == "impl":
                name = owner
            elif owner:
                name = f"{owner}.{name}"
        elif kind == "const" and "mods" in caps:  # Java: only static final fields are constants
            modifiers = self.text(caps["mods"][0], 400).split()
            if "static" not in modifiers or "final" not in modifiers:
                return None
        value = caps["value"][0] if "value" in caps else None
        return _Def(node.start_byte, node.end_byte, kind, name, node, value)

    def symbols(self, defs: list[_Def]) -> None:
        # Nesting from byte ranges: a stack of open definitions, no parent walks in Python.
        # At one range a function beats a const (`const f = () => {}` matches both patterns).
        defs.sort(key=lambda d: (d.start, -d.end, d.kind == "const"))
        stack: list[tuple[_Def, str | None]] = []  # (definition, qualified name or None if local)
        seen: set[str] = set()
        for item in defs:
            while stack and stack[-1][0].end <= item.start:
                stack.pop()
            outer, outer_name = stack[-1] if stack else (None, None)
            qualified: str | None = item.name
            if outer is not None:
                local = outer_name is None or outer.kind not in _CONTAINERS
                qualified = None if local else _qualify(outer_name or "", item.name)
            stack.append((item, qualified))
            if qualified is None or item.kind == "impl" or qualified in seen:
                continue
            seen.add(qualified)
            kind = item.kind
            if kind == "function" and outer is not None and outer.kind not in _NAMESPACES:
                kind = "method"
            self.result.symbols.append(self.symbol(item, qualified, kind, outer_name))
        for symbol in self.result.symbols:
            if symbol.parent is None and symbol.kind == "method" and "." in symbol.name:
                symbol.parent = symbol.name.rsplit(".", 1)[0]  # Go receiver
            if symbol.parent is not None and symbol.parent not in seen:
                symbol.parent = None  # e.g. a Rust impl or Go receiver of a type defined elsewhere

    def symbol(self, item: _Def, name: str, kind: str, parent: str | None) -> Symbol:
        node = item.node
        return Symbol(
            name=name,
            kind=kind,
            line=node.start_point[0] + 1,
            end_line=node.end_point[0] + 1,
            signature=self.signature(item),
            doc=self.doc(node),
            parent=parent,
        )

    def signature(self, item: _Def) -> str:
        node = item.node
        start = node.start_byte
        parent = node.parent
        # `const f = () =>` and a single-line Go `type S struct` read better from their wrapper.
        if (
            parent is not None
            and parent.type in _WRAPPERS
            and parent.type != "export_statement"
            and parent.start_point[0] == node.start_point[0]
        ):
            start = parent.start_byte
        prefix = "type " if node.type in _GO_SPECS and start == node.start_byte else ""
        body = (item.value or node).child_by_field_name("body")
        if body is not None and body.start_byte > start:
            end = min(body.start_byte, start + _SCAN)
            text = self.data[start:end].decode("utf-8", errors="replace")
        else:
            end = min(node.end_byte, start + _SCAN)
            text = self.data[start:end].decode("utf-8", errors="replace")
            brace = text.find("{")
            text = text[:brace] if brace > 0 else text
        line = prefix + _SPACE.sub(" ", text).strip().rstrip("{;").rstrip()
        return line if len(line) <= SIGNATURE_LIMIT else line[: SIGNATURE_LIMIT - 1] + "…"

    def doc(self, node: ts.Node) -> str:
        anchor: ts.Node | None = node
        for _ in range(3):  # the item, then wrappers such as `export` or a Go `type` group
            if anchor is None:
                break
            found = self.comment_above(anchor)
            if found:
                return found
            parent = anchor.parent
            anchor = parent if parent is not None and parent.type in _WRAPPERS else None
        return ""

    def comment_above(self, node: ts.Node) -> str:
        row = node.start_point[0]
        top: ts.Node | None = None
        sibling = node.prev_sibling
        while sibling is not None and (sibling.type in _COMMENTS or sibling.type in _SKIPPABLE):
            if _last_row(sibling) < row - 1:
                break
            if sibling.type in _COMMENTS:
                before = sibling.prev_sibling
                if before is not None and _last_row(before) == sibling.start_point[0]:
                    break  # a trailing comment of the previous statement
                top = sibling
            row = sibling.start_point[0]
            sibling = sibling.prev_sibling
        if top is None:
            return ""
        lines = [self.text(top, 2000)]
        following = top.next_sibling
        while following is not None and following.type in _COMMENTS and len(lines) < 8:
            lines.append(self.text(following, 2000))  # `///` docs: a first line may be blank
            following = following.next_sibling
        return _first_line("\n".join(lines))

    def summary(self, root: ts.Node) -> str:
        """The first leading comment that is not a licence header."""
        skipped = -2  # last row of a skipped comment block: `//` lines come one node each
        for index in range(min(root.child_count, 16)):
            child = root.child(index)
            if child is None or child.type == "hash_bang_line":
                continue
            if child.type not in _COMMENTS:
                return ""
            if child.start_point[0] > skipped + 1:
                line = _first_line(self.text(child, 2000))
                if line and not line.casefold().startswith(_NOT_SUMMARY):
                    return line
            skipped = _last_row(child)
        return ""

    def imports(self, caps: dict[str, list[ts.Node]]) -> None:
        if "import" in caps:
            self.string_import(caps)
        elif "modimport" in caps:
            node = caps["modimport"][0]
            name = self.text(node, 200)
            self.add(f"mod:{name}", node, (name,))
        elif "use" in caps:
            node = caps["use"][0]
            for path, leaf in _use_leaves(node, self.text):
                self.add(path, node, (leaf,))
        elif "crate" in caps:
            self.add(self.text(caps["crate"][0], 200), caps["crate"][0], ())
        elif "javaimport" in caps:
            self.java_import(caps["javaimport"][0])

    def requires(self) -> None:
        data = self.data
        found = sorted(
            (match.start(), match.group(2))
            for pattern in _REQUIRES
            for match in pattern.finditer(data)
            if match.start() == 0 or data[match.start() - 1] not in _NAME_BYTES  # not x.require
        )
        line, position = 1, 0
        for start, module in found:  # in order, so newlines are counted once
            line += data.count(b"\n", position, start)
            position = start
            self.result.imports.append(Import(module.decode("utf-8", errors="replace"), line))

    def add(self, module: str, node: ts.Node, names: tuple[str, ...]) -> None:
        if module:
            self.result.imports.append(Import(module, node.start_point[0] + 1, names))

    def string_import(self, caps: dict[str, list[ts.Node]]) -> None:
        """A JS/TS import or re-export (`stmt` holds the names), or a Go import spec."""
        source = caps["import"][0]
        names = self.js_names(caps["stmt"][0]) if "stmt" in caps else ()
        self.add(self.text(source, 1000).strip("'\"`"), source, names)

    def js_names(self, statement: ts.Node) -> tuple[str, ...]:
        """Imported names as written in the source module (``{a as b}`` gives ``a``)."""
        names: list[str] = []
        for clause in statement.named_children:
            if clause.type == "import_clause":
                for part in clause.named_children:
                    if part.type == "identifier":
                        names.append("default")
                    elif part.type == "namespace_import":
                        names.append("*")
                    elif part.type == "named_imports":
                        names.extend(self.specifiers(part))
            elif clause.type in ("export_clause", "named_imports"):
                names.extend(self.specifiers(clause))
            elif clause.type == "namespace_export":
                names.append("*")
        if statement.type == "export_statement" and not names:
            names.append("*")  # `export * from "x"`
        return tuple(names)

    def specifiers(self, clause: ts.Node) -> list[str]:
        found = []
        for spec in clause.named_children:
            name = spec.child_by_field_name("name")
            if name is not None:
                found.append(self.text(name, 200).strip("'\""))
        return found

    def java_import(self, node: ts.Node) -> None:
        path = ""
        wildcard = False
        for child in node.named_children:
            if child.type in ("scoped_identifier", "identifier"):
                path = _SPACE.sub("", self.text(child, 1000))
            elif child.type == "asterisk":
                wildcard = True
        if wildcard:
            self.add(path, node, ("*",))
        elif path:
            self.add(path, node, (path.rsplit(".", 1)[-1],))


def _qualify(outer: str, name: str) -> str:
    return name if name.startswith(outer + ".") else f"{outer}.{name}"


def _last_row(node: ts.Node) -> int:
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row  # `//` keeps its newline


def _type_name(text: str) -> str:
    """`*S[T]`, `Vec<T>`, `dyn Tr`, `crate::a::S` -> the bare type name."""
    text = text.strip().lstrip("(*&").removeprefix("mut ").removeprefix("dyn ").strip()
    text = _TYPE_END.split(text, maxsplit=1)[0]
    return text.rsplit("::", 1)[-1].rsplit(".", 1)[-1]


def _first_line(comment: str) -> str:
    for line in comment.splitlines():
        cleaned = _COMMENT_EDGE.sub("", line).strip()
        cleaned = _COMMENT_EDGE.sub("", cleaned).strip()  # `/** text */` on one line
        if _HAS_WORD.search(cleaned):  # not a `// ------` ruler
            return cleaned[:SIGNATURE_LIMIT]
    return ""


def _use_leaves(node: ts.Node, text: Callable[..., str], prefix: str = "") -> list[tuple[str, str]]:
    """Flatten a Rust use tree into (full path, leaf name) pairs."""
    kind = node.type
    if kind == "use_list":
        leaves: list[tuple[str, str]] = []
        for child in node.named_children:
            leaves.extend(_use_leaves(child, text, prefix))
        return leaves
    if kind == "scoped_use_list":
        path = node.child_by_field_name("path")
        inner = prefix if path is None else _join(prefix, _SPACE.sub("", text(path, 1000)))
        body = node.child_by_field_name("list")
        return [] if body is None else _use_leaves(body, text, inner)
    if kind == "use_as_clause":
        path = node.child_by_field_name("path")
        return [] if path is None else _use_leaves(path, text, prefix)
    if kind == "use_wildcard":
        written = _SPACE.sub("", text(node, 1000)).removesuffix("*").removesuffix("::")
        return [(_join(prefix, written), "*")]
    full = _join(prefix, _SPACE.sub("", text(node, 1000)))
    return [(full, full.rsplit("::", 1)[-1])]


def _join(prefix: str, path: str) -> str:
    if not prefix:
        return path
    return prefix if path in ("", "self") else f"{prefix}::{path}"
