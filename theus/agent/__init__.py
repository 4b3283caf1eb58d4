"""The agent loop: microcompact -> injection -> model -> tools, repeated until an answer."""
