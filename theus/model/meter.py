"""What one client's calls cost, for `theus -p`'s result (`duration_api_ms`, Claude Code's
usage fields, `total_cost_usd`): every call counts, the conversation's, subagents' and fact
extraction's alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Meter:
    """Time spent waiting on the server and the tokens of every answer (estimated where the
    server reported none, as in the conversation's usage). The cache counts stay None until
    the server reports one."""

    api_seconds: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None

    def count(self, seconds: float, input_tokens: int, output_tokens: int) -> None:
        self.api_seconds += seconds
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens

    def cache(self, usage: Any) -> None:
        """The cache counts of a server's usage report, where it has them."""
        details = getattr(usage, "prompt_tokens_details", None)
        read = getattr(details, "cached_tokens", None)
        if isinstance(read, int):
            self.cache_read_tokens = (self.cache_read_tokens or 0) + read
        # Not OpenAI's field: servers proxying Anthropic's prompt caching pass it through.
        created = getattr(usage, "cache_creation_input_tokens", None)
        if isinstance(created, int):
            self.cache_creation_tokens = (self.cache_creation_tokens or 0) + created
