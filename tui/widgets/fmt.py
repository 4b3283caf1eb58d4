"""Small formatting helpers shared by the widgets (one place, so tests can pin timings)."""

from __future__ import annotations


def ms(value: float) -> str:
    """A duration in milliseconds, as shown in the chat and the status bar."""
    return f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"


def count(value: int) -> str:
    return f"{value / 1000:.1f}k" if value >= 10_000 else str(value)


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
