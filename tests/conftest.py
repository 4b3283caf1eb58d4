"""Shared fixtures: every test gets its own THEUS_HOME so no state leaks between tests."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from knowledge.core.switches import LAYERS
from knowledge.index.project import Project


@pytest.fixture(autouse=True)
def theus_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("theus-home")
    monkeypatch.setenv("THEUS_HOME", str(home))
    for name in (
        "THEUS_BASE_URL",
        "THEUS_API_KEY",
        "THEUS_MODEL",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "THEUS_EMBEDDINGS_URL",
        "THEUS_EMBEDDINGS_KEY",
        "THEUS_EMBEDDINGS_MODEL",
        *(f"THEUS_NO_{layer}" for layer in LAYERS),
    ):
        monkeypatch.delenv(name, raising=False)
    return home


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


def indexed_project(root: Path, files: dict[str, str | bytes]) -> Project:
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
