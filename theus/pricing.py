"""What the model's tokens cost, where a price table is configured; one table for every front
end (the app's status bar, headless `total_cost_usd`).

The table is a JSON file: the path in `THEUS_PRICES`, else `prices.json` in the config folder
(`$THEUS_HOME/config` when THEUS_HOME is set). It maps a model name to US dollars per million
tokens:

    {"gpt-4o-mini": {"input": 0.15, "output": 0.60}}

No table, or no row for the model: the cost is unknown (None), never a guess.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from knowledge.core.paths import config_home
from theus.settings import current

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


def prices_path() -> Path:
    chosen = current().prices
    return Path(chosen).expanduser() if chosen else config_home() / "prices.json"


def load_prices() -> dict[str, Price]:
    """The configured table; {} when there is none. A bad file or row is logged and left out:
    a price table must never stop a conversation."""
    path = prices_path()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if current().prices:
            log.warning("THEUS_PRICES names %s, which does not exist: no costs shown", path)
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring the price table %s: %s", path, exc)
        return {}
    if not isinstance(raw, dict):
        log.warning("ignoring the price table %s: expected an object of model -> prices", path)
        return {}
    table = {}
    for model, row in raw.items():
        try:
            table[str(model)] = Price(float(row["input"]), float(row["output"]))
        except (TypeError, KeyError, ValueError):
            log.warning(
                'ignoring the price of %s in %s: expected {"input": USD per million '
                'tokens, "output": USD per million tokens}',
                model,
                path,
            )
    return table


def cost_usd(
    model: str, input_tokens: int, output_tokens: int, prices: dict[str, Price] | None = None
) -> float | None:
    """The cost of these tokens on `model`, or None when the table has no price for it."""
    table = load_prices() if prices is None else prices
    price = table.get(model)
    return None if price is None else price.cost(input_tokens, output_tokens)
