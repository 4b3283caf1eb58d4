"""The link race, many times (a benchmark of safety, not a test; the suite runs a bounded
version in tests/security/test_races.py).

    python bench/race.py [--trials 1000]

A thread swaps a project folder for a symlink to a folder outside the root, as fast as it
can, while Theus indexes the project (`--trials` index runs) and while the write tool writes
into the swapped folder (`--trials` writes). Prints: index runs that raised, indexes holding a
node from outside, files and folders created outside, writes refused.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from entrypoint.settings import apply as apply_settings
from knowledge.index.project import Project
from tests.conftest import write_tree
from tests.racer import Swapper
from theus.protocol import ApprovalRequest
from theus.tools.base import ToolContext, ToolError
from theus.tools.files import write_file
from theus.tools.jail import Jail, JailError

MARKER = "outside_marker_9731"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    top = Path(tempfile.mkdtemp(prefix="theus-race-"))
    outside = write_tree(top / "outside", {"loot.py": f"def {MARKER}():\n    return 1\n"})
    root = write_tree(top / "repo", {"pkg/mod.py": "def inside():\n    return 1\n"})
    os.environ["THEUS_HOME"] = str(top / "home")
    apply_settings({}, os.environ)
    raised = leaked = 0
    with Swapper(root / "pkg", outside):
        for _ in range(args.trials):
            project = Project(root)
            try:
                project.index()
                project.save()
                with project.graph.lock:
                    leaked += any(MARKER in n.label for n in project.graph.nodes())
            except Exception:
                raised += 1
            finally:
                project.close()
    before = {p.relative_to(outside) for p in outside.rglob("*")}

    async def yes(request: ApprovalRequest) -> bool:
        return True

    ctx = ToolContext(jail=Jail(root), approve=yes)
    refused = 0
    with Swapper(root / "pkg", outside):
        for i in range(args.trials):
            try:
                asyncio.run(
                    write_file.run({"path": f"pkg/d{i % 7}/f{i}.py", "content": "x\n"}, ctx)
                )
            except (ToolError, JailError):
                refused += 1
    created = {p.relative_to(outside) for p in outside.rglob("*")} - before
    print(f"index: {args.trials} runs, {raised} raised, {leaked} held a node from outside")
    print(
        f"writes: {args.trials} writes, {refused} refused, {len(created)} files or folders "
        "created outside the root"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
