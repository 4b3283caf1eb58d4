"""The settings: loaded once at start, first place first (flag, variable, config.toml,
default), read by nothing below the entry point from the environment, and shown whole by
`theus doctor` and `theus status --json`."""

from __future__ import annotations

import ast
import json
import logging
import re
from dataclasses import fields
from pathlib import Path

import pytest

from entrypoint.cli import main
from entrypoint.settings import config_path, load, resolve
from knowledge.core.settings import LAYERS, current
from tests.conftest import closed_port
from theus.settings import Settings, described

REPO = Path(__file__).resolve().parents[1]
NAMES = [f.name for f in fields(Settings) if f.name != "origin"]


def _reads_of_theus_variables(path: Path) -> list[str]:
    """Each place in `path` that reads a THEUS_* variable: `environ.get("THEUS_…")`,
    `environ["THEUS_…"]`, `getenv("THEUS_…")`, or a THEUS_* name held in a constant or built
    with an f-string and then looked up (`.get(NAME)`). Setting one for a child is no read."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    named = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _theus_text(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        key: ast.expr | None = None
        if not isinstance(node, ast.Call | ast.Subscript):
            continue
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("get", "getenv", "pop", "setdefault"):
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = node.slice
        if key is not None and (
            _theus_text(key) or (isinstance(key, ast.Name) and key.id in named)
        ):
            found.append(f"{path}:{node.lineno}")
    return found


def _theus_text(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.startswith("THEUS_")
    if isinstance(node, ast.JoinedStr) and node.values:
        return _theus_text(node.values[0])
    return False


def test_nothing_below_the_entry_point_reads_a_theus_variable(tmp_path: Path) -> None:
    modules = [p for top in ("theus", "tui", "knowledge") for p in (REPO / top).rglob("*.py")]
    assert len(modules) > 100
    reads = [read for path in modules for read in _reads_of_theus_variables(path)]
    assert reads == []
    # The probe finds every way such a read has been written here before.
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os\n"
        'a = os.environ.get("THEUS_HOME")\n'
        'b = os.environ["THEUS_MODEL"]\n'
        'c = os.getenv("THEUS_NO_WATCH")\n'
        'NAME = "THEUS_PRICES"\n'
        "d = os.environ.get(NAME)\n"
        'e = env.get(f"THEUS_NO_{layer}")\n'
        'os.environ["THEUS_SHELL_RUN"] = "1"\n'
    )
    assert [read.rsplit(":", 1)[1] for read in _reads_of_theus_variables(probe)] == [
        "2",
        "3",
        "4",
        "6",
        "7",
    ]


def test_first_place_first_flag_then_variable_then_file_then_default() -> None:
    file = {"model": "from-file", "timeout": 30, "max_turns": 7, "no_watch": True}
    env = {"THEUS_MODEL": "from-env", "THEUS_TIMEOUT": "45"}
    settings = resolve({"model": "from-flag", "max_turns": None}, env, file)
    assert (settings.model, settings.timeout, settings.max_turns) == ("from-flag", 45.0, 7)
    assert settings.no_watch and settings.is_off("watch") and not settings.is_off("facts")
    assert settings.idle_timeout == 60.0
    assert [settings.source(n) for n in ("model", "timeout", "max_turns", "idle_timeout")] == [
        "--model",
        "THEUS_TIMEOUT",
        "config.toml",
        "default",
    ]


def test_a_switch_is_on_for_anything_but_the_words_for_off() -> None:
    for word in ("", "0", "false", "No", " off "):
        assert not resolve({}, {"THEUS_NO_FACTS": word}, {}).no_facts
    for word in ("1", "true", "yes", "anything"):
        assert resolve({}, {"THEUS_NO_FACTS": word}, {}).no_facts


def test_a_value_that_does_not_parse_is_named_and_the_next_place_asked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        settings = resolve({}, {"THEUS_TIMEOUT": "soon"}, {"timeout": 9, "max_turns": "many"})
    assert settings.timeout == 9.0 and settings.max_turns == 50
    assert "ignoring THEUS_TIMEOUT='soon': not a number" in caplog.text
    assert "ignoring max_turns = 'many' in config.toml: not a whole number" in caplog.text


def test_the_chat_endpoint_is_taken_whole_from_one_place() -> None:
    theirs = {"OPENAI_BASE_URL": "http://openai.example/v1", "OPENAI_API_KEY": "sk-openai"}
    ours = resolve({}, {"THEUS_BASE_URL": "http://127.0.0.1:8080/v1", **theirs}, {})
    assert (ours.base_url, ours.api_key) == ("http://127.0.0.1:8080/v1", "")
    filed = resolve({}, theirs, {"api_key": "sk-file"})
    assert (filed.base_url, filed.api_key, filed.source("api_key")) == (
        "",
        "sk-file",
        "config.toml",
    )
    standard = resolve({}, theirs, {})
    assert (standard.base_url, standard.api_key) == ("http://openai.example/v1", "sk-openai")
    assert standard.source("api_key") == "OPENAI_API_KEY"


def test_the_file_lives_in_the_config_folder_and_cannot_move_the_home(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = {"THEUS_HOME": str(tmp_path)}
    path = config_path(env)
    assert path == tmp_path / "config" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('home = "/elsewhere"\nmodel = "llama"\nno_facts = true\ncolour = "red"\n')
    with caplog.at_level(logging.WARNING):
        settings = load({}, env)
    assert (settings.home, settings.model, settings.no_facts) == (str(tmp_path), "llama", True)
    assert "'colour'" in caplog.text and "'home'" in caplog.text
    path.write_text("model = [unclosed\n")
    with caplog.at_level(logging.WARNING):
        assert load({}, env).model == ""
    assert f"ignoring {path}" in caplog.text


def test_secrets_are_shown_only_as_set_or_unset() -> None:
    settings = resolve({}, {"THEUS_API_KEY": "sk-CANARY", "THEUS_QDRANT_URL": "http://q"}, {})
    shown = described(settings)
    assert list(shown) == NAMES
    assert shown["api_key"] == {"value": "set", "source": "THEUS_API_KEY"}
    assert shown["embeddings_key"] == {"value": "unset", "source": "default"}
    assert shown["qdrant_url"]["value"] == "http://q"
    assert "CANARY" not in json.dumps(shown) and "CANARY" not in repr(settings)


def test_status_json_and_doctor_show_the_settings_the_command_ran_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("THEUS_NO_WATCH", "1")
    monkeypatch.setenv("THEUS_API_KEY", "sk-CANARY")
    monkeypatch.setenv("THEUS_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    monkeypatch.setenv("THEUS_MAX_RETRIES", "0")
    config_path({"THEUS_HOME": str(current().home)}).parent.mkdir(parents=True)
    config_path({"THEUS_HOME": str(current().home)}).write_text("max_turns = 9\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    assert main(["status", "--json", "--path", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["settings"]["no_watch"] == {"value": True, "source": "THEUS_NO_WATCH"}
    assert report["settings"]["max_turns"] == {"value": 9, "source": "config.toml"}
    assert report["settings"]["api_key"]["value"] == "set"
    assert report["index"]["switched_off"] == ["THEUS_NO_WATCH"]
    assert main(["doctor", "--model", "m"]) == 1  # the server is not there: the check fails
    out = capsys.readouterr().out
    assert "no_watch = True (THEUS_NO_WATCH)" in out and "model = m (--model)" in out
    assert "max_turns = 9 (config.toml)" in out and "CANARY" not in out


def test_the_readme_lists_every_setting_once() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Settings", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `THEUS_([A-Z_]+)`", section, flags=re.MULTILINE)
    assert sorted(listed) == sorted(name.upper() for name in NAMES)
    assert {f"no_{layer}" for layer in LAYERS} <= set(NAMES)
