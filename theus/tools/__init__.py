"""The tools, each declared once (`base.tool`): jailed file tools, grep/glob, recall and the
memory, shell and task (subagents); the agent and `theus mcp` offer them (`registry`)."""
