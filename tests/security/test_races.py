"""Races and links: a folder swapped for a symlink to outside the root while Theus indexes or
writes never brings outside files into the graph nor creates anything outside; a hard link to
a file elsewhere is not read. Real folders, a real racing thread, bounded trials (the long
version is bench/race.py)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowledge.index.project import Project
from tests.conftest import configure, write_tree
from tests.racer import Swapper
from theus.protocol import ApprovalRequest
from theus.tools.base import ToolContext, ToolError
from theus.tools.files import grep, read_file, write_file
from theus.tools.jail import Jail, JailError

MARKER = "outside_marker_9731"


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    outside = write_tree(
        tmp_path / "outside", {"loot.py": f"def {MARKER}():\n    return 'stolen'\n"}
    )
    root = write_tree(
        tmp_path / "repo",
        {"pkg/mod.py": "def inside_function():\n    return 1\n", "main.py": "x = 1\n"},
    )
    yield root, outside


def test_a_swapped_folder_never_brings_outside_files_into_the_graph(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, outside = tree
    configure(monkeypatch, home=str(tmp_path / "home"))
    with Swapper(root / "pkg", outside):
        for _ in range(40):
            project = Project(root)
            try:
                project.index()  # must never raise, whatever the walk meets
                project.save()
                with project.graph.lock:
                    assert not any(MARKER in (n.label + n.summary) for n in project.graph.nodes())
            finally:
                project.close()
    for db in (tmp_path / "home").rglob("*"):
        if db.is_file():
            assert MARKER.encode() not in db.read_bytes(), db


def test_writes_during_a_swap_create_nothing_outside(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    before = sorted(p.name for p in outside.rglob("*"))

    async def yes(request: ApprovalRequest) -> bool:
        return True

    ctx = ToolContext(jail=Jail(root), approve=yes)
    refused = 0
    with Swapper(root / "pkg", outside):
        for i in range(400):
            try:
                asyncio.run(
                    write_file.run({"path": f"pkg/new{i % 5}/f{i}.py", "content": "x = 1\n"}, ctx)
                )
            except (ToolError, JailError):
                refused += 1
    assert sorted(p.name for p in outside.rglob("*")) == before
    assert refused < 400  # most writes land: the race is refused, not the tool


def test_a_hard_link_to_a_file_elsewhere_is_not_read(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    os.link(outside / "loot.py", root / "innocent.py")

    async def yes(request: ApprovalRequest) -> bool:
        return True

    ctx = ToolContext(jail=Jail(root), approve=yes)
    with pytest.raises(JailError, match="hard-linked"):
        asyncio.run(read_file.run({"path": "innocent.py"}, ctx))
    found: str = asyncio.run(grep.run({"pattern": "stolen"}, ctx))
    assert found.startswith("no matches")  # the linked file is skipped, like a secret
