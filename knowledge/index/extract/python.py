"""Python symbols and imports with the standard `ast` module.

`ast.parse` is given bytes so the coding cookie and BOM are honoured; it can raise far more
than SyntaxError on hostile input, so every failure becomes a partial extract, never a crash.
Identifiers come from a regex over the source: walking every expression node costs more than
the parse itself.
"""

from __future__ import annotations

import ast
import re

from knowledge.index.model import Extract, Import, Symbol

_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]{2,}")
_SPACE = re.compile(r"\s+")
_CONST = re.compile(r"^_?[A-Z][A-Z0-9_]*$")
_MAX_SIGNATURE = 160
_MAX_IDENTIFIERS = 4000
_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeError, OverflowError)


def extract(data: bytes) -> Extract:
    out = Extract(language="python", lines=data.count(b"\n") + 1)
    try:
        tree = ast.parse(data)
    except _PARSE_ERRORS as exc:
        out.partial = f"parse error: {type(exc).__name__}"
        return out
    lines = data.decode("utf-8", errors="replace").splitlines()
    out.summary = _first_line(ast.get_docstring(tree, clean=True))
    try:
        _collect(tree.body, None, lines, out)
    except RecursionError:
        out.partial = "nesting too deep"
    out.identifiers = {m.decode() for m in _IDENT.findall(data)[: _MAX_IDENTIFIERS * 4]}
    if len(out.identifiers) > _MAX_IDENTIFIERS:
        out.identifiers = set(sorted(out.identifiers)[:_MAX_IDENTIFIERS])
    return out


def _collect(body: list[ast.stmt], parent: Symbol | None, lines: list[str], out: Extract) -> None:
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            symbol = _symbol(stmt, parent, lines)
            out.symbols.append(symbol)
            _collect(stmt.body, symbol, lines, out)
        elif isinstance(stmt, ast.Import):
            out.imports.extend(Import(a.name, stmt.lineno) for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            names = tuple(a.name for a in stmt.names if a.name != "*")
            out.imports.append(Import(stmt.module or "", stmt.lineno, names, stmt.level))
        elif parent is None and isinstance(stmt, ast.Assign | ast.AnnAssign):
            out.symbols.extend(_constants(stmt, lines))
        else:
            # Imports guarded by if/try/with at module level still count.
            for attr in ("body", "orelse", "finalbody"):
                nested = getattr(stmt, attr, None)
                if isinstance(nested, list):
                    _collect(nested, parent, lines, out)
            for handler in getattr(stmt, "handlers", ()) or ():
                _collect(handler.body, parent, lines, out)


def _symbol(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
    parent: Symbol | None,
    lines: list[str],
) -> Symbol:
    if isinstance(node, ast.ClassDef):
        kind = "class"
    else:
        kind = "method" if parent is not None and parent.kind == "class" else "function"
    qualname = f"{parent.name}.{node.name}" if parent else node.name
    first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    return Symbol(
        name=qualname,
        kind=kind,
        line=first,
        end_line=node.end_lineno or node.lineno,
        signature=_header(node, lines),
        doc=_first_line(ast.get_docstring(node, clean=True)),
        parent=parent.name if parent else None,
    )


def _header(node: ast.stmt, lines: list[str]) -> str:
    """The `def`/`class` line(s) up to the colon that opens the body, without comments,
    whitespace collapsed."""
    body = getattr(node, "body", None)
    stop = body[0].lineno - 1 if body and body[0].lineno > node.lineno else node.lineno
    header = lines[node.lineno - 1 : max(stop, node.lineno)]
    if body and body[0].lineno == node.lineno and header:  # one-liner: `def f(x): return x`
        raw = header[0].encode()[: body[0].col_offset].decode(errors="ignore")
        header = [raw]
    parts = []
    for line in header:
        code = _strip_comment(line).rstrip()
        if code:
            parts.append(code)
        if code.endswith(":"):
            break
    text = _SPACE.sub(" ", " ".join(parts)).strip().removesuffix(":")
    return text.replace("( ", "(")[:_MAX_SIGNATURE]


def _strip_comment(line: str) -> str:
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


def _constants(stmt: ast.Assign | ast.AnnAssign, lines: list[str]) -> list[Symbol]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    found = []
    for target in targets:
        if isinstance(target, ast.Name) and _CONST.match(target.id):
            line = lines[stmt.lineno - 1] if stmt.lineno <= len(lines) else target.id
            found.append(
                Symbol(
                    name=target.id,
                    kind="const",
                    line=stmt.lineno,
                    end_line=stmt.end_lineno or stmt.lineno,
                    signature=_SPACE.sub(" ", line).strip()[:_MAX_SIGNATURE],
                )
            )
    return found


def _first_line(doc: str | None) -> str:
    if not doc:
        return ""
    for line in doc.splitlines():
        if line.strip():
            return line.strip()[:_MAX_SIGNATURE]
    return ""
