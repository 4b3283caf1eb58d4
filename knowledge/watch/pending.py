"""What the watcher still has to do: per-file debounce and storm detection. Pure, no I/O.

Times are `time.monotonic()` seconds passed in by the caller, so the rules can be tested and
reasoned about without a clock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(slots=True)
class Pending:
    debounce: float = 0.4  # a file is handled this long after its last event
    max_wait: float = 2.0  # ...or this long after its first, if it never goes quiet
    storm_files: int = 40  # more distinct files than this within storm_window: one rescan
    storm_window: float = 2.0
    # A storm is over after this long without events. Longer than the debounce: a checkout
    # that stalls briefly (a busy disk, a loaded machine) must still end in one rescan.
    storm_quiet: float = 1.0
    files: dict[str, tuple[float, float]] = field(default_factory=dict)  # rel -> (first, last)
    storm: bool = False
    last_event: float = 0.0
    _window: deque[tuple[float, str]] = field(default_factory=deque)
    _in_window: dict[str, int] = field(default_factory=dict)

    def add(self, rels: set[str], now: float) -> None:
        self.last_event = now
        if self.storm:
            return  # the rescan will see these on disk
        for rel in rels:
            first = self.files[rel][0] if rel in self.files else now
            self.files[rel] = (first, now)
            self._window.append((now, rel))
            self._in_window[rel] = self._in_window.get(rel, 0) + 1
        self._expire(now)
        if len(self._in_window) > self.storm_files:
            self.start_storm()

    def start_storm(self) -> None:
        """Drop per-file work: one full rescan replaces it once things go quiet."""
        self.storm = True
        self.files.clear()
        self._window.clear()
        self._in_window.clear()

    def storm_ready(self, now: float) -> bool:
        return self.storm and now - self.last_event >= self.storm_quiet

    def rescan_started(self) -> None:
        """Events from now on are after the rescan's walk began: they count afresh."""
        self.storm = False
        self.files.clear()
        self._window.clear()
        self._in_window.clear()

    def due(self, now: float) -> list[str]:
        """Pop the files whose debounce has expired."""
        ready = [
            rel
            for rel, (first, last) in self.files.items()
            if now - last >= self.debounce or now - first >= self.max_wait
        ]
        for rel in ready:
            del self.files[rel]
        return sorted(ready)

    def next_deadline(self) -> float | None:
        if self.storm:
            return self.last_event + self.storm_quiet
        if not self.files:
            return None
        return min(
            min(last + self.debounce, first + self.max_wait) for first, last in self.files.values()
        )

    @property
    def idle(self) -> bool:
        return not self.storm and not self.files

    def _expire(self, now: float) -> None:
        while self._window and now - self._window[0][0] > self.storm_window:
            _, rel = self._window.popleft()
            left = self._in_window[rel] - 1
            if left:
                self._in_window[rel] = left
            else:
                del self._in_window[rel]
