"""`theus index` embeds what changed with the local model; `--no-embed` and the kill switch skip
it. Through the real console script."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowledge.core.paths import ProjectPaths
from knowledge.embed.cache import cached
from knowledge.embed.local import MODEL_ID
from tests.conftest import closed_port, configure, write_tree
from tests.theus.test_cli_index import theus

FILES = {
    "cart.py": 'def cart_total(items):\n    """Sum of line prices."""\n    return sum(items)\n',
    "mail.py": 'def send_message(to):\n    """Deliver over SMTP."""\n    return to\n',
}


def index_json(repo: Path, *flags: str) -> dict[str, Any]:
    out = theus("index", "--json", *flags, str(repo), cwd=repo)
    assert out.returncode == 0, out.stderr
    said: dict[str, Any] = json.loads(out.stdout)
    return said


def test_index_embeds_what_changed_and_only_that(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", FILES)
    first = index_json(repo)
    assert first["embedded"] == 2 and first["embed_seconds"] > 0  # one chunk per small file
    assert {"files", "symbols", "edges", "skipped", "seconds"} <= first.keys()
    assert index_json(repo)["embedded"] == 0
    (repo / "cart.py").write_text(
        FILES["cart.py"] + "\n\ndef cart_count(items):\n"
        '    """How many lines."""\n    return len(items)\n'
    )
    assert index_json(repo)["embedded"] == 1  # the changed file's one chunk
    vectors = ProjectPaths.for_root(repo).vectors
    assert cached(vectors, MODEL_ID)[1] == 3


def test_no_embed_and_the_kill_switch_skip_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = write_tree(tmp_path / "repo", FILES)
    skipped = index_json(repo, "--no-embed")
    assert (skipped["embedded"], skipped["embed_seconds"]) == (0, 0.0)
    configure(monkeypatch, no_embeddings=True)
    killed = index_json(repo)
    assert killed["embedded"] == 0
    assert not ProjectPaths.for_root(repo).vectors.exists()
    plain = theus("index", "--no-embed", str(repo), cwd=repo)
    assert plain.stdout.startswith("Indexed 2 files") and "embedded 0" in plain.stdout


def test_an_unreachable_endpoint_costs_the_embeddings_not_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = closed_port()
    configure(monkeypatch, embeddings_url=f"http://127.0.0.1:{port}/v1")
    repo = write_tree(tmp_path / "repo", FILES)
    out = theus("index", "--json", str(repo), cwd=repo)
    assert out.returncode == 0
    assert json.loads(out.stdout)["embedded"] == 0
    assert "embeddings skipped" in out.stderr and "recall works without them" in out.stderr
