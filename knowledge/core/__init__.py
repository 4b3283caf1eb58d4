"""The memory's bottom layer: what every other part of `knowledge` stands on and that imports
nothing above it. The graph and its store (`graph`, `store`), node keys (`keys`), where data
lives (`paths`), durable writes (`atomic`; status files off the caller's thread:
`state_writer`), safe file reads inside a root (`beneath`,
`filetext`), redaction (`redact`), the one token estimator (`token_count`), the settings
and kill switches (`settings`), saved credentials, the frontmatter format, text folding, the
links free text makes to code (`mentions`) and the record of one agent run (`runs`).

Import the modules themselves (`from knowledge.core import keys`); nothing is re-exported.
"""

__all__ = [
    "atomic",
    "beneath",
    "credentials",
    "filetext",
    "folding",
    "frontmatter",
    "graph",
    "keys",
    "mentions",
    "paths",
    "redact",
    "runs",
    "settings",
    "state_writer",
    "store",
    "token_count",
]
