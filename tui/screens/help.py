"""F1: keys of the current panel, the slash commands, and how to set a model."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Markdown

from tui.registry import key_order
from tui.slash import REGISTRY

SLASH_HELP = "## Slash commands\n\n| command | what it does |\n|---|---|\n" + "\n".join(
    f"| `/{c.name}` | {c.help} |" for c in REGISTRY.slash()
)

MODEL_HELP = """\
## Setting a model

Set `THEUS_BASE_URL`, `THEUS_API_KEY` and `THEUS_MODEL` (any OpenAI-compatible server), or run
`theus login`. Without a model the request box searches the project's memory instead.

## Your own keys

Put `keymap.json` in the config folder (`$THEUS_HOME/config` when THEUS_HOME is set), mapping a
binding id from the table above to keys: `{"app.graph": "ctrl+g"}`.
"""


def keys_markdown(screen: Screen[object]) -> str:
    """The active bindings that have an id (ours), and the HELP of the widgets on screen."""
    bindings = sorted(
        {
            a.binding.id: a.binding
            for a in screen.active_bindings.values()
            if a.binding.id and a.binding.description
        }.values(),
        key=key_order,
    )
    rows = [
        f"| `{screen.app.get_key_display(b)}` | {b.description} | `{b.id}` | {b.tooltip} |"
        for b in bindings
    ]
    table = "| key | action | id | |\n|---|---|---|---|\n" + "\n".join(rows)
    widget_help = [w.HELP for w in screen.query("*") if w.HELP]
    return "\n\n".join(["## Keys", table, *dict.fromkeys(widget_help)])


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "help.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,f1,q",
            "dismiss",
            "Close help",
            id="help.close",
            tooltip="Back to where you were",
        ),
    ]

    def __init__(self, source: Screen[object]) -> None:
        super().__init__()
        self.source = source

    def compose(self) -> ComposeResult:
        text = "\n\n".join(["# Theus help", keys_markdown(self.source), SLASH_HELP, MODEL_HELP])
        with VerticalScroll(id="help-body"):
            yield Markdown(text)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
