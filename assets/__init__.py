"""Bundled data shipped inside the wheel: dashboard page, tokenizer, licences."""

from pathlib import Path


def path(name: str) -> Path:
    """Absolute path of a bundled asset."""
    return Path(__file__).parent / name
