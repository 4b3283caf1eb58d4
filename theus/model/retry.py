"""The retry policy: which failures are worth asking again, and how long to wait first.
Retries are ours (the openai client's are off) so that the backoff is visible, bounded and
testable. No I/O: the client sleeps and asks."""

from __future__ import annotations

import contextlib
import random
from typing import Any

# The kinds of `theus.model.errors.ModelError` a second try may cure.
RETRYABLE = frozenset({"rate_limit", "server", "network", "timeout"})
MAX_DELAY_S = 30.0


def may_retry(kind: str, *, transient: bool, emitted: bool, attempt: int, most: int) -> bool:
    """Whether a failed call of `kind` may be sent again: a transient failure, before any text
    reached the user (an answer is never shown twice), within `most` retries."""
    return kind in RETRYABLE and transient and not emitted and attempt < most


def delay_s(attempt: int, base_s: float, exc: BaseException, jitter: float | None = None) -> float:
    """Exponential backoff with jitter from `base_s`, at least what the server's Retry-After
    asks, at most `MAX_DELAY_S`."""
    share = 0.5 + (random.random() if jitter is None else jitter) / 2
    delay = base_s * float(2**attempt) * share
    asked = retry_after_s(exc)
    if asked is not None:
        delay = max(delay, asked)
    return min(delay, MAX_DELAY_S)


def retry_after_s(exc: BaseException) -> float | None:
    """The seconds a server's Retry-After header asks for, if it sent a number."""
    response: Any = getattr(exc, "response", None)
    raw = response.headers.get("retry-after") if response is not None else None
    if raw:
        with contextlib.suppress(ValueError):
            return float(raw)
    return None
