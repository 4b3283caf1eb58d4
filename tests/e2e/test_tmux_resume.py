"""Walk-through in a real terminal (tmux): `theus -r` with no id lists the sessions, Enter
resumes one, its earlier messages are on screen, and the next request carries them to the
model. The model is the scripted server."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from tests.conftest import write_tree
from tests.e2e.test_tmux_smoke import Terminal, _theus, app_env, terminal  # noqa: F401
from tests.scripted_server import ScriptedServer, text
from theus.sessions import SessionStore

EARLIER_REQUEST = "EARLIER-REQUEST what does price_of do"
EARLIER_ANSWER = "EARLIER-ANSWER: it returns the unit price."
NEW_ANSWER = "NEW-ANSWER: yes, in cents."


def test_resume_picker_shows_the_earlier_conversation(
    terminal: Terminal,  # noqa: F811
    tmp_path: Path,
    theus_home: Path,
) -> None:
    repo = write_tree(
        tmp_path / "shop",
        {
            "pricing.py": 'def price_of(item):\n    """Unit price."""\n    return item["price"]\n',
        },
    )
    session = SessionStore(repo).create(root=str(repo), model="test-model", headless=False)
    for message in (
        {"role": "system", "content": "You are Theus."},
        {"role": "user", "content": EARLIER_REQUEST},
        {"role": "assistant", "content": EARLIER_ANSWER},
    ):
        session.append({"type": "message", "message": message})
    with ScriptedServer([text(NEW_ANSWER)]) as server:
        env = app_env(theus_home, server.url)
        # The pane outlives the app for a moment, to show what it printed on the way out.
        command = shlex.join([*_theus(), "--path", str(repo), "-r"]) + "; sleep 60"
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
        picker = terminal.wait_for("Resume a session")
        assert session.id in picker and EARLIER_REQUEST[:30] in picker
        terminal.run("send-keys", "-t", "theus", "Enter")
        shown = terminal.wait_for(f"resumed session {session.id}")
        assert EARLIER_REQUEST in shown and EARLIER_ANSWER in shown
        terminal.run("send-keys", "-t", "theus", "-l", "in cents?")
        terminal.run("send-keys", "-t", "theus", "Enter")
        terminal.wait_for(NEW_ANSWER)
        sent = [m.get("content") for m in server.requests[0]["messages"]]
        assert EARLIER_ANSWER in sent  # the model got the history too
        terminal.run("send-keys", "-t", "theus", "C-c")
        terminal.run("send-keys", "-t", "theus", "C-c")  # twice within 2 s: quit
        # As claude and codex do: how to come back, on the terminal the app gave back.
        terminal.wait_for(f"Resume this session with: theus -r {session.id}")
        terminal.run("kill-session", "-t", "theus")
        terminal.wait_gone()
