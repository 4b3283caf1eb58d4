"""A Ctrl-C while `theus` starts ends the command as interrupted (exit 130, one line), also
when Python lost the KeyboardInterrupt on the way: seen under load, once as a `-p` run that
went on to ask the model (exit 1), once as numpy's ImportError (exit 1 with a traceback).

Each case runs in a process of its own: the first frame's Ctrl-C handler is process-wide."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.scripted_server import ScriptedServer, text

# Python runs a signal's handler wherever the main thread is, a finaliser too, and there it
# prints the KeyboardInterrupt ("Exception ignored in") and goes on: the Ctrl-C is lost.
LOST_IN_A_FINALISER = """
import os, signal, sys
from entrypoint import launch
from theus.service.interrupts import listen

listen()

class Finaliser:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100_000):  # the handler runs in here
            pass

Finaliser()
sys.argv = ["theus", *sys.argv[1:]]
launch.run()
"""

# numpy's C code turns a KeyboardInterrupt raised while it imports `datetime` into this.
TURNED_INTO_IMPORT_ERROR = """
import os, signal, sys
import theus.cli.commands.status as status
from entrypoint import launch

def run(_args):
    try:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100_000):
            pass
    except KeyboardInterrupt:
        raise ImportError('PyCapsule_Import could not import module "datetime"') from None
    return 0

status.run = run
sys.argv = ["theus", *sys.argv[1:]]
launch.run()
"""


def _run(script: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update({"THEUS_HOME": os.environ["THEUS_HOME"], "THEUS_NO_WATCH": "1", **extra})
    return env


def test_a_ctrl_c_lost_while_p_starts_still_stops_it_before_the_model_is_asked(
    server: ScriptedServer, repo: Path
) -> None:
    server.add(text("the run went on"))
    env = _env(THEUS_BASE_URL=server.url, THEUS_MODEL="test-model", THEUS_NO_EMBEDDINGS="1")
    done = _run(LOST_IN_A_FINALISER, ["--path", str(repo), "-p", "where is the cart"], env)
    assert "Exception ignored in" in done.stderr  # Python did lose it
    assert done.returncode == 130, done.stderr
    assert done.stderr.endswith("theus: interrupted\n")
    assert not server.requests
    assert "the run went on" not in done.stdout


def test_a_ctrl_c_that_surfaced_as_another_error_is_an_interrupt(repo: Path) -> None:
    done = _run(TURNED_INTO_IMPORT_ERROR, ["--path", str(repo), "status"], _env())
    assert done.returncode == 130, done.stderr
    assert done.stderr == "theus: interrupted\n"


def test_the_same_error_without_a_ctrl_c_is_still_an_error(repo: Path) -> None:
    no_ctrl_c = TURNED_INTO_IMPORT_ERROR.replace(
        "os.kill(os.getpid(), signal.SIGINT)", "raise KeyboardInterrupt"
    )  # caught and turned all the same, but nobody pressed Ctrl-C
    done = _run(no_ctrl_c, ["--path", str(repo), "status"], _env())
    assert done.returncode == 1
    assert "ImportError: PyCapsule_Import" in done.stderr
    assert "interrupted" not in done.stderr
