"""`python -m entrypoint` is the `theus` command."""

from entrypoint.launch import run

run()
