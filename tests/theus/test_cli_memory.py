"""`theus memory` and `theus episodes`: output, JSON, and exit codes for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from entrypoint.cli import main
from knowledge.core import keys
from knowledge.episodes import EpisodeStore
from knowledge.index.project import Project


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "repo").mkdir()
    return tmp_path / "repo"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def memory_file(root: Path) -> Path:
    project = Project(root)
    try:
        return project.paths.memory / "MEMORY.md"
    finally:
        project.close()


def test_add_list_and_remove(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "memory", "add", "--project", str(root), "deploys", "need", "VPN")
    key = keys.memory_key("deploys need VPN")
    assert code == 0 and out.startswith(f"added {key} (deploys-need-vpn.md)")
    assert "(deploys-need-vpn.md)" in memory_file(root).read_text()
    code, out, _ = run(capsys, "memory", "add", "deploys need VPN", "--project", str(root))
    assert code == 0 and out.startswith("already known")

    memory_file(root).write_text(memory_file(root).read_text() + "- use pnpm\n")
    code, out, _ = run(capsys, "memory", "list", "--json", "--project", str(root))
    listed = json.loads(out)
    assert code == 0 and {m["key"] for m in listed} == {key, keys.memory_key("use pnpm")}
    assert {m["source"] for m in listed} == {"graph", "memdir"}

    code, out, _ = run(capsys, "--path", str(root), "memory")  # the global --path works too
    assert code == 0 and "use pnpm" in out and "deploys need VPN" in out

    prefix = key.removeprefix("mem:")[:8]
    code, out, _ = run(capsys, "memory", "rm", prefix, "--project", str(root), "--json")
    assert code == 0 and json.loads(out)["result"] == "removed"
    assert memory_file(root).read_text() == "- use pnpm\n"


def test_edit(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "memory", "add", "--project", str(root), "first")
    old = keys.memory_key("first")
    code, out, _ = run(capsys, "memory", "edit", old, "second", "--project", str(root))
    assert code == 0 and out.startswith(f"edited {old}")  # the key a script holds stays
    prefix = old.removeprefix("mem:")[:8]  # and a unique prefix of it finds the memory again
    code, out, _ = run(capsys, "memory", "edit", prefix, "third", "--path", str(root), "--json")
    assert code == 0 and json.loads(out)["key"] == old
    code, out, _ = run(capsys, "memory", "list", "--json", "--path", str(root))
    assert [(m["key"], m["text"]) for m in json.loads(out)] == [(old, "third")]


def test_bad_keys_and_arguments(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "memory", "add", "--project", str(root), "alpha")
    run(capsys, "memory", "add", "--project", str(root), "beta")
    code, _, err = run(capsys, "memory", "rm", "ffffffff", "--project", str(root))
    assert code == 1 and err == "theus: no memory matches 'ffffffff' (see `theus memory list`)\n"
    code, _, err = run(capsys, "memory", "rm", "mem:", "--project", str(root))
    assert code == 2 and "too short" in err and err.count("\n") == 1
    code, _, err = run(capsys, "memory", "add", "--project", str(root))
    assert code == 2 and "TEXT" in err and err.count("\n") == 1
    code, _, err = run(capsys, "memory", "add", "  ", "--project", str(root))
    assert code == 2 and err == "theus: `theus memory add` needs the memory's TEXT\n"
    code, _, err = run(capsys, "memory", "forget", "--project", str(root))
    assert code == 2 and err.count("\n") == 1
    code, _, err = run(capsys, "memory", "--project", str(root / "missing"))
    assert code == 2 and "no such folder" in err


def test_warnings_go_to_stderr_and_never_fail(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = memory_file(root)
    path.parent.mkdir(parents=True)
    path.write_text("- good\nnot an entry\n")
    code, out, err = run(capsys, "memory", "--project", str(root))
    assert code == 0 and "good" in out
    assert err.startswith("theus: warning: MEMORY.md:2: not an entry")


def test_episodes_list_and_show(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "episodes", "--project", str(root))
    assert code == 0 and out == "" and "no episodes yet" in err
    project = Project(root)
    store = EpisodeStore(project)
    first = store.record(
        "compaction", "Login redirect fixed\nKeeps `next`.", "s-1", ["src/login.py"]
    )
    second = store.record("session-end", "Billing rounding", "s-2")
    assert first is not None and second is not None
    project.close()
    code, out, _ = run(capsys, "episodes", "list", "--project", str(root), "--json")
    listed = json.loads(out)
    assert code == 0 and {e["id"] for e in listed} == {first.id, second.id}
    assert "text" not in listed[0]
    code, out, _ = run(capsys, "episodes", "show", first.id, "--project", str(root))
    assert code == 0 and "Keeps `next`." in out and "files: src/login.py" in out
    code, out, _ = run(capsys, "episodes", "--json", "--project", str(root), "show", first.key)
    assert code == 0 and json.loads(out)["text"] == "Login redirect fixed\nKeeps `next`."
    code, _, err = run(capsys, "episodes", "show", "nope", "--project", str(root))
    assert code == 1 and err == "theus: no episode matches 'nope' (see `theus episodes list`)\n"
    code, _, err = run(capsys, "episodes", "show", "--project", str(root))
    assert code == 2 and "ID" in err and err.count("\n") == 1


def test_episodes_prune_removes_untrue_and_repeated_ones(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = Project(root)
    store = EpisodeStore(project)
    legacy = store.record(
        "session-end",
        "Built without a model: no model was available at "
        "session end, so this episode lists the session's requests.\n"
        "Files changed: `../outside.txt`",
        "s-1",
        title="Session: x",
    )
    kept = store.record("session-end", "Billing rounding fixed", "s-2")
    repeat = store.record("session-end", "Billing rounding fixed", "s-3")
    real = store.record("compaction", "Login redirect keeps `next`", "s-4")
    assert legacy is not None and kept is not None and repeat is not None and real is not None
    project.close()
    code, out, _ = run(capsys, "episodes", "prune", "--dry-run", "--project", str(root))
    assert code == 0 and out.endswith("would remove 2 episodes\n")
    assert len(EpisodeStore(Project(root)).list()[0]) == 4  # a dry run removes nothing
    code, out, _ = run(capsys, "episodes", "prune", "--json", "--project", str(root))
    assert code == 0 and set(json.loads(out)["removed"]) == {legacy.id, repeat.id}
    project = Project(root)
    left = {e.id for e in EpisodeStore(project).list()[0]}
    assert left == {kept.id, real.id}
    assert {n.key for n in project.graph.nodes("episode")} == {kept.key, real.key}
    project.close()


def test_unusable_memory_folder(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = memory_file(root).parent
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where the memory folder should be")
    code, out, err = run(capsys, "memory", "add", "still remembered", "--project", str(root))
    assert code == 0 and out.startswith("added")
    assert "kept in the graph only" in err
    key = keys.memory_key("still remembered")
    code, _, err = run(capsys, "memory", "rm", key, "--project", str(root))
    warning, error = err.splitlines()
    assert code == 1 and "unusable" in warning
    assert error.startswith("theus: could not change the project's memory:")
