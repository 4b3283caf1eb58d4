"""Servers that answer with something else than what they should: one clear line each."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge.embed.base import EmbeddingError
from knowledge.embed.hosted import HostedEmbedder
from tests.conftest import write_tree
from tests.scripted_embeddings import EmbeddingsScript, serve_embeddings
from tests.scripted_server import Reply, ScriptedServer


@pytest.mark.parametrize(
    "reply",
    [
        Reply(raw=b"data: {not json\n\ndata: [DONE]\n\n", repeat=True),
        Reply(
            raw=b"<html><body>502 Bad Gateway</body></html>", content_type="text/html", repeat=True
        ),
    ],
    ids=["garbage-sse", "html-page"],
)
def test_a_chat_server_that_is_not_one_ends_the_run_with_one_line(
    tmp_path: Path, reply: Reply
) -> None:
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n"})
    with ScriptedServer([reply]) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("THEUS_", "OPENAI_"))}
        env.update(
            {
                "THEUS_HOME": str(tmp_path / "home"),
                "THEUS_NO_EMBEDDINGS": "1",
                "THEUS_NO_WATCH": "1",
                "THEUS_BASE_URL": server.url,
                "THEUS_MODEL": "test-model",
                "THEUS_RETRY_BASE": "0.01",
            }
        )
        done = subprocess.run(
            [sys.executable, "-m", "entrypoint", "--path", str(root), "-p", "hi"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "OpenAI-compatible" in errors[0]


def test_an_html_page_for_embeddings_is_an_endpoint_error() -> None:
    script = EmbeddingsScript(vector=lambda text, dim: [1.0] * dim, mode="html")
    with serve_embeddings(script) as url:
        embedder = HostedEmbedder(url, "m", "k")
        with pytest.raises(EmbeddingError, match="not an embeddings answer"):
            embedder.embed(["hello"])
