"""Text compared the way people type it: lower case without accents, so "¿Qué tal?" and
"que tal", "recuérdalo" and "recuerdalo" read alike (the chat gate, what a run was asked)."""

from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))
