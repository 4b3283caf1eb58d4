"""The agent's tools: jailed file tools, grep/glob, recall, shell and task (subagents)."""
