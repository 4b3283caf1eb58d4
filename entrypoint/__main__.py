"""`python -m entrypoint` is the `theus` command."""

from entrypoint.cli import main

raise SystemExit(main())
