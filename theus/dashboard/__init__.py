"""The local dashboard: the graph in a browser, served on 127.0.0.1 with Host, Origin and
token checks. `start_dashboard(project)` runs it in a background thread."""

from theus.dashboard.server import Dashboard, UnsafeHostError, start_dashboard

__all__ = ["Dashboard", "UnsafeHostError", "start_dashboard"]
