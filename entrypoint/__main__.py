"""`python -m entrypoint` is the `theus` command."""

from entrypoint.cli import run

run()
