"""The store's rows come out in the same order whatever the interpreter's string hashing:
their order is recall's tie-break, so two indexes of one tree must rank ties alike."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import write_tree

DUMP = """
import os, sys
from pathlib import Path
from entrypoint.settings import apply
apply({}, os.environ)
from knowledge.index.project import Project
project = Project(Path(sys.argv[1]))
project.index()
project.save()
print("\\n".join(k for (k,) in project.store._read("SELECT key FROM nodes ORDER BY rowid")))
project.close()
"""


def test_two_indexes_under_different_hash_seeds_store_rows_alike(tmp_path: Path) -> None:
    files = {
        f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n\nclass C{i}:\n    pass\n" for i in range(40)
    }
    root = write_tree(tmp_path / "repo", files)
    repo_root = Path(__file__).resolve().parents[2]
    orders = []
    for seed in ("1", "2"):
        env = {
            **os.environ,
            "PYTHONHASHSEED": seed,
            "THEUS_HOME": str(tmp_path / f"home{seed}"),
            "THEUS_NO_EMBEDDINGS": "1",
            "PYTHONPATH": str(repo_root),
        }
        done = subprocess.run(
            [sys.executable, "-c", DUMP, str(root)],
            env=env,
            cwd=repo_root,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        orders.append(done.stdout.split())
    assert len(orders[0]) > 80 and orders[0] == orders[1]
