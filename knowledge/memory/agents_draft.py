"""A first AGENTS.md for a project, drafted from what the index knows: its layout, languages
and entry points, and the commands its own build files name (test, lint, build).

Only what the project states is written: a command comes from a file that defines it
(a Makefile target, a package.json script, a build tool's manifest), never guessed from a
language alone, and a project without one gets no Commands line for it. The user reviews
the draft before it is written (`theus init`, `/init`)."""

from __future__ import annotations

import json
import re
import tomllib
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from knowledge.index.languages import by_suffix

if TYPE_CHECKING:
    from knowledge.index.project import Project

FILE_NAME = "AGENTS.md"
TOP_FOLDERS = 8
# Lock files name the package manager a project uses, so its scripts run the same way.
_NODE_RUNNERS = (("pnpm-lock.yaml", "pnpm"), ("yarn.lock", "yarn"), ("bun.lockb", "bun"))
_MAKE_TARGET = re.compile(r"^(test|check|lint|build|fmt|format)\s*:", re.MULTILINE)
_PY_TOOLS = {"ruff": "ruff check .", "mypy": "mypy", "black": "black --check ."}


def draft_from(project: Project) -> str:
    """The draft for an indexed project (`theus init`, `/init`)."""
    return draft(project.root, [node.path for node in project.graph.nodes("file") if node.path])


def draft(root: Path, files: list[str]) -> str:
    """The draft for the project at `root` whose indexed files are `files` (relative)."""
    lines = [
        "# AGENTS.md",
        "",
        "Conventions for coding agents in this project (drafted by `theus init` from its "
        "index; edit freely).",
        "",
    ]
    layout = _layout(files)
    if layout:
        lines += ["## Layout", "", *layout, ""]
    commands = _commands(root, set(files))
    if commands:
        lines += ["## Commands", "", *(f"- {what}: `{command}`" for what, command in commands), ""]
    entries = _entry_points(root, files)
    if entries:
        lines += ["## Entry points", "", *(f"- {entry}" for entry in entries), ""]
    lines += [
        "## Working here",
        "",
        "- Read the code near a change before editing; keep edits minimal.",
        *(
            ["- Run the tests before saying a change is done."]
            if any(what == "test" for what, _ in commands)
            else []
        ),
        "",
    ]
    return "\n".join(lines)


def _layout(files: list[str]) -> list[str]:
    languages = Counter(
        spec.name for f in files if (spec := by_suffix(f)) is not None and spec.name != "markdown"
    )
    folders = Counter(PurePosixPath(f).parts[0] for f in files if len(PurePosixPath(f).parts) > 1)
    out = []
    if languages:
        out.append(
            "Languages: "
            + ", ".join(f"{name} ({_files(count)})" for name, count in languages.most_common())
            + "."
        )
    for folder, count in folders.most_common(TOP_FOLDERS):
        out.append(f"- `{folder}/`: {_files(count)}")
    return out


def _files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"


def _commands(root: Path, files: set[str]) -> list[tuple[str, str]]:
    """(what, command) pairs the project's own files define, test first."""
    found: dict[str, str] = {}
    makefile = _read(root / "Makefile")
    for target in _MAKE_TARGET.findall(makefile):
        found.setdefault(
            "lint" if target in ("check", "fmt", "format") else target, f"make {target}"
        )
    scripts = _package_scripts(root)
    runner = next(
        (tool for lock, tool in _NODE_RUNNERS if lock in files or (root / lock).exists()), "npm"
    )
    for what in ("test", "lint", "build"):
        if what in scripts:
            found.setdefault(
                what,
                f"{runner} test" if what == "test" and runner != "bun" else f"{runner} run {what}",
            )
    pyproject = _toml(root / "pyproject.toml")
    tools = pyproject.get("tool", {}) if isinstance(pyproject.get("tool"), dict) else {}
    if (
        "pytest" in tools
        or (root / "pytest.ini").exists()
        or (pyproject and any(PurePosixPath(f).name.startswith("test_") for f in files))
    ):
        found.setdefault("test", "python -m pytest")
    for tool, command in _PY_TOOLS.items():
        if tool in tools:
            found.setdefault("lint" if tool != "mypy" else "types", command)
    if (root / "go.mod").exists():
        found.setdefault("test", "go test ./...")
        found.setdefault("build", "go build ./...")
    if (root / "Cargo.toml").exists():
        found.setdefault("test", "cargo test")
        found.setdefault("build", "cargo build")
    if (root / "pom.xml").exists():
        found.setdefault("test", "mvn test")
    elif (root / "build.gradle").exists() or (root / "build.gradle.kts").exists():
        gradle = "./gradlew" if (root / "gradlew").exists() else "gradle"
        found.setdefault("test", f"{gradle} test")
    order = ("test", "lint", "types", "build")
    return sorted(found.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 9)


def _entry_points(root: Path, files: list[str]) -> list[str]:
    out: list[str] = []
    project = _toml(root / "pyproject.toml").get("project", {})
    scripts = project.get("scripts", {}) if isinstance(project, dict) else {}
    if isinstance(scripts, dict):
        out += [f"`{name}` runs `{target}`" for name, target in scripts.items()]
    package = _package(root)
    if isinstance(package.get("bin"), dict):
        out += [f"`{name}` runs `{target}`" for name, target in package["bin"].items()]
    if isinstance(package.get("main"), str):
        out.append(f"the package's main module is `{package['main']}`")
    names = ("__main__.py", "main.go", "main.rs", "manage.py", "Main.java")
    out += [f"`{f}`" for f in sorted(files) if PurePosixPath(f).name in names][:TOP_FOLDERS]
    return out


def _package(root: Path) -> dict[str, Any]:
    try:
        data = json.loads(_read(root / "package.json") or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _package_scripts(root: Path) -> dict[str, Any]:
    scripts = _package(root).get("scripts")
    return scripts if isinstance(scripts, dict) else {}


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(_read(path))
    except tomllib.TOMLDecodeError:
        return {}


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
