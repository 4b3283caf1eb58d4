"""Smoke test: the real `theus` command in a real terminal (tmux), a request typed on the
keyboard, the answer read back from the screen. The model is the scripted server."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write_tree
from tests.e2e.debian import ensure
from tests.scripted_server import ScriptedServer, text

ANSWER = "SMOKE-ANSWER: price_of returns the unit price."


def _tmux() -> str:
    return ensure("tmux", "tmux")


def _theus() -> list[str]:
    script = Path(sys.executable).with_name("theus")
    return [str(script)] if script.exists() else [sys.executable, "-m", "entrypoint"]


def app_env(theus_home: Path, server_url: str) -> dict[str, str]:
    """The app's environment in tmux: the test's own without the size a shell may export
    (Textual sizes itself by COLUMNS and LINES when set, not by the 120x36 pane), plus the
    scripted model."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {
        **env,
        "THEUS_HOME": str(theus_home),
        "THEUS_BASE_URL": server_url,
        "THEUS_API_KEY": "k",
        "THEUS_MODEL": "test-model",
        "THEUS_NO_WATCH": "1",
        "TERM": "xterm-256color",
    }


class Terminal:
    def __init__(self, tmux: str, socket: str) -> None:
        self.tmux = tmux
        self.socket = socket

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [self.tmux, "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        )
        return done.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "theus")

    def wait_for(self, needle: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if needle in shown:
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} never appeared; the screen:\n{shown}")
            time.sleep(0.1)  # polling the pane: there is no event to wait on

    def wait_gone(self, timeout: float = 30.0) -> None:
        """The app quit and its tmux session ended with it."""
        deadline = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() > deadline:
                raise AssertionError(f"theus did not quit; the screen:\n{self.screen()}")
            time.sleep(0.1)  # polling the pane: there is no event to wait on

    def alive(self) -> bool:
        return (
            subprocess.run(
                [self.tmux, "-L", self.socket, "has-session", "-t", "theus"],
                capture_output=True,
                timeout=30,
            ).returncode
            == 0
        )


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(_tmux(), f"theus-smoke-{os.getpid()}-{tmp_path.name}")
    try:
        yield term
    finally:
        subprocess.run(
            [term.tmux, "-L", term.socket, "kill-server"], capture_output=True, timeout=30
        )


def test_theus_answers_in_a_real_terminal(
    terminal: Terminal, tmp_path: Path, theus_home: Path
) -> None:
    repo = write_tree(
        tmp_path / "shop",
        {
            "pricing.py": 'def price_of(item):\n    """Unit price."""\n    return item["price"]\n',
        },
    )
    with ScriptedServer([text(ANSWER)]) as server:
        env = app_env(theus_home, server.url)
        command = shlex.join([*_theus(), "--path", str(repo)])
        subprocess.run(
            [
                terminal.tmux,
                "-L",
                terminal.socket,
                "new-session",
                "-d",
                "-s",
                "theus",
                "-x",
                "120",
                "-y",
                "36",
                command,
            ],
            env=env,
            check=True,
            timeout=30,
        )
        terminal.wait_for("Ask, or type / for commands")
        terminal.wait_for("test-model")
        terminal.run("send-keys", "-t", "theus", "-l", "what does price_of do")
        terminal.run("send-keys", "-t", "theus", "Enter")
        shown = terminal.wait_for(ANSWER)
        assert "what does price_of do" in shown
        assert server.requests and server.requests[0]["model"] == "test-model"
        terminal.run("send-keys", "-t", "theus", "C-q")
        terminal.wait_gone()


def test_quitting_gives_the_terminal_back_as_it_was(
    terminal: Terminal, tmp_path: Path, theus_home: Path
) -> None:
    """The app ends the process itself on ctrl+q (no Textual teardown): the terminal's modes,
    screen, mouse, cursor and line settings, must still be restored, and the session kept."""
    repo = write_tree(tmp_path / "shop", {"pricing.py": "def price_of(item):\n    return 1\n"})
    with ScriptedServer([text(ANSWER)]) as server:
        env = app_env(theus_home, server.url)
        before, after = tmp_path / "stty-before", tmp_path / "stty-after"
        theus = shlex.join([*_theus(), "--path", str(repo)])
        script = (
            f"stty -g > {shlex.quote(str(before))}; {theus}; echo THEUS-EXITED rc=$?; "
            f"stty -g > {shlex.quote(str(after))}; sleep 60"
        )
        subprocess.run(
            [
                terminal.tmux,
                "-L",
                terminal.socket,
                "new-session",
                "-d",
                "-s",
                "theus",
                "-x",
                "120",
                "-y",
                "36",
                "sh",
                "-c",
                script,
            ],
            env=env,
            check=True,
            timeout=30,
        )
        terminal.wait_for("Ask, or type / for commands")
        terminal.run("send-keys", "-t", "theus", "-l", "what does price_of do")
        terminal.run("send-keys", "-t", "theus", "Enter")
        terminal.wait_for(ANSWER)
        terminal.run("send-keys", "-t", "theus", "C-q")
        shown = terminal.wait_for("THEUS-EXITED rc=0")
        deadline = time.monotonic() + 10
        while not after.exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # the shell's next line: no event to wait on
        modes = terminal.run(
            "display", "-p", "-t", "theus", "#{alternate_on} #{mouse_any_flag} #{cursor_flag}"
        ).split()
        assert modes == ["0", "0", "1"], (modes, shown)
        assert after.read_text() == before.read_text()
        assert "Ask, or type" not in shown  # the app's screen is gone with the alternate one
    sessions = list(theus_home.rglob("sessions/*"))
    assert sessions, "the conversation was not kept"
