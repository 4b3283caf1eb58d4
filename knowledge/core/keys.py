"""Stable node keys. One normalizer for every key, so re-indexing is idempotent."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_SPACES = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Canonical form of free text used inside keys: NFKC, case-folded, single spaces."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()


def file_key(path: str) -> str:
    return f"file:{path}"


def symbol_key(path: str, qualname: str) -> str:
    return f"sym:{path}#{qualname}"


def section_key(path: str, slug: str) -> str:
    return f"section:{path}#{slug}"


def path_of(key: str) -> str | None:
    """The file a file, symbol or section key belongs to; None for other kinds (their path,
    if any, is only in the node)."""
    kind, _, rest = key.partition(":")
    if kind == "file":
        return rest
    if kind in ("sym", "section"):
        return rest.rpartition("#")[0]  # a name or slug holds no "#"; a path may
    return None


def table_key(name: str, scope: str = "") -> str:
    """`scope`: the schema folder a table belongs to when a project has several (a monorepo's
    `apps/web/prisma`), so same-named models stay apart; "" when it has one."""
    return f"table:{scope}#{normalize(name)}" if scope else f"table:{normalize(name)}"


def column_key(table: str, column: str, scope: str = "") -> str:
    name = f"{normalize(table)}.{normalize(column)}"
    return f"column:{scope}#{name}" if scope else f"column:{name}"


MEMORY_PREFIX, EPISODE_PREFIX, ENTITY_PREFIX = "mem:", "ep:", "ent:"
_NOT_WORD = re.compile(r"[\W_]+")


def memory_key(text: str) -> str:
    return MEMORY_PREFIX + hashlib.sha1(normalize(text).encode()).hexdigest()


def episode_key(date: str, slug: str) -> str:
    return f"{EPISODE_PREFIX}{date}-{slug}"


def fold_label(text: str) -> str:
    """What two spellings of one entity share: `normalize`d, accents and every non-word
    character dropped ("Next.js", "NextJS" and "next js" -> "nextjs"; "Tecnología" ->
    "tecnologia"). Letters of other scripts stay."""
    decomposed = unicodedata.normalize("NFKD", normalize(text))
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _NOT_WORD.sub("", bare)


def entity_key(label: str) -> str:
    """An entity named in conversation: one key for every spelling `fold_label` merges."""
    return ENTITY_PREFIX + fold_label(label)


def slugify(text: str, limit: int = 48) -> str:
    """Lower-case ASCII slug for file names and section keys."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:limit].rstrip("-") or "untitled"
