"""A Ctrl-C while `theus` starts ends the command as interrupted (exit 130, one line), also
when Python lost the KeyboardInterrupt on the way: seen under load, once as a `-p` run that
went on to ask the model (exit 1), once as numpy's ImportError (exit 1 with a traceback).

Each case runs in a process of its own: the first frame's Ctrl-C handler is process-wide."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import texts_of
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


def _processes() -> list[tuple[int, bytes, str, int]]:
    """(pid, command line, state, parent pid) of every process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        found.append((int(entry.name), cmdline, fields[0], int(fields[1])))
    return found


def _processes_naming(root: Path) -> list[int]:
    """The live (not zombie) processes whose command line names `root`."""
    return [
        pid for pid, cmd, state, _ in _processes() if str(root).encode() in cmd and state != "Z"
    ]


def _zombie_children(parent: int) -> list[int]:
    return [pid for pid, _, state, ppid in _processes() if state == "Z" and ppid == parent]


def _children(parent: int) -> list[int]:
    return [pid for pid, _, state, ppid in _processes() if ppid == parent and state != "Z"]


def _until(done: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.01)


def test_the_first_block_child_is_reaped_and_a_ctrl_c_ends_it_with_the_run(
    server: ScriptedServer, repo: Path
) -> None:
    """`theus -p` on an indexed project builds its first block in a forked child
    (`theus.agent.block_child`): by the first request the child has answered and been
    reaped, and a Ctrl-C to the terminal's process group ends it with the run, whether the
    child is still working or long done."""
    env = _env(THEUS_BASE_URL=server.url, THEUS_MODEL="test-model", THEUS_NO_EMBEDDINGS="1")
    cli = [sys.executable, "-m", "entrypoint", "--path", str(repo)]
    assert subprocess.run([*cli, "index"], env=env, capture_output=True).returncode == 0

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*cli, "-p", "where is the cart total computed"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own group, as a terminal's foreground job is
        )

    server.add(text("the total is in cart.py", delay_s=5))
    proc = start()
    _until(lambda: server.requests, "asked the model")
    assert "cart.py" in "".join(texts_of(server.requests[0]["messages"][1]))  # the block
    assert _zombie_children(proc.pid) == []
    assert _processes_naming(repo) == [proc.pid]  # the child is gone
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out == "the total is in cart.py\n", err

    server.add(text("too late", delay_s=60))
    for child_alive in (True, False):
        asked = len(server.requests)
        proc = start()
        if child_alive:  # Ctrl-C while the child builds the block
            _until(lambda: _children(proc.pid), "forked")  # noqa: B023 - this proc
        else:  # Ctrl-C while the model answers, the child long gone
            _until(lambda: len(server.requests) > asked, "asked the model")  # noqa: B023
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Traceback" not in err, err
        _until(lambda: not _processes_naming(repo), "ended every process")
