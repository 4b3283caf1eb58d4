"""Keep every file tool inside the project root.

Checks the fully resolved path (symlinks followed) component-wise, never by string prefix, so
`/repo-evil` does not pass for `/repo`; and checks again on the opened file descriptor, so a
path swapped for a symlink between the check and the open is caught too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from knowledge.core.beneath import open_beneath
from knowledge.core.errors import TheusError
from knowledge.core.paths import config_home, data_home
from knowledge.index.ignore import is_secret
from theus.tools.protected import protected_rule


class JailError(TheusError):
    """A path the tools refuse; the message is returned to the model as the tool's error."""


class Jail:
    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))

    def resolve(self, raw: str) -> Path:
        """The real path of `raw` (relative to the root, or absolute inside it)."""
        if not isinstance(raw, str) or not raw.strip():
            raise JailError("a path is required")
        if "\x00" in raw:
            raise JailError("path contains a NUL byte")
        candidate = Path(raw)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            resolved = Path(os.path.realpath(candidate))
        except OSError as exc:  # a link changed while it was being followed
            raise JailError(f"{raw}: changed while resolving ({exc.strerror})") from None
        if not self.inside(resolved):
            raise JailError(f"{raw}: outside the project root (only {self.root} is reachable)")
        return resolved

    def inside(self, resolved: Path) -> bool:
        return resolved == self.root or resolved.is_relative_to(self.root)

    def rel(self, resolved: Path) -> str:
        return resolved.relative_to(self.root).as_posix() or "."

    def secret(self, resolved: Path) -> bool:
        return any(is_secret(part) for part in resolved.relative_to(self.root).parts)

    def open_read(self, raw: str) -> tuple[int, Path]:
        """Open a file for reading; refuses secrets and anything that escapes after opening."""
        resolved = self.resolve(raw)
        if self.secret(resolved):
            raise JailError(f"{raw}: secret files (.env*, keys, credentials) are never read")
        try:
            # O_NONBLOCK: a FIFO swapped in after the type check opens at once (and is refused)
            fd = open_beneath(self.root, self._parts(resolved), os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            raise JailError(f"{raw}: no such file") from None
        except IsADirectoryError:
            raise JailError(f"{raw}: is a folder (use list)") from None
        except OSError as exc:
            raise JailError(f"{raw}: cannot open ({exc.strerror or exc})") from None
        self._verify(fd, resolved, raw)
        if os.fstat(fd).st_nlink > 1:
            os.close(fd)
            raise JailError(
                f"{raw}: hard-linked file (its other name may be outside the project "
                "or a secret, which a path check cannot see): not read"
            )
        return fd, resolved

    def _parts(self, resolved: Path) -> tuple[str, ...]:
        return resolved.relative_to(self.root).parts

    def open_write(self, raw: str) -> tuple[int, Path]:
        """Open (creating) a file for writing, without truncating until it is verified."""
        resolved = self.resolve(raw)
        try:  # folders made one by one beneath the root: a planted symlink is never followed
            fd = open_beneath(
                self.root,
                self._parts(resolved),
                os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK,
                make_dirs=True,
            )
        except IsADirectoryError:
            raise JailError(f"{raw}: is a folder") from None
        except OSError as exc:
            raise JailError(f"{raw}: cannot open for writing ({exc.strerror})") from None
        self._verify(fd, resolved, raw)
        if os.fstat(fd).st_nlink > 1:
            # A hard link can point anywhere on the same filesystem; the path cannot tell.
            os.close(fd)
            raise JailError(f"{raw}: hard-linked file (a write would change another file too)")
        return fd, resolved

    def _verify(self, fd: int, resolved: Path, raw: str) -> None:
        try:
            # Opened beneath the root without following a link; where it really is now is
            # checked once more (a folder renamed meanwhile is fine while it stays inside).
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise JailError(f"{raw}: not a regular file")
            if not self.inside(_fd_path(fd, resolved)):
                raise JailError(f"{raw}: changed while opening (refused)")
        except BaseException:
            os.close(fd)
            raise


def _fd_path(fd: int, fallback: Path) -> Path:
    # Linux tells us where the descriptor really points; elsewhere the stat check stands alone.
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return Path(os.path.realpath(fallback))


def protected_reason(jail: Jail, resolved: Path) -> tuple[str, bool] | None:
    """Why writing `resolved` is dangerous, and whether `--allow-config-edits` may lift it
    (the Theus data folder and secrets files: never); None when it is an ordinary file."""
    for home in (data_home(), config_home()):
        real = Path(os.path.realpath(home))
        if resolved == real or resolved.is_relative_to(real):
            return "the Theus data folder", False
    parts = resolved.relative_to(jail.root).parts
    rule = protected_rule(parts)
    name = parts[-1] if parts else ""
    # `.env_prod`, `.envfile`: any name of the .env family but direnv's `.envrc`
    if jail.secret(resolved) or (name.lower().startswith(".env") and rule is None):
        return "a secrets file", False
    if rule is None:
        return None
    return f"{rule.pattern} ({rule.reason})", True
