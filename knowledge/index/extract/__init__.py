"""Pick the extractor for a file by its name. Unknown kinds get a file node only."""

from __future__ import annotations

from pathlib import PurePosixPath

from knowledge.index.model import Extract

_MARKDOWN = {".md", ".markdown", ".mdx"}


def language_for(rel: str) -> str:
    from knowledge.index.extract.treesitter import LANGUAGE_BY_SUFFIX

    path = PurePosixPath(rel)
    suffix = path.suffix.lower()
    if suffix in (".py", ".pyi"):
        return "python"
    if suffix in _MARKDOWN:
        return "markdown"
    if suffix == ".prisma":
        return "prisma"
    if suffix == ".sql":
        return "sql"
    return LANGUAGE_BY_SUFFIX.get(suffix, "")


def extract_file(rel: str, data: bytes) -> Extract:
    language = language_for(rel)
    if language == "python":
        from knowledge.index.extract import python

        return python.extract(data)
    if language == "markdown":
        from knowledge.index.extract import markdown

        return markdown.extract(data)
    if language in ("prisma", "sql"):
        from knowledge.index.extract import schema

        return schema.extract_prisma(data) if language == "prisma" else schema.extract_sql(data)
    if language:
        from knowledge.index.extract import treesitter

        return treesitter.extract(data, language)
    return Extract(language="", lines=data.count(b"\n") + 1)
