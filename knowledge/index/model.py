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


@dataclass(slots=True)
class Import:
    module: str  # as written: "pkg.mod", "./util", "github.com/a/b/pkg", "crate::x::y"
    line: int = 0
    names: tuple[str, ...] = ()  # names imported from it (Python from-imports, JS named imports)
    level: int = 0  # Python relative-import dots


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
