"""Vector stores behind one port: the embedded default and a Qdrant server."""
