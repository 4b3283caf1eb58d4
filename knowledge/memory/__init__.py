"""The memory's top layer: every layer of one project wired together (`wiring.Memory`, opened
with `open_memory`), the context block built from them (`context`), the status they report
(`status`), and what they give the agent at the start of a session (`instructions`,
`agents_draft`). Front ends open a project's memory here and nowhere else."""

from knowledge.memory.wiring import Memory, open_memory

__all__ = ["Memory", "open_memory"]
