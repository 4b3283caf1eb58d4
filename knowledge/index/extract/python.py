"""Python symbols and imports from a tree-sitter parse.

tree-sitter parses about twice as fast as `ast` and never raises: a file with syntax errors
gives what it recovers (symbols included) and is marked partial. Only statements are walked,
as `ast` would see them: a def or class, its body, and the blocks of compound statements
(if/for/while/try/with); never expressions. Identifiers come from a regex over the source:
walking every expression node costs more than the parse itself.
"""

from __future__ import annotations

import ast
import inspect
import re

import tree_sitter as ts

from knowledge.index.model import Extract, Import, Symbol

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_SPACE = re.compile(r"\s+")
_CONST = re.compile(r"^_?[A-Z][A-Z0-9_]*$")
# A string literal without prefix, escapes, tabs or carriage returns (most docstrings): its
# value is its text between the quotes (`ast.literal_eval` and `cleandoc` cost a fifth of
# extracting a file's symbols).
_PLAIN = re.compile(
    r'"""[^"\\\t\r]*"""|\'\'\'[^\'\\\t\r]*\'\'\'|"[^"\\\t\r\n]*"|\'[^\'\\\t\r\n]*\''
)
_MAX_SIGNATURE = 160
_MAX_IDENTIFIERS = 4000
_DEFINITIONS = frozenset({"function_definition", "class_definition"})
_IMPORTS = frozenset({"import_statement", "import_from_statement", "future_import_statement"})
# Statements whose blocks hold statements `ast` walks (`match` cases it does not), and the
# clauses that hold their other blocks.
_COMPOUND = frozenset(
    {"if_statement", "for_statement", "while_statement", "try_statement", "with_statement"}
)
_CLAUSES = frozenset({"elif_clause", "else_clause", "except_clause", "except_group_clause"})
# What ends with a block (the statements and clauses that hold one, and the block itself).
_HOLDERS = (
    _DEFINITIONS
    | _COMPOUND
    | _CLAUSES
    | {
        "block",
        "decorated_definition",
        "finally_clause",
        "match_statement",
        "case_clause",
    }
)
# The statements that define, import or hold statements (and module-level expressions).
_WALKED = _DEFINITIONS | _IMPORTS | _COMPOUND | {"decorated_definition", "ERROR"}
_WALKED_AT_TOP = _WALKED | {"expression_statement"}  # and the module's constants
_PARSER: list[ts.Parser] = []  # one per process, made on first use


def _parser() -> ts.Parser:
    if not _PARSER:
        import tree_sitter_python

        _PARSER.append(ts.Parser(ts.Language(tree_sitter_python.language())))
    return _PARSER[0]


def extract(data: bytes) -> Extract:
    out = Extract(language="python", lines=data.count(b"\n") + 1)
    source = data.removeprefix(b"\xef\xbb\xbf")  # a BOM is no code; offsets past it stay
    root = _parser().parse(source).root_node
    if root.has_error:
        out.partial = "parse error: syntax errors (what parsed is kept)"
    lines = data.decode("utf-8", errors="replace").splitlines()
    out.summary = _doc_line(root)
    _Walk(lines, out).block(root, None)
    # latin-1 never fails and keeps ASCII, all the pattern matches: no decode per name.
    out.identifiers = set(_IDENT.findall(data.decode("latin-1"))[: _MAX_IDENTIFIERS * 4])
    if len(out.identifiers) > _MAX_IDENTIFIERS:
        out.identifiers = set(sorted(out.identifiers)[:_MAX_IDENTIFIERS])
    return out


class _Walk:
    """Statements in the order `ast` lists them."""

    def __init__(self, lines: list[str], out: Extract) -> None:
        self.lines = lines
        self.out = out

    def block(self, node: ts.Node, parent: Symbol | None) -> None:
        """Depth first, as `ast` is walked: what a statement holds comes before the next
        statement. A stack, not recursion: nesting is as deep as the file makes it."""
        stack = _walked(node, parent)
        while stack:
            stmt, owner = stack.pop()
            for block, holder in reversed(self.statement(stmt, owner)):
                stack += _walked(block, holder)

    def statement(
        self, stmt: ts.Node, parent: Symbol | None
    ) -> list[tuple[ts.Node, Symbol | None]]:
        """What `stmt` defines or imports; the blocks it holds, in `ast`'s order, with the
        symbol they belong to."""
        kind = stmt.type
        if kind in _DEFINITIONS or kind == "decorated_definition":
            definition = stmt if kind in _DEFINITIONS else stmt.child_by_field_name("definition")
            if definition is None:
                return []
            body = definition.child_by_field_name("body")
            symbol = self.symbol(definition, stmt, body, parent)
            self.out.symbols.append(symbol)
            return [(body, symbol)] if body is not None else []
        if kind in _IMPORTS:
            self.imports(stmt)
        elif kind == "expression_statement" and parent is None:
            self.constants(stmt)
        elif kind in _COMPOUND:
            return [(b, parent) for b in _blocks(stmt)]
        elif kind == "ERROR":  # what tree-sitter could not place: its statements still count
            return [(stmt, parent)]
        return []

    def symbol(
        self, node: ts.Node, outer: ts.Node, body: ts.Node | None, parent: Symbol | None
    ) -> Symbol:
        if node.type == "class_definition":
            kind = "class"
        else:
            kind = "method" if parent is not None and parent.kind == "class" else "function"
        name_node = node.child_by_field_name("name")
        name = _text(name_node) if name_node is not None else ""
        first = _first_statement(body) if body is not None else None
        return Symbol(
            name=f"{parent.name}.{name}" if parent else name,
            kind=kind,
            line=outer.start_point.row + 1,
            end_line=_last_line(node),
            signature=self.header(node, first),
            doc=_docstring(first),
            parent=parent.name if parent else None,
        )

    def header(self, node: ts.Node, first: ts.Node | None) -> str:
        """The `def`/`class` line(s) up to the colon that opens the body (whose first
        statement is `first`), without comments, whitespace collapsed."""
        line = node.start_point.row + 1
        if first is not None and first.type == "decorated_definition":
            first = first.child_by_field_name("definition") or first
        at = first.start_point.row + 1 if first is not None else line
        stop = at - 1 if at > line else line
        header = self.lines[line - 1 : max(stop, line)]
        if first is not None and at == line and header:  # one-liner: `def f(x): return x`
            header = [header[0].encode()[: first.start_point.column].decode(errors="ignore")]
        parts = []
        for text in header:
            code = _strip_comment(text).rstrip()
            if code:
                parts.append(code)
            if code.endswith(":"):
                break
        text = _SPACE.sub(" ", " ".join(parts)).strip().removesuffix(":")
        return text.replace("( ", "(")[:_MAX_SIGNATURE]

    def imports(self, stmt: ts.Node) -> None:
        line = stmt.start_point.row + 1
        names = [_dotted(_unaliased(n)) for n in stmt.children_by_field_name("name")]
        if stmt.type == "import_statement":
            self.out.imports.extend(Import(name, line) for name in names)
            return
        module, level = "", 0
        found = stmt.child_by_field_name("module_name")
        if stmt.type == "future_import_statement":
            module = "__future__"
        elif found is not None and found.type == "relative_import":
            for part in found.named_children:
                if part.type == "import_prefix":
                    level = _text(part).count(".")
                else:
                    module = _dotted(part)
        elif found is not None:
            module = _dotted(found)
        self.out.imports.append(Import(module, line, tuple(names), level))

    def constants(self, stmt: ts.Node) -> None:
        line = stmt.start_point.row + 1
        for child in stmt.named_children:
            node: ts.Node | None = child
            while node is not None and node.type == "assignment":  # `A = B = 1`: both
                target = node.child_by_field_name("left")
                if target is not None and target.type == "identifier":
                    name = _text(target)
                    if _CONST.match(name):
                        text = self.lines[line - 1] if line <= len(self.lines) else name
                        self.out.symbols.append(
                            Symbol(
                                name=name,
                                kind="const",
                                line=line,
                                end_line=stmt.end_point.row + 1,
                                signature=_SPACE.sub(" ", text).strip()[:_MAX_SIGNATURE],
                            )
                        )
                node = node.child_by_field_name("right")


def _walked(block: ts.Node, owner: Symbol | None) -> list[tuple[ts.Node, Symbol | None]]:
    """The statements of `block` with something to find, last first (to pop in order): most
    statements in a body are skipped here, with no call made for them."""
    walked = _WALKED if owner is not None else _WALKED_AT_TOP
    return [(stmt, owner) for stmt in reversed(block.named_children) if stmt.type in walked]


def _blocks(stmt: ts.Node) -> list[ts.Node]:
    """A compound statement's blocks in `ast`'s order: its body and else branches, its
    `finally`, then its `except` handlers."""
    blocks, handlers, last = [], [], []
    for child in stmt.named_children:
        if child.type == "block":
            blocks.append(child)
        elif child.type in _CLAUSES or child.type == "finally_clause":
            found = [c for c in child.named_children if c.type == "block"]
            if child.type.startswith("except"):
                handlers.extend(found)
            elif child.type == "finally_clause":
                last.extend(found)
            else:
                blocks.extend(found)
    return blocks + last + handlers


def _last_line(node: ts.Node) -> int:
    """Where `ast` ends a statement: at its last statement's end, not at the comments that
    tree-sitter puts at the end of the blocks they follow."""
    while node.type in _HOLDERS:
        last = None
        for i in range(node.named_child_count - 1, -1, -1):
            child = node.named_child(i)
            if child is not None and child.type != "comment":
                last = child
                break
        if last is None:
            break
        node = last
    return node.end_point.row + 1


def _first_statement(block: ts.Node) -> ts.Node | None:
    for child in block.named_children:
        if child.type != "comment":
            return child
    return None


def _doc_line(block: ts.Node) -> str:
    """The first line of `ast.get_docstring(node, clean=True)` of the module or body
    `block`: what a summary keeps of it."""
    return _docstring(_first_statement(block))


def _docstring(first: ts.Node | None) -> str:
    """`_doc_line` of the block whose first statement is `first`."""
    if first is None or first.type != "expression_statement" or first.named_child_count != 1:
        return ""
    string = first.named_children[0]
    if string.type not in ("string", "concatenated_string"):
        return ""
    text = _text(string)
    if _PLAIN.fullmatch(text):  # the text is the value: cleaning changes no line's content
        quote = 3 if text.startswith(('"""', "'''")) else 1
        return _first_line(text[quote:-quote])
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return ""  # an f-string, or a literal Python itself would not take
    return _first_line(inspect.cleandoc(value)) if isinstance(value, str) else ""


def _unaliased(node: ts.Node) -> ts.Node:
    """`a.b` of `a.b as c`."""
    if node.type == "aliased_import":
        return node.child_by_field_name("name") or node
    return node


def _dotted(node: ts.Node) -> str:
    return _text(node).replace(" ", "")


def _text(node: ts.Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def _strip_comment(line: str) -> str:
    if "#" not in line:  # most lines: no character to look at one by one
        return line
    quote = ""
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#":
            return line[:i]
    return line


def _first_line(doc: str | None) -> str:
    if not doc:
        return ""
    for line in doc.splitlines():
        if line.strip():
            return line.strip()[:_MAX_SIGNATURE]
    return ""
