from __future__ import annotations

import os
from pathlib import Path

from knowledge.index.ignore import IgnoreRules
from knowledge.index.walker import walk
from tests.conftest import write_tree


def rels(root: Path) -> list[str]:
    return [f.rel for f in walk(root).files]


def test_nested_gitignore_with_negation_and_excludes(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            ".gitignore": "*.log\nbuild/\n",
            "app.py": "x = 1\n",
            "debug.log": "noise",
            "build/out.py": "x = 2\n",
            "sub/.gitignore": "!keep.log\ngenerated_*.py\n",
            "sub/keep.log": "kept",
            "sub/other.log": "dropped",
            "sub/generated_api.py": "x = 3\n",
            "sub/real.py": "x = 4\n",
            ".git/info/exclude": "private.py\n",
            ".git/HEAD": "ref",
            "private.py": "x = 5\n",
            ".theusignore": "vendor/\n",
            "vendor/lib.py": "x = 6\n",
            "node_modules/pkg/index.js": "module.exports = 1",
        },
    )
    assert rels(tmp_path) == [
        ".gitignore",
        ".theusignore",
        "app.py",
        "sub/.gitignore",
        "sub/keep.log",
        "sub/real.py",
    ]


def test_secrets_are_counted_and_never_listed(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            ".env": "A=1",
            ".env.local": "B=2",
            "prod.env": "C=3",
            "id_rsa": "k",
            "id_rsa.pub": "k",
            "server.pem": "k",
            "tls.key": "k",
            ".aws/credentials": "k",
            "ok.py": "x = 1\n",
            "credentials.json": "k",
            "config/secrets.yml": "k",
            "gcp-credentials.json": "k",
            "auth/credentials.py": "def load(): pass\n",
            "secrets_test.py": "x = 1\n",
        },
    )
    result = walk(tmp_path)
    assert [f.rel for f in result.files] == ["auth/credentials.py", "ok.py", "secrets_test.py"]
    assert set(result.skipped) == {
        ".env",
        ".env.local",
        "prod.env",
        "id_rsa",
        "id_rsa.pub",
        "server.pem",
        "tls.key",
        ".aws/credentials",
        "credentials.json",
        "config/secrets.yml",
        "gcp-credentials.json",
    }
    assert set(result.skipped.values()) == {"secret"}


def test_symlinks_never_leave_the_root_and_loops_terminate(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_tree(outside, {"secret.py": "x = 1\n"})
    root = write_tree(tmp_path / "root", {"src/a.py": "x = 1\n"})
    os.symlink(outside / "secret.py", root / "src" / "link_out.py")
    os.symlink(outside, root / "outdir")
    os.symlink(root, root / "src" / "loop")
    os.symlink(root / "src" / "a.py", root / "alias.py")
    os.symlink(root / "self1", root / "self2")
    os.symlink(root / "self2", root / "self1")
    result = walk(root)
    assert [f.rel for f in result.files] == ["alias.py", "src/a.py"]
    assert result.skipped["src/link_out.py"] == "symlink-outside"
    assert result.skipped["outdir"] == "symlink-outside"
    assert result.skipped["src/loop"] == "symlink-loop"
    assert result.skipped["self1"] == "symlink-loop"


def test_ignored_path_checks_every_parent(tmp_path: Path) -> None:
    write_tree(tmp_path, {".gitignore": "gen/\n"})
    rules = IgnoreRules(tmp_path)
    assert rules.ignored_path("gen/deep/x.py", False)
    assert rules.ignored_path("a/node_modules/b/c.js", False)
    assert rules.ignored_path("src/.x.py.swp", False)
    assert not rules.ignored_path("src/x.py", False)


def test_invalid_ignore_lines_are_skipped_like_git(tmp_path: Path) -> None:
    write_tree(tmp_path, {".gitignore": "!\n*.log\n", "a.log": "x", "b.py": "x = 1\n"})
    assert rels(tmp_path) == [".gitignore", "b.py"]
