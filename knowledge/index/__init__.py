"""The index layer: a project's files walked (`walker`, `ignore`), parsed into definitions and
references (`extract`, `languages`, `analyse`, `definitions`), resolved into edges
(`resolve`), kept in the store as one graph (`project.Project`), and the project's git history
read for recall (`git_history`). Import the modules themselves; nothing is re-exported."""

__all__ = [
    "analyse",
    "definitions",
    "extract",
    "git_history",
    "ignore",
    "languages",
    "model",
    "nodes",
    "project",
    "resolve",
    "schema",
    "walker",
]
