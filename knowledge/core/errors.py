"""The root of every error Theus raises on purpose, so that a caller can tell Theus's own
failures (with a message written for a person) from a bug or a library's exception.

    TheusError
    ├── UsageError              bad input from the user: one line, exit 2 (theus.service.project)
    ├── memory (knowledge)
    │   ├── StoreError            the graph's SQLite store: StoreUnavailable, StoreCorrupt
    │   ├── SnapshotError         a saved scoring snapshot that cannot be read
    │   ├── EmbeddingError        EmbedderUnavailable, EndpointError (EndpointTimeout),
    │   │                         DimensionMismatch
    │   ├── VectorStoreUnavailable, StoreMismatch      a vector store down, or of another size
    │   ├── MemdirFull, ExtractionError (also ValueError)
    │   └── not found / ambiguous (also LookupError): MemoryNotFound, AmbiguousKey,
    │       EpisodeNotFound, AmbiguousEpisode, NoSuchRun, AmbiguousRun
    ├── agent (theus)
    │   ├── ModelError            the model server failed, with what to check
    │   ├── ToolError             a tool cannot do what was asked: told to the model
    │   │   JailError, TooLarge   a path outside the project; output past its bound
    │   ├── SessionNotFound, McpCallError, Unchecked (also ValueError)
    │   └── the stream's signals: Stalled, Malformed, Unreadable, EndedEarly
    └── dashboard: QueryError, UnsafeHostError (also ValueError), StaleCursor

An error that callers also catch as a built-in keeps that base beside this root (a
`LookupError` for "not found", a `ValueError` for a bad value). Internal signals between two
functions of one module (a deadline passed, a late answer) derive from it too, so that the
rule has no exceptions: tests/test_errors.py walks every module and checks it.
"""

from __future__ import annotations


class TheusError(Exception):
    """An error Theus raised on purpose; its message is written for a person."""
