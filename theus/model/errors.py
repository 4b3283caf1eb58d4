"""Model-call failures, each one line naming the real cause (server unreachable, connection
dropped mid-answer, request refused as invalid, context overflow...) and what to do."""

from __future__ import annotations

import re

import httpx2
import openai

from knowledge.core.errors import TheusError

# A server's words for "the prompt does not fit" (OpenAI, vLLM, llama.cpp, llama-cpp-python).
_OVERFLOW = re.compile(
    r"context[_ ](length|window|size)|maximum context|exceeds? (the )?"
    r"(available )?context|prompt is too long|too many tokens",
    re.I,
)
_CONTEXT_SIZE = re.compile(
    r"(?:context (?:length|window|size)(?: is| of)?|maximum context "
    r"length is|n_ctx\W*)\s*(\d{3,8})",
    re.I,
)
# The server's count of the prompt that overflowed (vLLM, llama-cpp-python; OpenAI).
_PROMPT_COUNT = re.compile(r"(\d+) in the messages|messages resulted in (\d+) tokens")
# Pydantic/FastAPI wording: a server that validates the request and answers 500 with it.
_VALIDATION = re.compile(r"validation error|input should be|field required", re.I)


class ModelError(TheusError):
    """A model call that failed for good. `str(exc)` is one line saying what to do.

    `partial` is the answer text streamed before the failure (a dropped connection, the turn
    deadline); `context_tokens` the context size the server named when the prompt overflowed.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        status: int | None = None,
        partial: str = "",
        context_tokens: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.partial = partial
        self.context_tokens = context_tokens


class Stalled(TheusError):
    """The server sent nothing within a bound; `str` says which, as a phrase."""


class Malformed(TheusError):
    """The server answered, but not with a chat stream; `str` says how, as a phrase."""


class Unreadable(TheusError):
    """The server sent a body Theus will not read on (too large, compressed unasked, not
    UTF-8); `str` says how, as a phrase. Never retried: the server would send it again."""


class BodyCut(Unreadable):
    """The body passed the bound on a whole answer: a stream is cut there, the part before
    kept; a reply that must be read whole fails."""


class EndedEarly(TheusError):
    """A 200 stream that ended with no answer and no finish_reason (a server that failed
    after answering 200: a context overflow, a tool mode it cannot stream)."""


def short(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return " ".join(str(message).split())[:300]
    return " ".join(str(exc).split())[:300]


def overflow_size(exc: BaseException) -> tuple[bool, int | None]:
    """(is a context overflow, the context size the server named if it did)."""
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    detail = short(exc)
    code = str(inner.get("code") or inner.get("type") or "") if isinstance(inner, dict) else ""
    if "context" not in code and not _OVERFLOW.search(detail):
        return False, None
    n_ctx = inner.get("n_ctx") if isinstance(inner, dict) else None
    if isinstance(n_ctx, int) and n_ctx > 0:
        return True, n_ctx
    found = _CONTEXT_SIZE.search(detail)
    return True, int(found.group(1)) if found else None


def prompt_count(exc: BaseException) -> int | None:
    """How many tokens the server counted in the prompt it refused as too long, if it said."""
    found = _PROMPT_COUNT.search(short(exc))
    return int(found.group(1) or found.group(2)) if found else None


def is_validation(exc: BaseException) -> bool:
    """A server that refused the request's shape: FastAPI's `detail` list, or pydantic's words
    in the message (some servers send these with a 500). Sending it again cannot help."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("detail"), list):
        return True
    return bool(_VALIDATION.search(short(exc)))


def dropped(url: str, partial: str) -> ModelError:
    return ModelError(
        f"the model server at {url} dropped the connection mid-answer (after "
        f"{len(partial):,} characters); the partial answer is kept in the session, marked "
        "incomplete (see the server's log)",
        kind="dropped",
        partial=partial,
    )


def classify(exc: Exception, url: str, model: str) -> ModelError:
    if isinstance(exc, Unreadable):
        return ModelError(
            f"the model server at {url} {exc}: reading stopped there (check "
            "THEUS_BASE_URL points at an OpenAI-compatible /v1 endpoint, or see "
            "the server's log)",
            kind="unreadable",
        )
    if isinstance(exc, Stalled):
        return ModelError(f"the model server at {url} {exc}", kind="timeout")
    if isinstance(exc, EndedEarly):
        return ModelError(
            f"the model server at {url} ended the stream without an answer (no finish_reason): "
            "it failed after answering 200, often a prompt larger than its context; see the "
            "server's log",
            kind="server",
        )
    if isinstance(exc, Malformed):
        return ModelError(
            f"the model server at {url} {exc}; check THEUS_BASE_URL points "
            "at an OpenAI-compatible /v1 endpoint",
            kind="server",
        )
    if isinstance(exc, openai.APITimeoutError):
        return ModelError(
            f"the model server at {url} timed out ({short(exc)}); check the server", kind="timeout"
        )
    if isinstance(exc, httpx2.TransportError):  # mid-stream: the response had begun
        return ModelError(
            f"the model server at {url} dropped the connection before any "
            f"answer ({type(exc).__name__}); see the server's log",
            kind="network",
        )
    if isinstance(exc, openai.APIConnectionError):
        if isinstance(exc.__cause__, httpx2.ConnectError | httpx2.ConnectTimeout):
            return ModelError(
                f"cannot reach the model server at {url} (check THEUS_BASE_URL and that the "
                "server is running)",
                kind="network",
            )
        cause = type(exc.__cause__).__name__ if exc.__cause__ is not None else "no answer"
        return ModelError(
            f"the model server at {url} closed the connection before answering "
            f"({cause}); see the server's log",
            kind="network",
        )
    status = getattr(exc, "status_code", None)
    detail = short(exc)
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return ModelError(
            f"the model server at {url} rejected the API key ({status}): check THEUS_API_KEY "
            "or run `theus login`",
            kind="auth",
            status=status,
        )
    if isinstance(exc, openai.NotFoundError):
        return ModelError(
            f"model '{model}' not found at {url} ({detail}): check THEUS_MODEL or --model",
            kind="model",
            status=status,
        )
    if isinstance(exc, openai.RateLimitError):
        return ModelError(
            f"rate limited by {url} (429): {detail}", kind="rate_limit", status=status
        )
    overflow, size = overflow_size(exc)
    if overflow:
        named = f" of {size:,} tokens" if size else ""
        return ModelError(
            f"the conversation does not fit the model's context{named} at {url} ({detail}); "
            "start a new session or compact it",
            kind="context",
            status=status,
            context_tokens=size,
        )
    if is_validation(exc):
        return ModelError(
            f"the model server at {url} refused the request as invalid ({status}): {detail}",
            kind="validation",
            status=status,
        )
    if status is None:  # an error event inside a 200 stream
        return ModelError(f"the model server at {url} failed mid-stream: {detail}", kind="server")
    if status >= 500:
        return ModelError(
            f"the model server at {url} failed ({status}): {detail}", kind="server", status=status
        )
    if isinstance(exc, openai.BadRequestError) and "model" in detail.lower():
        return ModelError(
            f"the server at {url} refused model '{model}' ({detail}): check THEUS_MODEL",
            kind="model",
            status=status,
        )
    return ModelError(f"the model call failed ({status}): {detail}", kind="request", status=status)


def after(error: ModelError, attempts: int, spent: float, deadline: bool = False) -> ModelError:
    """`error`, saying how many attempts it took and how long was waited in all."""
    if attempts == 1:
        return error
    why = " (THEUS_RETRY_DEADLINE)" if deadline else ""
    return ModelError(
        f"{error}; gave up after {attempts} attempts in {spent:.0f}s{why}",
        kind=error.kind,
        status=error.status,
        partial=error.partial,
        context_tokens=error.context_tokens,
    )
