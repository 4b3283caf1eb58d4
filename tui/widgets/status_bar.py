"""One line at the bottom: model, the session's tokens in/out (and cost, with a price table),
index size, watcher, last recall, injected tokens, kill switches. The app owns the figures;
this widget only shows them, dropping the least useful ones when the terminal is narrow."""

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

model · the session's tokens sent ↑ and received ↓ (and its cost in US dollars when a price
table is configured: `THEUS_PRICES` or `prices.json` in the config folder) · indexed
files/symbols/edges · watcher state and last update · last recall time · tokens injected this
turn / in total · the memory's share of the tokens sent (its context blocks and examples, and
the share of the tokens sent) and its own extraction calls (`/cost` has the whole ledger) ·
MCP servers up / configured (`/mcp`) · memory layers switched off (THEUS_NO_*). A narrow
terminal drops the last ones first.
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
    tokens_in: reactive[int] = reactive(0)
    tokens_out: reactive[int] = reactive(0)
    cost: reactive[float | None] = reactive(None)
    # From the session's ledger: the blocks and examples sent, and the extraction calls.
    memory_tokens: reactive[int] = reactive(0)
    extraction_tokens: reactive[int] = reactive(0)
    mcp: reactive[str] = reactive("")  # "mcp 2/3 · 1 failed"; "" with no server
    embedding: reactive[str] = reactive("")  # "embedding 120/3400" while the layer embeds

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
        return fit(self.parts(), self.content_size.width or 1000)

    def parts(self) -> list[tuple[int, str]]:
        """What the bar says, in order, each with its rank: `fit` drops the highest first."""
        usage = f"↑{fmt.count(self.tokens_in)} ↓{fmt.count(self.tokens_out)} tok"
        if self.cost is not None:
            usage += f" ${self.cost:.4f}"
        parts = [(0, self.model), (1, usage)]
        if self.failed:
            parts.append((0, f"memory unavailable: {self.failed}"))
        elif self.indexing:
            parts.append((2, "loading the index…"))
        else:
            c = self.counts
            parts.append(
                (
                    2,
                    f"{fmt.count(c.get('file', 0))} files "
                    f"{fmt.count(c.get('symbol', 0))} sym "
                    f"{fmt.count(c.get('edges', 0))} edges",
                )
            )
        if self.watcher:
            parts.append((6, self.watcher))
        if self.embedding:
            parts.append((6, self.embedding))
        parts.append(
            (7, "recall " + (fmt.ms(self.recall_ms) if self.recall_ms is not None else "–"))
        )
        parts.append((5, f"ctx {self.turn_tokens} tok ({self.total_tokens} total)"))
        if self.tokens_in:
            share = round(100 * self.memory_tokens / self.tokens_in)
            parts.append(
                (
                    5,
                    f"mem {fmt.count(self.memory_tokens)} ({share}%) "
                    f"+extr {fmt.count(self.extraction_tokens)}",
                )
            )
        if self.mcp:
            parts.append((4, self.mcp))
        if self.off:  # a memory layer switched off matters more than the timings
            parts.append((3, "off: " + ",".join(self.off)))
        return parts


SEPARATOR = " │ "


def fit(parts: list[tuple[int, str]], width: int) -> str:
    """The parts that fit in `width`, the highest ranks dropped first (the last of equals);
    the one left is cut if need be."""
    while len(parts) > 1 and len(SEPARATOR.join(t for _, t in parts)) > width:
        worst = max(range(len(parts)), key=lambda i: (parts[i][0], i))
        parts = parts[:worst] + parts[worst + 1 :]
    return fmt.clip(SEPARATOR.join(t for _, t in parts), width)


def embedding_text(progress: tuple[int, int] | None) -> str:
    """The semantic layer's background pass: texts embedded of those it has to embed."""
    if progress is None:
        return ""
    done, total = progress
    return f"embedding {fmt.count(done)}/{fmt.count(total)}"


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
