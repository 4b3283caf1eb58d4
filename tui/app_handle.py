"""A typed handle on the Theus app for screens, widgets and palette commands.

Textual types `self.app` as a plain `App`, and `getters.app(TheusApp)` does not help under
mypy (it infers the base class's `App[Any]`); importing `tui.app` at run time would also be
a cycle, since the app imports the status bar and the commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from textual.command import Provider
    from textual.message_pump import MessagePump

    from tui.app import TheusApp


def theus_app(node: MessagePump | Provider) -> TheusApp:
    """The app `node` runs in: always a TheusApp (the only app that mounts tui's widgets)."""
    return cast("TheusApp", node.app)
