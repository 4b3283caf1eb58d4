"""The chat gate end to end on a real project (a benchmark, not a test).

    python bench/gate.py PATH [PATH ...]

For each project (indexed first into a temporary THEUS_HOME, only read) and each labelled set
in tests/knowledge/fixtures (`gate_messages.tsv`, tuned on; `gate_check.tsv`, only checked),
prints per label how many messages would get a block: the gate lets them through and the
recall's threshold keeps something. Small talk should get none; whether a project request
does depends on the project at hand (the sets' requests name a shop, not PATH).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from entrypoint.settings import apply as apply_settings
from tests.knowledge.test_gate import labelled

SETS = ("gate_messages.tsv", "gate_check.tsv")


def main() -> None:
    os.environ["THEUS_HOME"] = tempfile.mkdtemp(prefix="theus-gate-")
    os.environ.setdefault("THEUS_NO_EMBEDDINGS", "1")
    os.environ.setdefault("THEUS_NO_WATCH", "1")
    apply_settings({}, os.environ)
    from knowledge.memory import open_memory
    from knowledge.memory.context import build_context
    from knowledge.recall.gate import gate

    for path in sys.argv[1:]:
        memory = open_memory(Path(path), one_shot=True, index_if_missing=True, watch=False)
        try:
            recaller = memory.recaller()
            recaller.warm(budget_s=30.0)
            for name in SETS:
                attached: dict[str, list[bool]] = {}
                for label, message in labelled(name):
                    through = gate(message) in ("fresh", "extend")
                    block = through and bool(build_context(recaller, message).sections)
                    attached.setdefault(label, []).append(block)
                counts = ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in attached.items())
                print(f"{Path(path).name} {name}: would get a block: {counts}")
        finally:
            memory.close()


if __name__ == "__main__":
    main()
