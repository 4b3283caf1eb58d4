"""One-shot commands with the local embedder exit cleanly: a process that exits while
onnxruntime is still loading on another thread aborts (rc 134, "terminate called without an
active exception"), so `theus recall` waits for the load it started before it exits, also
when Ctrl-C stops it half way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import write_tree

RUNS = 50


def test_fifty_one_shot_recalls_with_the_local_embedder_all_exit_0(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "repo",
        {
            "shop/cart.py": "class Cart:\n    def total(self, items):\n        return sum(items)\n",
            "shop/pricing.py": "def discount(price, rate):\n    return price * (1 - rate)\n",
            "docs/guide.md": "# Guide\n\nHow carts are priced.\n",
        },
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update({"THEUS_HOME": str(tmp_path / "home"), "THEUS_NO_WATCH": "1"})
    cli = [sys.executable, "-m", "entrypoint", "--path", str(root)]
    index = subprocess.run([*cli, "index"], env=env, capture_output=True, text=True, timeout=300)
    assert index.returncode == 0, index.stderr
    failures = []
    for i in range(RUNS):
        done = subprocess.run(
            [*cli, "recall", "--json", f"cart price discount {i}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0 or "terminate called" in done.stderr or not done.stdout:
            failures.append((i, done.returncode, done.stderr[-300:]))
    assert not failures, failures

    # Ctrl-C at every moment, model load included: 130, or 0 when it was done, or death by
    # the signal itself when it lands while the interpreter starts or finalises.
    interrupted = 0
    for i in range(RUNS // 2):
        proc = subprocess.Popen(
            [*cli, "recall", "cart price"],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        time.sleep(0.15 + 0.02 * i)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
        interrupted += proc.returncode == 130
        if proc.returncode not in (0, 130, -signal.SIGINT) or "terminate called" in stderr:
            failures.append((i, proc.returncode, stderr[-300:]))
    assert not failures, failures
    assert interrupted >= RUNS // 8  # most signals landed before the answer


def test_ctrl_c_inside_a_class_body_is_an_interrupt_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seen 1 run in 50 above: Ctrl-C while `rich.table` was being imported reached Python
    3.11 wrapped in a RuntimeError ("Error calling __set_name__") and printed a traceback."""
    import theus.cli.commands.status as status
    from entrypoint.cli import main

    class Field:
        def __set_name__(self, owner: type, name: str) -> None:
            raise KeyboardInterrupt

    def interrupted(_args: object) -> int:
        type("Column", (), {"cells": Field()})  # a class body, as an import runs it
        return 0

    monkeypatch.setattr(status, "run", interrupted)
    assert main(["--path", str(tmp_path), "status"]) == 130
    assert capsys.readouterr().err == "theus: interrupted\n"


def _wrapped_interrupt() -> RuntimeError:
    """What Python 3.11 raises for a Ctrl-C inside a class body's `__set_name__`."""
    error = RuntimeError("Error calling __set_name__ on 'Field' instance 'home'")
    error.__cause__ = KeyboardInterrupt()
    return error


def test_ctrl_c_while_the_settings_load_is_an_interrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seen under load in the fifty runs above: the Ctrl-C landed while the settings'
    dataclass was being built, before the command ran, and exited 1 with a traceback."""
    import entrypoint.cli as cli

    def apply(*_args: object) -> None:
        raise _wrapped_interrupt()

    monkeypatch.setattr(cli, "apply_settings", apply)
    assert cli.main(["--path", str(tmp_path), "status"]) == 130
    assert capsys.readouterr().err == "theus: interrupted\n"


def test_ctrl_c_while_the_command_is_imported_is_an_interrupt(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first frame (`entrypoint.launch`) imports the command: a Ctrl-C in that import
    exits 130 with one line too."""
    import types

    from entrypoint import launch

    class Interrupted(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            raise _wrapped_interrupt()

    monkeypatch.setitem(sys.modules, "entrypoint.cli", Interrupted("entrypoint.cli"))
    previous = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit) as exited:
            launch.run()
    finally:  # the first frame's Ctrl-C handler is the process's: this one is pytest's
        signal.signal(signal.SIGINT, previous)
    assert exited.value.code == 130
    assert capsys.readouterr().err == "theus: interrupted\n"


def test_a_one_shot_command_skips_the_teardown_but_its_output_arrives_whole(tmp_path: Path) -> None:
    """The interpreter's teardown (a final collection, every module's and native library's
    destructors) took ~0.3 s after `theus -p` had answered: commands leave with `exit_now`."""
    files = {
        f"pkg/mod{i}.py": f"def cart_total_{i}(items):\n    return sum(items)\n" for i in range(120)
    }
    root = write_tree(tmp_path / "repo", files)
    hooks = write_tree(
        tmp_path / "hooks",
        {
            "sitecustomize.py": (
                "import atexit, os\n"
                "atexit.register(lambda: open(os.environ['TEARDOWN_MARK'], 'w').close())\n"
            )
        },
    )
    mark = tmp_path / "teardown-ran"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update(
        {
            "THEUS_HOME": str(tmp_path / "home"),
            "THEUS_NO_EMBEDDINGS": "1",
            "PYTHONPATH": str(hooks),
            "TEARDOWN_MARK": str(mark),
        }
    )
    cli = [sys.executable, "-m", "entrypoint", "--path", str(root)]
    assert subprocess.run([*cli, "index"], env=env, timeout=300).returncode == 0
    mark.unlink(missing_ok=True)
    done = subprocess.run(
        [*cli, "recall", "--json", "--top", "100", "cart total items"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["files"]) == 100  # every byte flushed before leaving
    assert not mark.exists()
    usage = subprocess.run(
        [*cli, "recall", "--top", "0", "x"], env=env, capture_output=True, text=True, timeout=120
    )
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1
