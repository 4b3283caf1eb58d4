"""Every tool and every answer has a time and a size bound, each with a clear message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import write_tree
from tests.scripted_server import ScriptedServer, text, tool
from tests.theus.conftest import model_settings
from theus.model import MAX_ANSWER_CHARS, ModelClient
from theus.tools import files
from theus.tools.base import ToolError
from theus.tools.jail import Jail

REPO = Path(__file__).resolve().parents[2]


def test_a_pattern_that_backtracks_without_end_is_cut_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(tmp_path, {"evil.txt": "a" * 40 + "!\n", "fine.txt": "aaa\n"})
    monkeypatch.setattr(files, "GREP_BUDGET_S", 1.0)
    # Without the budget this pattern backtracks over `evil.txt` for hours: the message is the
    # proof that the budget stopped it.
    with pytest.raises(ToolError, match="took longer than 1s"):
        files._grep(Jail(tmp_path), r"(a|aa)+$", ".", "", False)


SHELL_CHILD = textwrap.dedent("""
    import asyncio, sys
    import os
    from entrypoint.settings import apply
    apply({}, os.environ)  # as `theus` does at start
    from pathlib import Path
    from theus.tools.base import ToolContext
    from theus.tools.jail import Jail
    from theus.tools.shell import run_shell

    async def approve(request):
        return True

    async def main():
        ctx = ToolContext(jail=Jail(Path(sys.argv[1])), approve=approve)
        out = await run_shell.run({"command": "head -c 200000000 /dev/zero | tr '\\\\0' x"}, ctx)
        # VmHWM: this process's own peak (ru_maxrss would include the forking parent's)
        status = Path("/proc/self/status").read_text()
        peak = next(line for line in status.splitlines() if line.startswith("VmHWM"))
        rss_mb = int(peak.split()[1]) / 1024
        # the status line, after the no-sandbox warning where bubblewrap is missing
        status_line = next(line for line in out.splitlines() if line.startswith("exit "))
        print(len(out), int(rss_mb), status_line.replace(" ", "_"))

    asyncio.run(main())
""")


def test_a_command_printing_hundreds_of_megabytes_keeps_memory_bounded(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SHELL_CHILD, str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    length, rss_mb, first = done.stdout.split()  # e.g. "30042 61 exit_0"
    assert first == "exit_0"
    assert int(length) < 40_000
    assert int(rss_mb) < 200, f"{rss_mb} MB peak for 200 MB of output"


async def test_an_endless_answer_is_cut_and_marked() -> None:
    huge = "x" * (MAX_ANSWER_CHARS + 500_000)
    with ScriptedServer([text(huge)], chunk_chars=50_000) as server:
        client = ModelClient(model_settings(server.url))
        completion = await client.complete([{"role": "user", "content": "talk"}])
    assert completion.finish_reason == "length"
    assert len(completion.text) <= MAX_ANSWER_CHARS + 50_000


def test_a_model_that_never_stops_calling_tools_stops_at_the_default_limit(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n"})
    with ScriptedServer([tool("read", {"path": "a.py"}, repeat=True)]) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
        env.update(
            {
                "THEUS_HOME": str(tmp_path / "home"),
                "THEUS_NO_EMBEDDINGS": "1",
                "THEUS_NO_WATCH": "1",
                "THEUS_BASE_URL": server.url,
                "THEUS_MODEL": "test-model",
                "THEUS_MAX_TURNS": "4",
            }
        )
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "entrypoint",
                "--path",
                str(root),
                "-p",
                "loop",
                "--output-format",
                "json",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        requests = len(server.requests)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["subtype"] == "error_max_turns" and result["num_turns"] == 4
    assert requests == 4
    assert "THEUS_MAX_TURNS" in done.stderr
