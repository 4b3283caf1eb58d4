"""Vector stores behind one port (`port`): the embedded default (`embedded`) and a
Qdrant server (`qdrant`). Import the modules themselves; nothing is re-exported."""

__all__ = ["embedded", "port", "qdrant"]
