"""The `theus` console command, above both front ends: it parses the command line and hands
over to a memory command or headless run (`theus`) or to the chat app (`tui`). Nothing below
imports it; import-linter's contracts in pyproject.toml keep the layers pointing down."""
