"""Few-shot history of past runs: each finished run is a point (the request's embedding, what
the run did); similar finished runs of the same project become examples for a new request.
Specified by ../shared/seeds/002 ("user story → tasks" transposed to "request → what the run
did"). `layer.RunHistory` is the layer; `knowledge.memory.Memory` wires it."""

__all__ = ["journal", "layer", "record", "settings", "stores"]
