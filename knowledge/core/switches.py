"""The kill switches: `THEUS_NO_<LAYER>=1` turns one memory layer off. One rule for all
(and for the other on/off variables, such as THEUS_NO_SANDBOX or THEUS_SHELL_NETWORK).

A switch is on when its variable is set to anything but "", "0", "false", "no" or "off".
"""

from __future__ import annotations

import os
from collections.abc import Mapping

LAYERS = ("KNOWLEDGE_INJECT", "EMBEDDINGS", "EPISODES", "WATCH", "MEMDIR", "FACTS", "HISTORY")
_NOT_SET = ("", "0", "false", "no", "off")


def is_set(name: str, env: Mapping[str, str] | None = None) -> bool:
    """True when the variable `name` is switched on."""
    value = (os.environ if env is None else env).get(name, "")
    return value.strip().lower() not in _NOT_SET


def is_off(layer: str, env: Mapping[str, str] | None = None) -> bool:
    """True when THEUS_NO_<LAYER> switches that layer off (`layer` in any case)."""
    return is_set(f"THEUS_NO_{layer.upper()}", env)


def switched_off(env: Mapping[str, str] | None = None) -> list[str]:
    """The variables of the layers that are off, e.g. ["THEUS_NO_WATCH"]."""
    return [f"THEUS_NO_{layer}" for layer in LAYERS if is_off(layer, env)]
