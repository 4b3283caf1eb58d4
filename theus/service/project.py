"""A project as every front end opens it: the folder checked once with one clear line for
each way it can be wrong, whether Theus keeps data for it yet, and a read-only look at it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from knowledge.core.errors import TheusError

if TYPE_CHECKING:
    from knowledge.index.project import Project


class UsageError(TheusError):
    """Bad input from the user: printed as one line, exit status 2."""


def project_root(arg: str | None) -> Path:
    path = Path(arg or ".").expanduser()
    if not path.exists():
        raise UsageError(f"no such folder: {path} (give the project folder, e.g. `theus index .`)")
    if not path.is_dir():
        raise UsageError(f"not a folder: {path} (give the project folder, not a file)")
    try:  # unreadable, it would index as an empty project
        with os.scandir(path):
            pass
    except OSError as exc:
        raise UsageError(
            f"cannot read the folder {path}: {exc.strerror or exc} (check its permissions)"
        ) from None
    return path.resolve()


def has_data(root: Path) -> bool:
    """Whether Theus keeps anything for this project yet (its data folder exists)."""
    from knowledge.core.paths import ProjectPaths

    return ProjectPaths.for_root(root).home.exists()


@contextlib.contextmanager
def looking_at(root: Path) -> Iterator[Project]:
    """The project, for a command that only reads it. A project Theus never saw is opened over
    a throwaway data folder: it reads as empty, and looking creates nothing on disk."""
    import tempfile

    from knowledge.core.paths import ProjectPaths
    from knowledge.index.project import Project

    with contextlib.ExitStack() as stack:
        paths = ProjectPaths.for_root(root)
        if not paths.home.exists():
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="theus-"))
            paths = ProjectPaths(paths.root, Path(scratch))
        project = Project(root, paths)
        try:
            yield project
        finally:
            project.close()
