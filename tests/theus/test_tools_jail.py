"""File tools stay inside the project root and away from secrets (RELIABILITY: Secrets and
file tools). Real files and symlinks on disk; the tools are called directly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import configure, write_tree
from theus.protocol import ApprovalRequest
from theus.tools.base import ToolContext, ToolError
from theus.tools.files import edit_file, grep, list_files, read_file, write_file
from theus.tools.jail import Jail, JailError

CANARIES = {
    ".env": "AWS=AKIAABCDEFGHIJKLMNOP\n",
    ".env.local": "KEY=sk-canary123\n",
    "id_rsa": "-----BEGIN PRIVATE KEY-----\n",
    "server.pem": "BEGIN PRIVATE KEY\n",
    ".aws/credentials": "aws_secret=AKIAZZZZ\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    write_tree(root, {"src/app.py": "print('hi')\nSECRET_NAME = 1\n", **CANARIES})
    evil = tmp_path / "repo-evil"
    evil.mkdir()
    (evil / "loot.txt").write_text("loot\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    os.symlink(tmp_path / "outside.txt", root / "link-out")
    os.symlink(tmp_path, root / "dir-out")
    os.symlink(root / "src" / "app.py", root / "link-in")
    return root


def ctx(root: Path, *, approve: bool = True, refuse_protected: bool = False) -> ToolContext:
    async def approver(request: ApprovalRequest) -> bool:
        return approve

    return ToolContext(jail=Jail(root), approve=approver, refuse_protected=refuse_protected)


@pytest.mark.parametrize(
    "raw",
    [
        "../outside.txt",
        "src/../../outside.txt",
        "link-out",
        "dir-out/outside.txt",
        "../repo-evil/loot.txt",
        "/etc/passwd",
        "src/app.py\x00.txt",
        "",
    ],
)
async def test_read_refuses_paths_leading_out(project: Path, raw: str) -> None:
    with pytest.raises((JailError, ToolError)):
        await read_file.run({"path": raw}, ctx(project))


async def test_sibling_prefix_absolute_path_is_outside(project: Path) -> None:
    evil = str(project.parent / "repo-evil" / "loot.txt")
    assert evil.startswith(str(project))  # the string-prefix trap
    with pytest.raises(JailError, match="outside the project root"):
        Jail(project).resolve(evil)


async def test_paths_inside_are_fine(project: Path) -> None:
    c = ctx(project)
    assert "print('hi')" in await read_file.run({"path": "src/app.py"}, c)
    assert "print('hi')" in await read_file.run({"path": str(project / "src/app.py")}, c)
    assert "print('hi')" in await read_file.run({"path": "link-in"}, c)  # symlink within the root


@pytest.mark.parametrize("secret", sorted(CANARIES))
async def test_secrets_are_never_read(project: Path, secret: str) -> None:
    with pytest.raises(JailError, match="never read"):
        await read_file.run({"path": secret}, ctx(project))


async def test_list_and_grep_skip_secrets_and_links(project: Path) -> None:
    c = ctx(project)
    listed = await list_files.run({"pattern": "*"}, c)
    assert "src/app.py" in listed
    for name in (*CANARIES, "link-out", "outside.txt"):
        assert name not in listed.split("\n")
    found = await grep.run({"pattern": "AKIA|sk-canary|PRIVATE KEY|outside|loot"}, c)
    assert found.startswith("no matches")
    assert "src/app.py:2:" in await grep.run({"pattern": "secret_name", "ignore_case": True}, c)


async def test_opened_file_is_checked_again(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A path that passes the check but is swapped for a link out before the open: the
    # descriptor check catches it.
    jail = Jail(project)
    real_resolve = jail.resolve

    def racy(raw: str) -> Path:
        resolved = real_resolve(raw)
        target = project / "src" / "swap.py"
        if target.exists():
            target.unlink()
        os.symlink(tmp_path / "outside.txt", target)
        return resolved

    (project / "src" / "swap.py").write_text("fine\n")
    monkeypatch.setattr(jail, "resolve", racy)
    with pytest.raises(JailError):
        jail.open_read("src/swap.py")


async def test_write_through_a_link_out_is_refused(project: Path, tmp_path: Path) -> None:
    with pytest.raises(JailError):
        await write_file.run({"path": "link-out", "content": "pwned"}, ctx(project))
    with pytest.raises(JailError):
        await write_file.run({"path": "dir-out/new.txt", "content": "pwned"}, ctx(project))
    assert (tmp_path / "outside.txt").read_text() == "outside\n"
    assert not (tmp_path / "new.txt").exists()


@pytest.mark.parametrize(
    "target",
    [
        ".git/hooks/pre-commit",
        ".env",
        ".env.production",
        ".vscode/settings.json",
        ".claude/settings.json",
        ".theus/x",
        "id_rsa",
    ],
)
async def test_protected_writes_refused_in_headless_even_when_allowed(
    project: Path, target: str
) -> None:
    with pytest.raises(ToolError, match="headless runs do not write there"):
        await write_file.run({"path": target, "content": "x"}, ctx(project, refuse_protected=True))
    assert not (project / target).exists() or target in CANARIES


async def test_theus_data_dir_is_protected(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(monkeypatch, home=str(project / "home"))
    with pytest.raises(ToolError, match="Theus data folder"):
        await write_file.run(
            {"path": "home/projects/x", "content": "x"}, ctx(project, refuse_protected=True)
        )


@pytest.mark.parametrize(
    ("target", "risk"),
    [(".vscode/tasks.json", "an editor runs it"), ("Makefile", "a build, test or package tool")],
)
async def test_protected_writes_are_flagged_when_asking(
    project: Path, target: str, risk: str
) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    c = ToolContext(jail=Jail(project), approve=approver)
    with pytest.raises(ToolError, match="not approved"):
        await write_file.run({"path": target, "content": "{}"}, c)
    assert "warning" in asked[0].summary and risk in asked[0].summary


async def test_edit_needs_an_exact_unique_match(project: Path) -> None:
    c = ctx(project)
    (project / "dup.py").write_text("x = 1\nx = 1\n")
    with pytest.raises(ToolError, match="appears 2 times"):
        await edit_file.run({"path": "dup.py", "old_string": "x = 1", "new_string": "x = 2"}, c)
    with pytest.raises(ToolError, match="not found"):
        await edit_file.run({"path": "dup.py", "old_string": "y = 1", "new_string": "x = 2"}, c)
    await edit_file.run(
        {"path": "dup.py", "old_string": "x = 1", "new_string": "x = 2", "replace_all": True}, c
    )
    assert (project / "dup.py").read_text() == "x = 2\nx = 2\n"


async def test_write_creates_folders_and_shortens_files(project: Path) -> None:
    c = ctx(project)
    await write_file.run({"path": "new/deep/f.txt", "content": "a long first version\n"}, c)
    await write_file.run({"path": "new/deep/f.txt", "content": "short\n"}, c)
    assert (project / "new/deep/f.txt").read_text() == "short\n"


async def test_read_ranges_and_binary(project: Path) -> None:
    c = ctx(project)
    (project / "many.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    out = await read_file.run({"path": "many.txt", "offset": 10, "limit": 2}, c)
    assert out.splitlines()[:2] == ["    10\tline 10", "    11\tline 11"]
    assert "read with offset=12" in out
    (project / "blob.bin").write_bytes(b"\x00\x01\x02")
    with pytest.raises(ToolError, match="binary"):
        await read_file.run({"path": "blob.bin"}, c)


async def test_write_to_a_hard_link_is_refused(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "victim.txt"
    outside.write_text("keep\n")
    os.link(outside, project / "linked.txt")
    with pytest.raises(JailError, match="hard-linked"):
        await write_file.run({"path": "linked.txt", "content": "pwned"}, ctx(project))
    assert outside.read_text() == "keep\n"
