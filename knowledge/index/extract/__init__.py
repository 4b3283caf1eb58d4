"""Pick the extractor for a file by its language spec. Unknown kinds get a file node only."""

from __future__ import annotations

from collections.abc import Callable

from knowledge.index.languages import by_suffix
from knowledge.index.model import Extract


def language_for(rel: str) -> str:
    spec = by_suffix(rel)
    return spec.name if spec else ""


def extract_file(rel: str, data: bytes) -> Extract:
    spec = by_suffix(rel)
    if spec is None:
        return Extract(language="", lines=data.count(b"\n") + 1)
    if spec.grammar is None:
        return EXTRACTORS[spec.name](data)
    from knowledge.index.extract import treesitter

    return treesitter.extract(data, spec.name)


# The extractors of the languages without a grammar; each imports its module on first use.


def _python(data: bytes) -> Extract:
    from knowledge.index.extract import python

    return python.extract(data)


def _markdown(data: bytes) -> Extract:
    from knowledge.index.extract import markdown

    return markdown.extract(data)


def _prisma(data: bytes) -> Extract:
    from knowledge.index.extract import schema

    return schema.extract_prisma(data)


def _sql(data: bytes) -> Extract:
    from knowledge.index.extract import schema

    return schema.extract_sql(data)


EXTRACTORS: dict[str, Callable[[bytes], Extract]] = {
    "python": _python,
    "markdown": _markdown,
    "prisma": _prisma,
    "sql": _sql,
}
