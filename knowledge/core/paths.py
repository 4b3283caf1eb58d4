"""Where Theus keeps its data: the `home` setting (THEUS_HOME), else the platformdirs user
data dir."""

from __future__ import annotations

import errno
import hashlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from knowledge.core.keys import slugify
from knowledge.core.settings import current

log = logging.getLogger(__name__)
CONFIG_FILE = "config.toml"
# Errors that say the data folder refuses writes as a whole, not that one file is bad.
_REFUSED = frozenset({errno.EROFS, errno.ENOSPC, errno.EACCES, errno.EPERM, errno.EDQUOT})
_told: set[str] = set()
_told_lock = threading.Lock()


def report_unwritable(exc: OSError) -> bool:
    """One warning per process for a data folder that refuses writes (read-only, full, no
    permission), instead of one from every layer; True when `exc` is such a refusal."""
    if exc.errno not in _REFUSED:
        return False
    home = str(data_home())
    with _told_lock:
        if home in _told:
            return True
        _told.add(home)
    log.warning(
        "the data folder %s is not writable (%s): sessions, episodes and memory "
        "changes and runs are not being saved",
        home,
        exc.strerror,
    )
    return True


def data_home() -> Path:
    home = current().home
    return Path(home).expanduser() if home else Path(platformdirs.user_data_dir("theus"))


def config_home() -> Path:
    return config_folder(current().home)


def config_file() -> Path:
    """`config.toml`, the settings file (read once at start by the entry point)."""
    return config_home() / CONFIG_FILE


def config_folder(home: str) -> Path:
    """The config folder: `config` in the data folder `home` when one is set (THEUS_HOME),
    else the platform's."""
    if home:
        return Path(home).expanduser() / "config"
    return Path(platformdirs.user_config_dir("theus"))


@dataclass(frozen=True, slots=True)
class ProjectPaths:
    """Per-project locations, keyed by the resolved project root."""

    root: Path
    home: Path

    @classmethod
    def for_root(cls, root: Path) -> ProjectPaths:
        resolved = root.resolve()
        digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:12]
        home = data_home() / "projects" / f"{slugify(resolved.name or 'root', 32)}-{digest}"
        return cls(resolved, home)

    @property
    def store(self) -> Path:
        return self.home / "graph.db"

    @property
    def memory(self) -> Path:
        return self.home / "memory"

    @property
    def episodes(self) -> Path:
        return self.memory / "episodes"

    @property
    def sessions(self) -> Path:
        return self.home / "sessions"

    @property
    def recall_index(self) -> Path:
        """The scoring index snapshot a one-shot `theus recall` loads (`recall.snapshot`)."""
        return self.home / "recall.idx"

    @property
    def vectors(self) -> Path:
        return self.home / "vectors.db"

    @property
    def vector_index(self) -> Path:
        """The semantic layer's vectors a one-shot command maps (`embed.frozen`)."""
        return self.home / "vectors.idx"
