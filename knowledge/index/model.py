"""What an extractor returns for one file. Plain, picklable data: extraction runs in a pool."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Symbol:
    name: str  # qualified inside the file: "Cart.total"
    kind: str  # function, class, method, type, interface, const, enum, struct, trait, ...
    line: int  # 1-based
    end_line: int
    signature: str = ""  # one line, e.g. "def total(self, items) -> int"
    doc: str = ""  # first line of the docstring / doc comment
    parent: str | None = None  # qualified name of the enclosing symbol

    def __reduce__(self) -> tuple[type[Symbol], tuple[object, ...]]:
        # Pickled as its fields (a parse worker sends thousands): a quarter of the default's
        # cost, which goes through a state dict per object.
        fields = (self.name, self.kind, self.line, self.end_line, self.signature, self.doc)
        return Symbol, (*fields, self.parent)


@dataclass(slots=True)
class Import:
    module: str  # as written: "pkg.mod", "./util", "github.com/a/b/pkg", "crate::x::y"
    line: int = 0
    names: tuple[str, ...] = ()  # names imported from it (Python from-imports, JS named imports)
    level: int = 0  # Python relative-import dots

    def __reduce__(self) -> tuple[type[Import], tuple[object, ...]]:
        return Import, (self.module, self.line, self.names, self.level)  # as `Symbol`'s


@dataclass(slots=True)
class Section:
    title: str
    level: int
    line: int
    end_line: int
    summary: str = ""  # first line of the section body


@dataclass(slots=True)
class Column:
    name: str
    type: str = ""
    line: int = 0
    references: tuple[str, str] | None = None  # (table, column) of a foreign key


@dataclass(slots=True)
class Table:
    name: str
    line: int
    end_line: int
    columns: list[Column] = field(default_factory=list)
    summary: str = ""


@dataclass(slots=True)
class Extract:
    language: str
    summary: str = ""  # module docstring, first heading, ...
    symbols: list[Symbol] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    identifiers: set[str] = field(default_factory=set)  # names used, for `references` edges
    sections: list[Section] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    partial: str = ""  # non-empty when extraction was incomplete: the reason
    lines: int = 0

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # The identifiers (names: never empty, never a line break) as one string: a set of
        # hundreds of names pickles name by name.
        return _extract, (
            self.language,
            self.summary,
            self.symbols,
            self.imports,
            "\n".join(self.identifiers),
            self.sections,
            self.tables,
            self.partial,
            self.lines,
        )


def _extract(
    language: str,
    summary: str,
    symbols: list[Symbol],
    imports: list[Import],
    identifiers: str,
    sections: list[Section],
    tables: list[Table],
    partial: str,
    lines: int,
) -> Extract:
    """An `Extract` unpickled (`Extract.__reduce__`)."""
    names = set(identifiers.split("\n")) if identifiers else set()
    return Extract(language, summary, symbols, imports, names, sections, tables, partial, lines)
