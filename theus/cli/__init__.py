"""The command-line front end: the memory commands (`commands`: `theus index`, `theus recall`,
...) and headless `theus -p` (`headless`). The entry point registers the commands and starts
the run; the `dashboard` and `mcp` commands belong to their own front ends."""

__all__ = ["commands", "headless"]
