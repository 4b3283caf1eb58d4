"""Escape sequences planted in file names, a folder name, memories, episodes, sessions and a
model server's error text reach no terminal through a command: every human-readable output
drops them, JSON carries them escaped. Real processes (`python -m entrypoint`), a real index
and the scripted server; the app's graph panel through Textual's own renderer."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import configure, write_tree
from tests.scripted_server import Reply, ScriptedServer, error, text
from tests.theus.test_headless import theus

# A clipboard write (OSC 52), a screen clear (CSI), an 8-bit CSI (C1), a right-to-left
# override and a bell: each acts on a terminal that prints it.
PLANTED = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07\x1b[2J\x9b2J\u202egnp.exe\u202c"
ACTIVE = {
    "\x1b",
    "\x07",
    "\r",
    *map(chr, range(0x80, 0xA0)),
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
}


def acting(output: str) -> list[str]:
    """The characters of `output` that act on a terminal instead of being shown."""
    return sorted({repr(c) for c in output if c in ACTIVE})


def shown(done: subprocess.CompletedProcess[str]) -> str:
    assert not acting(done.stdout) and not acting(done.stderr), (
        acting(done.stdout),
        acting(done.stderr),
    )
    return done.stdout


def raw_json(done: subprocess.CompletedProcess[str]) -> Any:
    """A --json answer: nothing raw that acts on a terminal, the planted text intact."""
    assert done.returncode == 0, done.stderr
    assert not acting(done.stdout), acting(done.stdout)
    return json.loads(done.stdout)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    configure(monkeypatch, home=str(tmp_path / "home"))
    root = write_tree(
        tmp_path / f"shop{PLANTED[:9]}",
        {
            f"invoice{PLANTED}.py": f'def render_invoice(order):\n    """Render the invoice '
            f'{PLANTED} for an order."""\n    return order\n',
            "cart.py": "def cart_total(items):\n    return sum(items)\n",
        },
    )
    done = theus(["index", "--no-embed"], None, root)
    assert done.returncode == 0, done.stderr
    return root


def test_recall_and_status_show_no_planted_sequence(repo: Path) -> None:
    out = shown(theus(["recall", "render the invoice for an order"], None, repo))
    assert "invoice" in out and "Y3VybCBldmlsLnNoIHwgc2g=" not in out
    answer = raw_json(theus(["recall", "render the invoice", "--json"], None, repo))
    assert any(PLANTED in hit["path"] for hit in answer["results"])
    assert "Indexed" in shown(theus(["index", "--no-embed"], None, repo))
    assert "root" in shown(theus(["status"], None, repo))
    assert PLANTED[:9] in raw_json(theus(["status", "--json"], None, repo))["index"]["root"]


def test_memories_and_episodes_show_no_planted_sequence(repo: Path) -> None:
    from knowledge.episodes import EpisodeStore
    from knowledge.index.project import Project

    note = f"the invoice printer {PLANTED} needs a reset"
    assert theus(["memory", "add", note], None, repo).returncode == 0
    assert "invoice printer" in shown(theus(["memory", "list"], None, repo))
    memories = raw_json(theus(["memory", "list", "--json"], None, repo))
    assert any("invoice printer" in m["text"] for m in memories)
    project = Project(repo)
    EpisodeStore(project).record(
        "manual",
        f"Invoice {PLANTED} fixed\n\nThe body {PLANTED}.",
        "s-1",
        files=[f"invoice{PLANTED}.py"],
    )
    project.close()
    assert "Invoice" in shown(theus(["episodes", "list"], None, repo))
    listed = raw_json(theus(["episodes", "list", "--json"], None, repo))
    assert PLANTED in listed[0]["title"]
    page = shown(theus(["episodes", "show", "1"], None, repo))
    assert "The body" in page and "invoice" in page
    assert PLANTED in raw_json(theus(["episodes", "show", "1", "--json"], None, repo))["text"]


def test_sessions_and_the_retry_warning_show_no_planted_sequence(
    server: ScriptedServer, repo: Path
) -> None:
    # The server fails once with the planted text as its error, once with it as a raw body.
    server.add(
        error(500, f"overloaded {PLANTED}"),
        Reply(
            status=502, raw=f"<html>{PLANTED} bad gateway</html>".encode(), content_type="text/html"
        ),
        text(f"done {PLANTED}"),
    )
    run = theus(["-p", f"fix the invoice {PLANTED}"], server, repo)
    assert run.returncode == 0, run.stderr
    assert "retry" in run.stderr and "overloaded" in run.stderr
    assert shown(run).startswith("done")
    assert "fix the invoice" in shown(theus(["sessions"], None, repo))
    assert PLANTED in raw_json(theus(["sessions", "--json"], None, repo))[0]["title"]
    server.add(text(f"again {PLANTED}"))
    answer = raw_json(theus(["-p", "again", "--output-format", "json"], server, repo))
    assert answer["result"] == f"again {PLANTED}"


def test_watch_shows_a_planted_file_name_without_its_sequence(repo: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
    env.update({"THEUS_HOME": os.environ["THEUS_HOME"], "THEUS_NO_EMBEDDINGS": "1"})
    watcher = subprocess.Popen(
        [sys.executable, "-m", "entrypoint", "watch", "--polling", "--path", str(repo)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Stopped (as `kill` does) once it showed the new file, or after two minutes regardless:
    # a line that never comes must not hang the test.
    stop = threading.Timer(120, watcher.send_signal, (signal.SIGTERM,))
    stop.start()
    try:
        assert watcher.stdout is not None
        lines = [watcher.stdout.readline()]
        assert lines[0].startswith("Watching"), lines
        (repo / f"late{PLANTED}.py").write_text("def late():\n    pass\n")
        while lines[-1] and "late" not in lines[-1]:
            lines.append(watcher.stdout.readline())
        watcher.send_signal(signal.SIGTERM)
        rest, errors = watcher.communicate(timeout=60)
    finally:
        stop.cancel()
        watcher.kill()
    output = "".join(lines) + rest
    assert "late" in output, output
    assert not acting(output) and not acting(errors), (acting(output), acting(errors))


async def test_the_graph_panel_renders_no_planted_sequence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.widgets import Tree

    from tests.tui.conftest import SETTINGS, ready, wait_for
    from tui.app import TheusApp

    configure(monkeypatch, no_watch=True)
    configure(monkeypatch, no_embeddings=True)
    root = write_tree(
        tmp_path / "shop",
        {
            f"invoice{PLANTED}.py": f'def render_invoice(order):\n    """Render {PLANTED}."""\n'
            f"    return order  # {PLANTED}\n",
            "[b]x.py": "x = 1\n",
        },
    )  # a name, not markup
    app = TheusApp(root, None, agent_settings=SETTINGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await pilot.press("f3")
        screen = await wait_for(pilot, lambda: app.current_mode == "graph" and app.screen)
        tree = screen.query_one("#tree", Tree)
        await wait_for(pilot, lambda: tree.root.children)
        invoice = next(n for n in tree.root.children if "invoice" in str(n.label))
        assert "[b]x.py" in [str(n.label) for n in tree.root.children]
        tree.move_cursor(invoice)
        await wait_for(pilot, lambda: screen.current and "invoice" in screen.current)
        await wait_for(pilot, lambda: "return order" in screen.query_one("#preview").text)
        await pilot.pause()
        # What the app writes to the terminal for the whole screen.
        written = screen._compositor.render_full_update().render_segments(app.console)
    # Textual's own sequences are CSI (colours, cursor moves), never a screen clear.
    assert "\x1b[2J" not in written
    seen = re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]", "", written)
    assert "invoicegnp.exe.py" in seen and "return order" in seen
    assert not acting(seen), acting(seen)


def test_log_lines_carry_no_secret() -> None:
    import logging

    from theus.printable import PrintableFormatter

    key = "sk-proj-" + "Zq8Xw2Lm4Np6Rt0Vb3Cd5Fg7Hj9Kk1"
    record = logging.LogRecord(
        "theus", logging.WARNING, __file__, 1, "server said: bad key %s", (key,), None
    )
    line = PrintableFormatter("%(message)s").format(record)
    assert key not in line and "[redacted:" in line
