"""The local dashboard: the graph in a browser, served on 127.0.0.1 with Host, Origin and
token checks (`server`: `start_dashboard(project)` runs it in a background thread), from the
graph's JSON views (`api`, `snapshot`); `command` is `theus dashboard`. Nothing is imported
with the package: `theus -p` registers the command without paying for an HTTP server."""

__all__ = ["api", "command", "layout", "server", "snapshot"]
