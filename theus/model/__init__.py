"""The model client (theus.model.client) and what it learns about each server: capabilities,
limits, and one clear line per failure (theus.model.errors)."""

from theus.model.answer import Completion, TextCallback
from theus.model.bounds import MAX_ANSWER_CHARS
from theus.model.client import ModelClient
from theus.model.errors import ModelError

__all__ = ["MAX_ANSWER_CHARS", "Completion", "ModelClient", "ModelError", "TextCallback"]
