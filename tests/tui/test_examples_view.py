"""The chat's context line says when past runs were quoted as examples."""

from __future__ import annotations

from tui.widgets.chat_items import InjectionView


def test_the_context_line_counts_the_examples_used() -> None:
    assert InjectionView(120, 40.0, "block", examples=2).title.endswith("· 2 past runs as examples")
    assert InjectionView(120, 40.0, "block", examples=1).title.endswith("· 1 past run as examples")
    assert "past run" not in InjectionView(120, 40.0, "block").title
