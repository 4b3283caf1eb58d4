"""Folder links into a sibling folder inside the root are duplicates, not loops: the linked
files are indexed once, where they live, and `theus index` names them so."""

from __future__ import annotations

import os
from pathlib import Path

from knowledge.index.project import Project
from knowledge.index.walker import walk
from tests.conftest import write_tree


def test_two_folder_links_into_a_sibling_are_not_loops(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "root",
        {
            "shared/util.py": "X = 1\n",
            "shared/deep/more.py": "Y = 2\n",
            "app/main.py": "import util\n",
        },
    )
    os.symlink("../shared", root / "app" / "lib")  # relative, from a sibling folder
    os.symlink(root / "shared" / "deep", root / "app" / "deep")  # absolute, one level down
    os.symlink("shared", root / "alias")  # beside its target
    result = walk(root)
    assert result.skipped == {
        "alias": "symlink-duplicate",
        "app/deep": "symlink-duplicate",
        "app/lib": "symlink-duplicate",
    }
    assert [f.rel for f in result.files] == ["app/main.py", "shared/deep/more.py", "shared/util.py"]
    project = Project(root)
    try:
        report = project.index()
    finally:
        project.close()
    assert report.skipped == {"symlink-duplicate": 3} and report.files == 3
