"""The bad-input corpus of RELIABILITY.md: every bad file recorded with its reason, the rest
fully indexed, the process alive."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge.core import keys
from knowledge.index.analyse import analyse
from knowledge.index.project import Project
from tests.conftest import write_tree

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + zlib.compress(b"\x00" * 64)


def corpus(root: Path) -> Path:
    return write_tree(
        root,
        {
            "good.py": "def good():\n    return 1\n",
            "nul.py": b"x = 1\x00\x00\n",
            "invalid_utf8.ts": b"export function ok() {}\n// \xff\xfe broken\n",
            "utf16.py": "def wide():\n    return 2\n".encode("utf-16"),
            "latin1.py": "# -*- coding: latin-1 -*-\ns = 'café'\ndef latin():\n    pass\n".encode(
                "latin-1"
            ),
            "crlf.py": b"def crlf():\r\n    return 3\r\n",
            "min2mb.js": "var a=1;" * 250_000,
            "min.js": "var a=1;" * 40_000,
            "huge.py": "x = 1\n" * 1_750_000,
            "empty.py": "",
            "image.py": PNG,
            "deep.py": "x = " + "[" * 200 + "]" * 200 + "\n",
            "deep.go": "package x\nfunc f() {" + "{" * 200 + "}" * 200 + "}\n",
            "broken.py": "def nope(:\n",
        },
    )


def test_bad_input_corpus(tmp_path: Path) -> None:
    project = Project(corpus(tmp_path / "repo"))
    report = project.index()
    files = project.files
    assert files["nul.py"].reason == "binary"
    assert files["image.py"].reason == "binary"
    assert files["min.js"].reason == "minified"
    assert files["min2mb.js"].reason == "too-large"
    assert files["huge.py"].reason == "too-large"
    assert files["invalid_utf8.ts"].reason == "invalid-utf8"
    assert files["broken.py"].status == "partial"
    assert files["broken.py"].reason.startswith("parse error")
    graph = project.graph
    # Binaries get no node; too-large and minified files get a file node only.
    assert keys.file_key("nul.py") not in graph and keys.file_key("image.py") not in graph
    assert keys.file_key("huge.py") in graph and keys.file_key("min.js") in graph
    assert not graph.out_edges(keys.file_key("huge.py"))
    for rel, symbol in [
        ("good.py", "good"),
        ("utf16.py", "wide"),
        ("latin1.py", "latin"),
        ("crlf.py", "crlf"),
        ("invalid_utf8.ts", "ok"),
    ]:
        assert keys.symbol_key(rel, symbol) in graph, rel
    assert keys.file_key("empty.py") in graph
    assert keys.file_key("deep.py") in graph and keys.file_key("deep.go") in graph
    assert report.skipped["binary"] == 2
    assert report.skipped["too-large"] == 2 and report.skipped["minified"] == 1


SUFFIXES = [".py", ".ts", ".tsx", ".js", ".go", ".rs", ".java", ".md", ".sql", ".prisma", ".txt"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=2048), suffix=st.sampled_from(SUFFIXES))
def test_arbitrary_bytes_never_crash(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, suffix: str
) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    (root / f"f{suffix}").write_bytes(data)
    result = analyse(str(root), f"f{suffix}", len(data), 0)
    assert result.status in ("ok", "partial", "skipped")
    if result.status != "ok":
        assert result.reason
