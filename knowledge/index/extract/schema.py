"""Schema extractors: Prisma models and SQL DDL become tables, columns and foreign keys.

Both are hand-written scanners, not grammars: schema files in the wild are partial, dialect-mixed
or huge dumps, and the index needs linear time and no exceptions more than it needs rigour.

Over 400 lines: two hand-written scanners (Prisma, SQL DDL) with their dialect cases.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from knowledge.index.model import Column, Extract, Symbol, Table

# ---------------------------------------------------------------------------------------------
# Prisma

_PRISMA_BLOCK = re.compile(r"\s*(model|view|enum|type|datasource|generator)\s+(\w+)\s*\{")
_PRISMA_FIELD = re.compile(r"\s*(\w+)\s+(\w+(?:\([^)]*\))?(?:\[\])?\??)")
_PRISMA_MAP = re.compile(r'@@map\(\s*(?:name:\s*)?"([^"]*)"')
_PRISMA_LIST = re.compile(r"\b(fields|references)\s*:\s*\[([^\]]*)\]")


@dataclass(slots=True)
class _Block:
    kind: str
    name: str
    line: int  # 1-based
    end_line: int = 0
    body: list[tuple[int, str]] = field(default_factory=list)  # (line, comment-free text)
    doc: str = ""  # the `///` comment right above the block


def extract_prisma(data: bytes) -> Extract:
    lines = _lines(data.decode("utf-8-sig", errors="replace"))
    result = Extract(language="prisma", lines=len(lines))
    for block in _prisma_blocks(lines, result):
        if block.kind in ("model", "view"):
            result.tables.append(_prisma_table(block))
        elif block.kind in ("enum", "type"):
            result.symbols.append(_prisma_symbol(block))
    return result


def _prisma_blocks(lines: list[str], result: Extract) -> Iterator[_Block]:
    """Top-level blocks with their comment-free, non-empty body lines."""
    doc: list[str] = []
    block: _Block | None = None
    for number, raw in enumerate(lines, start=1):
        text = _strip_prisma_comment(raw).strip()
        if block is not None:
            if text.startswith("}"):
                block.end_line = number
                yield block
                block = None
            elif text:
                block.body.append((number, text))
            continue
        header = _PRISMA_BLOCK.match(text)
        if header:
            block = _Block(header[1], header[2], number, doc=" ".join(doc))
            if text.endswith("}"):  # `enum Empty {}`
                block.end_line = number
                yield block
                block = None
        stripped = raw.strip()
        doc = [*doc, stripped[3:].strip()] if stripped.startswith("///") else []
    if block is not None:
        block.end_line = len(lines)
        result.partial = f"unclosed {block.kind} {block.name}"
        yield block


def _prisma_symbol(block: _Block) -> Symbol:
    """An enum, or a composite `type` (MongoDB), as a symbol: neither is a table."""
    if block.kind == "enum":
        values = [text.split()[0] for _, text in block.body if text[0] != "@"]
        signature = _enum_signature(block.name, values)
    else:
        signature = f"type {block.name}"
    return Symbol(
        name=block.name,
        kind=block.kind,
        line=block.line,
        end_line=block.end_line,
        signature=signature,
        doc=block.doc,
    )


def _strip_prisma_comment(line: str) -> str:
    """The line without its `//` comment; `//` inside a string literal (URLs) is kept."""
    if "//" not in line:
        return line
    in_string = False
    index = 0
    while index < len(line):
        char = line[index]
        if in_string and char == "\\":
            index += 1  # skip the escaped character
        elif char == '"':
            in_string = not in_string
        elif not in_string and line.startswith("//", index):
            return line[:index]
        index += 1
    return line


def _prisma_table(block: _Block) -> Table:
    table = Table(name=block.name, line=block.line, end_line=block.end_line)
    summary = [block.doc] if block.doc else []
    references: dict[str, tuple[str, str]] = {}
    for number, text in block.body:
        if text.startswith("@@"):
            mapped = _PRISMA_MAP.match(text)
            if mapped:
                summary.append(f'mapped to "{mapped[1]}"')
            continue
        parsed = _PRISMA_FIELD.match(text)
        if not parsed:
            continue
        name, type_ = parsed[1], parsed[2]
        table.columns.append(Column(name=name, type=type_, line=number))
        references.update(_prisma_relation(type_, text[parsed.end() :]))
    # The foreign key lives on the scalar field, which may be declared before or after the
    # relation field that names it.
    for column in table.columns:
        column.references = references.get(column.name)
    table.summary = "; ".join(summary)
    return table


def _prisma_relation(type_: str, attributes: str) -> dict[str, tuple[str, str]]:
    """{scalar field: (model, field)} from `@relation(fields: [...], references: [...])`."""
    start = attributes.find("@relation(")
    if start < 0:
        return {}
    lists = {key: value for key, value in _PRISMA_LIST.findall(attributes[start:])}
    fields = [name.strip() for name in lists.get("fields", "").split(",") if name.strip()]
    targets = [name.strip() for name in lists.get("references", "").split(",") if name.strip()]
    model = type_.rstrip("?").removesuffix("[]")
    return {source: (model, target) for source, target in zip(fields, targets, strict=False)}


# ---------------------------------------------------------------------------------------------
# SQL

# One token and the whitespace/comments before it. No alternative can fail after the skip (`.`
# or the end always matches), so nothing backtracks: the scan is linear. Strings honour
# backslash escapes: MySQL dumps are full of `\'`, while a standard Postgres string only
# desynchronises if it ends in an odd backslash.
_SQL_TOKEN = re.compile(
    r"""
    (?:\s+|--[^\n]*|/\*.*?(?:\*/|\Z))*
    (?:
      (?P<string>[EeNnXxBb]?'[^'\\]*(?:(?:''|\\.)[^'\\]*)*'?)
    | (?P<ident>"[^"]*(?:""[^"]*)*"?|`[^`]*(?:``[^`]*)*`?|\[(?!\d*\])[^\]\n]*\]?)
    | (?P<dollar>\$(?:[A-Za-z_]\w*)?\$)
    | (?P<word>[^\W\d]\w*)
    | (?P<number>\d+(?:\.\d+)?)
    | (?P<punct>.)
    | (?P<end>\Z)
    )
    """,
    re.VERBOSE | re.DOTALL,
)

# Words that end a column's type and start its constraints.
_COLUMN_CONSTRAINTS = frozenset(
    {"NOT", "NULL", "PRIMARY", "REFERENCES", "DEFAULT", "UNIQUE", "CHECK", "CONSTRAINT"}
    | {"COLLATE", "GENERATED", "AUTO_INCREMENT", "AUTOINCREMENT", "IDENTITY", "COMMENT", "AS", "ON"}
)
_TIGHT = frozenset("()[].,")  # punctuation rendered without spaces in a column type
_INDEX_WORDS = frozenset(["INDEX", "KEY", "FULLTEXT", "SPATIAL"])
# The statements that declare schema, and COPY, whose inline data must be skipped whole.
_STATEMENTS = frozenset(["CREATE", "ALTER", "COMMENT", "COPY"])
_LINE_END = re.compile(r"[ \t]*(?:\r?\n|\Z)")
_COPY_END = re.compile(r"^\\\.\r?$", re.MULTILINE)
_CREATE_MODIFIERS = frozenset(["OR", "REPLACE", "GLOBAL", "LOCAL", "TEMP", "TEMPORARY", "UNLOGGED"])


class _Token(NamedTuple):
    kind: str  # word, ident (quoted identifier), string, number, punct
    text: str  # identifiers unquoted
    line: int


_END = _Token("end", "", 0)  # returned past the end of a statement, so lookahead never raises


@dataclass(slots=True)
class _SqlState:
    result: Extract
    tables: dict[str, Table] = field(default_factory=dict)  # by case-folded name
    primary_keys: dict[str, str] = field(default_factory=dict)  # table -> single PK column
    unresolved: list[tuple[Column, str]] = field(default_factory=list)  # REFERENCES t (no col)
    # (table, column) case-folded -> Column: FK lookups stay O(1) on wide tables.
    columns: dict[tuple[str, str], Column] = field(default_factory=dict)


def extract_sql(data: bytes) -> Extract:
    text = data.decode("utf-8-sig", errors="replace")
    # Counted, not split: a dump can be large and only its line count is needed here.
    lines = text.count("\n") + (not text.endswith("\n") and text != "")
    state = _SqlState(Extract(language="sql", lines=lines))
    for statement in _sql_statements(text):
        _sql_statement(statement, state)
    # `REFERENCES users` without a column means the referenced table's primary key.
    for column, table in state.unresolved:
        column.references = (table, state.primary_keys.get(table.casefold(), ""))
    state.result.tables = list(state.tables.values())
    return state.result


def _sql_statements(text: str) -> Iterator[list[_Token]]:
    """Statements that may declare schema, as token lists without comments. Linear in the input.

    Other statements (INSERT rows of a dump, mostly) are scanned for their end but not kept.
    A statement ends at `;`, at a T-SQL `GO` line, or where a top-level CREATE starts the next
    one (T-SQL scripts often leave out the `;`).
    """
    statement: list[_Token] = []
    wanted: bool | None = None  # decided by the statement's first token
    depth = 0  # parenthesis depth inside the statement
    line, position = 1, 0
    while position < len(text):
        match = _SQL_TOKEN.match(text, position)
        assert match is not None  # the last alternative matches any character
        kind = match.lastgroup or "end"
        start, end = match.span(kind)
        value = match[kind]
        newlines_before = text.count("\n", position, start)
        line += newlines_before
        if kind == "dollar":
            # Postgres $tag$ ... $tag$ body: a plain find keeps it linear, even unterminated.
            close = text.find(value, end)
            end = len(text) if close < 0 else close + len(value)
            kind, value = "string", text[start:end]
        upper = value.upper() if kind == "word" else ""
        separator = (kind == "punct" and value == ";") or (
            upper == "GO" and (newlines_before > 0 or start == 0) and _line_ends(text, end)
        )
        if separator or (upper == "CREATE" and depth == 0):
            if _is_copy_from_stdin(statement):
                end = _copy_data_end(text, end)  # its rows follow, unquoted: never tokenize them
            elif statement:
                yield statement
            statement, wanted, depth = [], None, 0
        if kind == "punct":
            depth = max(depth + {"(": 1, ")": -1}.get(value, 0), 0)
        if kind != "end" and not separator:
            if wanted is None:
                wanted = upper in _STATEMENTS
            if wanted:
                statement.append(_Token(kind, _unquote(value) if kind == "ident" else value, line))
        line += text.count("\n", start, end)
        position = end
    if statement and not _is_copy_from_stdin(statement):
        yield statement


def _line_ends(text: str, index: int) -> bool:
    """Whether only spaces follow index on its line."""
    return _LINE_END.match(text, index) is not None


def _is_copy_from_stdin(statement: list[_Token]) -> bool:
    return bool(statement) and _is(statement[0], "COPY") and any(_is(t, "STDIN") for t in statement)


def _copy_data_end(text: str, index: int) -> int:
    """Index after the `\\.` line that ends pg_dump COPY rows starting after index."""
    match = _COPY_END.search(text, index)
    return match.end() if match else len(text)


def _unquote(value: str) -> str:
    quote, close = value[0], {"[": "]"}.get(value[0], value[0])
    inner = value[1:-1] if len(value) > 1 and value.endswith(close) else value[1:]
    return inner.replace(quote * 2, quote) if quote != "[" else inner


def _is(token: _Token, *words: str) -> bool:
    return token.kind == "word" and token.text.upper() in words


def _is_name(token: _Token) -> bool:
    return token.kind in ("word", "ident")


def _is_punct(token: _Token, char: str) -> bool:
    return token.kind == "punct" and token.text == char


def _sql_statement(tokens: list[_Token], state: _SqlState) -> None:
    first = _at(tokens, 0)
    if _is(first, "CREATE"):
        index = 1
        while _is(_at(tokens, index), *_CREATE_MODIFIERS):
            index += 1
        if _is(_at(tokens, index), "TABLE"):
            _create_table(tokens, index + 1, state)
        elif _is(_at(tokens, index), "TYPE"):
            _create_enum(tokens, index + 1, state)
    elif _is(first, "ALTER") and _is(_at(tokens, 1), "TABLE"):
        _alter_table(tokens, 2, state)
    elif _is(first, "COMMENT") and _is(_at(tokens, 1), "ON") and _is(_at(tokens, 2), "TABLE"):
        _comment_on_table(tokens, 3, state)


def _at(tokens: list[_Token], index: int) -> _Token:
    return tokens[index] if 0 <= index < len(tokens) else _END


def _qualified_name(tokens: list[_Token], index: int) -> tuple[str, str, int]:
    """(name, schema-qualified name, index after it) of `a.b.c`; name is "" when absent."""
    parts: list[str] = []
    while _is_name(_at(tokens, index)):
        parts.append(tokens[index].text)
        index += 1
        if not _is_punct(_at(tokens, index), "."):
            break
        index += 1
    return (parts[-1] if parts else ""), ".".join(parts), index


def _skip_if(tokens: list[_Token], index: int, *words: str) -> int:
    """Index after the keyword run `words` (e.g. IF NOT EXISTS) if it is there, else index."""
    for offset, word in enumerate(words):
        if not _is(_at(tokens, index + offset), word):
            return index
    return index + len(words)


def _group(tokens: list[_Token], index: int) -> tuple[list[_Token], int]:
    """Tokens inside the parenthesis group opening at index, and the index after it."""
    if not _is_punct(_at(tokens, index), "("):
        return [], index
    depth = 0
    for position in range(index, len(tokens)):
        token = tokens[position]
        if token.kind == "punct" and token.text in "()":
            depth += 1 if token.text == "(" else -1
            if depth == 0:
                return tokens[index + 1 : position], position + 1
    return tokens[index + 1 :], len(tokens)  # unbalanced: take the rest


def _split_commas(tokens: list[_Token]) -> list[list[_Token]]:
    """Split on commas outside parentheses: `NUMERIC(10,2)` stays one element."""
    parts: list[list[_Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.kind == "punct":
            if token.text == "(":
                depth += 1
            elif token.text == ")":
                depth = max(depth - 1, 0)
            elif token.text == "," and depth == 0:
                parts.append([])
                continue
        parts[-1].append(token)
    return [part for part in parts if part]


def _names(tokens: list[_Token]) -> list[str]:
    """Column names of a list like `(a, "b" DESC)`: the first name of each element."""
    return [part[0].text for part in _split_commas(tokens) if _is_name(part[0])]


def _table(state: _SqlState, name: str, line: int) -> Table:
    """The table called name, created at line if this file has not seen it."""
    key = name.casefold()
    if key not in state.tables:
        state.tables[key] = Table(name=name, line=line, end_line=line)
    return state.tables[key]


def _create_table(tokens: list[_Token], index: int, state: _SqlState) -> None:
    index = _skip_if(tokens, index, "IF", "NOT", "EXISTS")
    name, qualified, index = _qualified_name(tokens, index)
    if not name or _is(_at(tokens, index), "USING"):
        return  # garbage, or an SQLite virtual table whose columns belong to its module
    table = _table(state, name, tokens[0].line)
    table.line, table.end_line = tokens[0].line, tokens[-1].line
    if qualified != name:
        table.summary = qualified
    body, _ = _group(tokens, index)
    for element in _split_commas(body):
        if _is_table_constraint(element):
            _table_constraint(element, table, state)
        else:
            _column(element, table, state)


def _is_table_constraint(element: list[_Token]) -> bool:
    head, after = element[0], _at(element, 1)
    if head.kind != "word":
        return False  # a quoted name is always a column
    word = head.text.upper()
    if word in ("PRIMARY", "FOREIGN"):
        return _is(after, "KEY")
    if word in ("UNIQUE", "CHECK", "EXCLUDE"):
        return _is_punct(after, "(") or _is(after, "KEY", "INDEX", "USING")
    if word in _INDEX_WORDS:
        # MySQL `KEY idx (col)` versus a column named key: `key VARCHAR(20)`.
        if _is_punct(after, "("):
            return True
        return (
            _is_name(after) and _is_punct(_at(element, 2), "(") and _at(element, 3).kind != "number"
        )
    return word in ("CONSTRAINT", "LIKE") and _is_name(after)


def _column(element: list[_Token], table: Table, state: _SqlState) -> None:
    head = element[0]
    if not _is_name(head):
        return
    type_parts: list[str] = []
    index = 1
    while index < len(element) and not _is(element[index], *_COLUMN_CONSTRAINTS):
        type_parts.append(element[index].text)
        index += 1
    column = _find_column(table, head.text, head.line, state)
    column.type = _render_type(type_parts)
    # Each token is visited once (groups are jumped over), so a garbage element stays linear.
    while index < len(element):
        token = element[index]
        if _is_punct(token, "("):
            index = _group(element, index)[1]
            continue
        if _is(token, "PRIMARY") and _is(_at(element, index + 1), "KEY"):
            state.primary_keys[table.name.casefold()] = column.name
        elif _is(token, "REFERENCES"):
            index = _reference(element, index + 1, [column], state)
            continue
        index += 1


def _render_type(parts: list[str]) -> str:
    """`NUMERIC ( 10 , 2 )` -> `NUMERIC(10,2)`; words keep one space between them."""
    rendered = ""
    for part in parts:
        glue = rendered and rendered[-1] not in "([.," and part not in _TIGHT
        rendered += " " + part if glue else part
    return rendered


def _table_constraint(element: list[_Token], table: Table, state: _SqlState) -> None:
    index = 2 if _is(element[0], "CONSTRAINT") else 0
    if _is(_at(element, index), "PRIMARY") and _is(_at(element, index + 1), "KEY"):
        keys = _names(_group(element, index + 2)[0])
        if len(keys) == 1:
            state.primary_keys[table.name.casefold()] = keys[0]
    elif _is(_at(element, index), "FOREIGN") and _is(_at(element, index + 1), "KEY"):
        sources, after = _group(element, index + 2)
        if _is(_at(element, after), "REFERENCES"):
            line = element[0].line
            columns = [_find_column(table, name, line, state) for name in _names(sources)]
            _reference(element, after + 1, columns, state)


def _find_column(table: Table, name: str, line: int, state: _SqlState) -> Column:
    """The named column, added if new: a FK on a column declared in another file still counts."""
    key = (table.name.casefold(), name.casefold())
    if key not in state.columns:
        state.columns[key] = Column(name=name, line=line)
        table.columns.append(state.columns[key])
    return state.columns[key]


def _reference(tokens: list[_Token], index: int, columns: list[Column], state: _SqlState) -> int:
    """Parse `other [(a, b)]` at index, point columns at it pairwise; the index after it."""
    target, _, index = _qualified_name(tokens, index)
    if not target:
        return index
    group, after = _group(tokens, index)
    targets = _names(group)
    if not targets:
        state.unresolved.extend((column, target) for column in columns)
    for column, target_column in zip(columns, targets, strict=False):
        column.references = (target, target_column)
    return after


def _alter_table(tokens: list[_Token], index: int, state: _SqlState) -> None:
    index = _skip_if(tokens, index, "IF", "EXISTS")
    index = _skip_if(tokens, index, "ONLY")
    name, _, index = _qualified_name(tokens, index)
    index = _skip_if(tokens, index, "WITH", "CHECK")  # T-SQL: validate existing rows
    index = _skip_if(tokens, index, "WITH", "NOCHECK")
    added = [clause[1:] for clause in _split_commas(tokens[index:]) if _is(clause[0], "ADD")]
    if not name or not any(added):
        return  # only ADD declares anything; a table only renamed or dropped from stays out
    table = _table(state, name, tokens[0].line)
    for element in filter(None, added):
        if _is_table_constraint(element):
            _table_constraint(element, table, state)
            continue
        start = _skip_if(element, 0, "COLUMN")
        start = _skip_if(element, start, "IF", "NOT", "EXISTS")
        if start < len(element):
            _column(element[start:], table, state)


def _create_enum(tokens: list[_Token], index: int, state: _SqlState) -> None:
    """Postgres `CREATE TYPE x AS ENUM ('a', 'b')`, what Prisma migrations emit for enums."""
    name, _, index = _qualified_name(tokens, index)
    if not name or not (_is(_at(tokens, index), "AS") and _is(_at(tokens, index + 1), "ENUM")):
        return
    body, _ = _group(tokens, index + 2)
    values = [_string_value(token.text) for token in body if token.kind == "string"]
    state.result.symbols.append(
        Symbol(
            name=name,
            kind="enum",
            line=tokens[0].line,
            end_line=tokens[-1].line,
            signature=_enum_signature(name, values),
        )
    )


def _comment_on_table(tokens: list[_Token], index: int, state: _SqlState) -> None:
    name, _, index = _qualified_name(tokens, index)
    comment = _at(tokens, index + 1)
    if name and _is(_at(tokens, index), "IS") and comment.kind == "string":
        table = _table(state, name, tokens[0].line)
        table.summary = _cap(_string_value(comment.text))


def _string_value(literal: str) -> str:
    """The text of a string literal token: `E'it''s'` -> `it's`; dollar quotes are kept."""
    if not literal.endswith("'"):
        return literal
    body = literal[literal.index("'") + 1 : -1]
    return body.replace("''", "'")


# ---------------------------------------------------------------------------------------------


def _enum_signature(name: str, values: list[str]) -> str:
    return _cap(f"enum {name} {{ {' '.join(values)} }}" if values else f"enum {name} {{}}")


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the terminating newline does not start another line
    return lines


def _cap(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
