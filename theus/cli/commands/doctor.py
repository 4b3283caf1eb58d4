"""`theus doctor`: check the configured model server end to end (its model list, a streamed
reply, a tool call and its result sent back, usage, context size) and say what works and what
Theus will work around. Exit 0 when Theus can work with it, 1 when it cannot, 2 when no model
is configured."""

from __future__ import annotations

import argparse
from typing import TextIO, cast

from theus.service.command_line import Printed
from theus.service.project import UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "doctor", help="check the model server end to end and show what Theus works around"
    )
    p.add_argument("--model", default=None, help="model name (overrides THEUS_MODEL)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here: every command module is imported to build the parser.
    import asyncio

    from knowledge.core.paths import config_file
    from theus.config import MISSING_MODEL_HELP, load_model_settings
    from theus.model.doctor import check
    from theus.service.interrupts import hand_over
    from theus.service.status import settings_rows
    from theus.settings import current, described

    out = cast(TextIO, Printed())
    path = config_file()
    out.write(f"settings ({path}{'' if path.is_file() else ': none'}), those not at defaults:\n")
    for name, value in settings_rows(described(current())):
        out.write(f"  {name} = {value}\n")
    settings = load_model_settings()
    if settings is None:
        raise UsageError(MISSING_MODEL_HELP)
    hand_over()
    return asyncio.run(check(settings, out))
