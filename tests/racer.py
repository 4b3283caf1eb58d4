"""A racing thread for the link-race tests and bench/race.py."""

from __future__ import annotations

import os
import threading
from pathlib import Path


class Swapper:
    """Swaps `target` between a real folder and a symlink to `elsewhere`, as fast as it can."""

    def __init__(self, target: Path, elsewhere: Path) -> None:
        self.target, self.elsewhere = target, elsewhere
        self.parked = target.with_name(target.name + ".real")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        link = self.target.with_name(self.target.name + ".link")
        while not self.stop.is_set():
            try:
                os.symlink(self.elsewhere, link)
                os.rename(self.target, self.parked)
                os.rename(link, self.target)  # now a symlink to outside
                os.rename(self.target, link)
                os.rename(self.parked, self.target)  # the real folder again
                os.unlink(link)
            except OSError:
                pass

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)
