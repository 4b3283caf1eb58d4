"""Shared fixtures: every test gets its own THEUS_HOME so no state leaks between tests, and
runs with the default settings (`configure` changes them for one test)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import pytest

from knowledge.core import settings as installed
from knowledge.core.settings import LAYERS
from knowledge.index.project import Project
from theus.settings import Settings, current


@pytest.fixture(autouse=True)
def theus_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("theus-home")
    # The process's settings for this test (restored after it) and the same home for the
    # processes it starts, which load their settings from the environment.
    monkeypatch.setattr(installed, "_current", Settings())
    configure(monkeypatch, home=str(home))
    for name in (
        "THEUS_BASE_URL",
        "THEUS_API_KEY",
        "THEUS_MODEL",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "THEUS_EMBEDDINGS_URL",
        "THEUS_EMBEDDINGS_KEY",
        "THEUS_EMBEDDINGS_MODEL",
        *(f"THEUS_NO_{layer.upper()}" for layer in LAYERS),
    ):
        monkeypatch.delenv(name, raising=False)
    return home


def configure(monkeypatch: pytest.MonkeyPatch, **changes: object) -> Settings:
    """Run the rest of the test with these settings changed, in this process (the entry
    point's job in a real one) and in the processes it starts (their `THEUS_*` variables);
    restored after the test."""
    changed = replace(current(), **changes)  # type: ignore[arg-type]
    monkeypatch.setattr(installed, "_current", changed)
    for name, value in changes.items():
        variable = f"THEUS_{name.upper()}"
        if value in ("", False, None):
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, "1" if value is True else str(value))
    return changed


def from_env(environ: Mapping[str, str]) -> Settings:
    """The settings a process started with these variables runs with (no flags, no file)."""
    from entrypoint.settings import resolve

    return resolve({}, environ, {})


T = TypeVar("T")


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Create files under root; str content is written as UTF-8."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def indexed_project(root: Path, files: Mapping[str, str | bytes]) -> Project:
    """A project written from `files` and indexed."""
    project = Project(write_tree(root, files))
    project.index()
    return project


def texts_of(message: dict[str, object]) -> list[str]:
    """A chat message's text parts: its content string, or each text part of a list."""
    content = message.get("content")
    if isinstance(content, list):
        return [str(part.get("text", "")) for part in content if isinstance(part, dict)]
    return [content] if isinstance(content, str) else []


class TickingClock:
    """Epoch seconds that move one second a call: deterministic order for timestamped records."""

    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


def closed_port() -> int:
    """A loopback port nothing listens on (bound once, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class GatedEmbedder:
    """The real local model behind a gate: each `embed` waits until the test opens it, so a
    background pass can be seen half way."""

    def __init__(self) -> None:
        import threading

        from knowledge.embed.local import LocalEmbedder

        self.inner = LocalEmbedder()
        self.gate = threading.Event()
        self.model_id, self.dim = self.inner.model_id, self.inner.dim

    def embed(self, texts: list[str], max_tokens: int | None = None):  # type: ignore[no-untyped-def]
        self.gate.wait(30)
        return self.inner.embed(texts, max_tokens)

    def close(self) -> None:
        self.gate.set()
        self.inner.close()


def run_git(root: Path, home: Path, *args: str) -> None:
    """git in `root` as a fixed author, with `home` as HOME (no user config leaks in)."""
    import os
    import subprocess

    subprocess.run(
        ["git", "-C", str(root), *args],
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "HOME": str(home),
            "PATH": os.environ["PATH"],
        },
    )


def file_types_history(root: Path, home: Path) -> Path:
    """A repository whose history says where file types are added: two files that say the
    same (the walker a little more), then three commits "add support for X files" to one."""
    write_tree(
        root,
        {
            "ignore/default_types.py": "# the kinds of files we support\n"
            "TYPES = [('python', '*.py'), ('rust', '*.rs')]\n",
            "search/walker.py": "# the kinds of files we support: walk the files\n"
            + "WALKERS.append(('python', 'walk'))\n" * 4,
        },
    )
    run_git(root, home, "init", "-q")
    run_git(root, home, "add", "-A")
    run_git(root, home, "commit", "-q", "-m", "start")
    for language in ("go", "java", "zig"):
        with open(root / "ignore/default_types.py", "a") as fh:
            fh.write(f"TYPES.append(('{language}', '*.{language}'))\n")
        run_git(root, home, "commit", "-q", "-am", f"add support for {language} files")
    return root


def present(value: T | None) -> T:
    """`value`, which the test expects to be there (a node, an episode): a clear failure
    where it is missing, and a type without None for what follows."""
    assert value is not None
    return value
