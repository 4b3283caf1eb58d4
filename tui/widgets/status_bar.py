"""One line at the bottom: model, index size, watcher, last recall, injected tokens, kill
switches. The app owns the figures; this widget only shows them."""

from __future__ import annotations

from typing import Any

from textual.reactive import reactive
from textual.widgets import Static

from tui.app_handle import theus_app
from tui.widgets import fmt


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; color: $text-muted; padding: 0 1; }
    """
    HELP = """\
## Status bar

model · indexed files/symbols/edges · watcher state and last update · last recall time ·
tokens injected this turn / in total · memory layers switched off (THEUS_NO_*).
"""

    model: reactive[str] = reactive("no model")
    counts: reactive[dict[str, Any]] = reactive(dict, always_update=True)
    # Not `loading`: that is Widget's own reactive (it covers the bar with a spinner).
    indexing: reactive[bool] = reactive(True)
    failed: reactive[str] = reactive("")
    watcher: reactive[str] = reactive("")
    recall_ms: reactive[float | None] = reactive(None)
    turn_tokens: reactive[int] = reactive(0)
    total_tokens: reactive[int] = reactive(0)
    off: reactive[tuple[str, ...]] = reactive(tuple)

    def on_mount(self) -> None:
        app = theus_app(self)
        app.status_bars.add(self)
        self.set_reactive_fields(app.status)

    def on_unmount(self) -> None:
        theus_app(self).status_bars.discard(self)

    def set_reactive_fields(self, fields: dict[str, Any]) -> None:
        for name, value in fields.items():
            setattr(self, name, value)

    def render(self) -> str:
        parts = [self.model]
        if self.failed:
            parts.append(f"memory unavailable: {self.failed}")
        elif self.indexing:
            parts.append("loading the index…")
        else:
            c = self.counts
            parts.append(f"{fmt.count(c.get('file', 0))} files "
                         f"{fmt.count(c.get('symbol', 0))} sym "
                         f"{fmt.count(c.get('edges', 0))} edges")
        if self.watcher:
            parts.append(self.watcher)
        parts.append("recall " + (fmt.ms(self.recall_ms) if self.recall_ms is not None else "–"))
        parts.append(f"ctx {self.turn_tokens} tok ({self.total_tokens} total)")
        if self.off:
            parts.append("off: " + ",".join(self.off))
        return " │ ".join(parts)


def watcher_text(section: dict[str, Any] | None) -> str:
    """`knowledge.watch.status_section` condensed: state and the time of the last update."""
    if not section:
        return "watch –"
    if section.get("switched_off"):
        return "watch off"
    if section.get("error"):
        return "watch failed"
    if not section.get("running"):
        return "watch stopped"
    last = section.get("last_update")
    return f"watch on · last {str(last)[-8:]}" if last else "watch on"


def short_switches(names: list[str]) -> tuple[str, ...]:
    """THEUS_NO_WATCH -> watch, for the status line."""
    return tuple(n.removeprefix("THEUS_NO_").lower() for n in names)
