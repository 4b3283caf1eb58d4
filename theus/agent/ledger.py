"""The token ledger of one model request: what each part of the conversation costs, by the one
token estimator, so that the parts add up to the prompt a server counts (`Ledger`).

Pure: it reads the conversation as the loop keeps it (our "_" metadata says what a message
is) and the number of messages the wire carries (adjacent user messages are merged into one,
which saves their framing; merging joins texts with blank lines, which add no tokens).
"""

from __future__ import annotations

from typing import Any

from knowledge.core.token_count import count_tokens
from theus.model.limits import MESSAGE_FRAMING, REPLY_FRAMING, message_tokens, schema_tokens
from theus.protocol import EXAMPLES, INJECTION, KIND, Ledger, Message, is_request


def request_ledger(
    messages: list[Message],
    wire_messages: int,
    schemas: list[dict[str, Any]] | None,
    instructions_head: str,
) -> Ledger:
    """The ledger of a request that sends `messages` (as `wire_messages` messages on the
    wire) with `schemas`. The system message's text from `instructions_head` on is the
    project's instructions; the last request the user wrote is the request, everything
    before it and the answers' tool calls after it are history."""
    ledger = Ledger(
        tool_schemas=schema_tokens(schemas),
        framing=MESSAGE_FRAMING * wire_messages + REPLY_FRAMING,
    )
    current = max((i for i, m in enumerate(messages) if is_request(m)), default=-1)
    for i, message in enumerate(messages):
        tokens = message_tokens(message)
        role = message.get("role")
        if i == 0 and role == "system":
            prompt, head, rest = str(message.get("content") or "").partition(instructions_head)
            ledger.system += count_tokens(prompt)
            ledger.instructions += count_tokens(head + rest)
        elif message.get(KIND) == INJECTION:
            examples = message.get(EXAMPLES, 0)
            ledger.block += tokens - examples
            ledger.examples += examples
        elif role == "tool":
            ledger.tool_results += tokens
        elif i == current:
            ledger.request += tokens
        else:
            ledger.history += tokens
    return ledger
