"""Where the model settings come from, `theus login`, and session transcripts."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from entrypoint.cli import main
from entrypoint.settings import resolve
from knowledge.core.credentials import ChatCredentials, credentials_path, save_credentials
from tests.conftest import from_env
from theus.config import load_facts_settings, load_model_settings
from theus.sessions import SessionNotFound, SessionStore


def test_no_settings_means_none() -> None:
    assert load_model_settings() is None


def test_theus_variables_win() -> None:
    env = {
        "THEUS_BASE_URL": "http://127.0.0.1:9/v1/",
        "THEUS_API_KEY": "tk",
        "THEUS_MODEL": "m",
        "OPENAI_API_KEY": "ok",
    }
    s = load_model_settings(from_env(env))
    assert s is not None and (s.base_url, s.api_key, s.model) == (
        "http://127.0.0.1:9/v1",
        "tk",
        "m",
    )
    assert "tk" not in repr(s) and s.source == "THEUS_BASE_URL"
    overridden = load_model_settings(resolve({"model": "override"}, env, {"model": "file"}))
    assert overridden is not None and overridden.model == "override"


def test_openai_variables_work() -> None:
    s = load_model_settings(from_env({"OPENAI_API_KEY": "ok", "THEUS_MODEL": "gpt"}))
    assert s is not None and s.base_url == "https://api.openai.com/v1" and s.api_key == "ok"


def test_a_saved_key_never_goes_to_an_env_url() -> None:
    save_credentials(ChatCredentials("http://saved.example/v1", "saved-key", "saved-model"))
    s = load_model_settings()
    assert s is not None and (s.base_url, s.api_key, s.model) == (
        "http://saved.example/v1",
        "saved-key",
        "saved-model",
    )
    s = load_model_settings(
        from_env({"THEUS_BASE_URL": "http://other.example/v1", "THEUS_MODEL": "m"})
    )
    assert s is not None and s.api_key != "saved-key"


def test_the_facts_model_is_the_chat_model_unless_set_and_never_gets_its_key_elsewhere() -> None:
    chat_env = {"THEUS_BASE_URL": "http://chat.example/v1", "THEUS_API_KEY": "ck"}
    chat = load_model_settings(from_env({**chat_env, "THEUS_MODEL": "big"}))
    assert chat is not None
    assert load_facts_settings(chat, from_env(chat_env)) is None  # the chat's own client
    small = load_facts_settings(chat, from_env({**chat_env, "THEUS_FACTS_MODEL": "small"}))
    assert small is not None and (small.base_url, small.api_key, small.model) == (
        "http://chat.example/v1",
        "ck",
        "small",
    )
    other = from_env({**chat_env, "THEUS_FACTS_BASE_URL": "http://facts.example/v1/"})
    elsewhere = load_facts_settings(chat, other)
    assert elsewhere is not None and elsewhere.base_url == "http://facts.example/v1"
    assert elsewhere.api_key != "ck" and elsewhere.model == "big"
    assert elsewhere.source == "THEUS_FACTS_BASE_URL"
    keyed = load_facts_settings(
        chat,
        from_env({**chat_env, "THEUS_FACTS_BASE_URL": "http://f/v1", "THEUS_FACTS_API_KEY": "fk"}),
    )
    assert keyed is not None and keyed.api_key == "fk"


def test_env_url_without_a_model_is_not_configured() -> None:
    assert load_model_settings(from_env({"THEUS_BASE_URL": "http://127.0.0.1:9/v1"})) is None


def test_login_with_flags_saves_0600(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "login",
            "--base-url",
            "http://127.0.0.1:1234/v1/",
            "--api-key",
            "sekret",
            "--model",
            "llama",
        ]
    )
    assert code == 0
    path = credentials_path()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(path.read_text()) == {
        "base_url": "http://127.0.0.1:1234/v1",
        "api_key": "sekret",
        "model": "llama",
    }
    assert "sekret" not in capsys.readouterr().err
    s = load_model_settings()
    assert s is not None and s.model == "llama"


def test_login_without_a_terminal_says_which_flag(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["login", "--base-url", "http://x/v1", "--api-key", ""]) == 2
    assert "Model missing" in capsys.readouterr().err
    assert main(["login", "--base-url", "ftp://x", "--api-key", "", "--model", "m"]) == 2


def test_transcript_round_trip_and_listing(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    assert store.list() == [] and store.last() is None
    first = store.create(model="m")
    first.append({"type": "message", "message": {"role": "user", "content": "hello there"}})
    first.append(
        {"type": "message", "message": {"role": "tool", "tool_call_id": "a", "content": "big"}}
    )
    first.append({"type": "microcompact", "placeholders": {"a": "[cleared]"}})
    with first.path.open("a") as handle:
        handle.write('{"type": "message", "mess')  # a torn last line after a crash
    assert [m["content"] for m in first.messages()] == ["hello there", "[cleared]"]
    assert stat.S_IMODE(os.stat(first.path).st_mode) == 0o600
    second = store.create()
    second.append({"type": "compaction", "messages": [{"role": "system", "content": "s"}]})
    os.utime(first.path, (1, 1))
    assert [i.id for i in store.list()] == [second.id, first.id]
    last = store.last()
    assert last is not None and last.id == second.id
    assert store.list()[1].title == "hello there"
    assert second.messages() == [{"role": "system", "content": "s"}]
    for bad in ("../x", "nope", "a/b"):
        with pytest.raises(SessionNotFound):
            store.open(bad)


def test_sessions_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", str(tmp_path)]) == 0
    assert "no sessions" in capsys.readouterr().err
    session = SessionStore(tmp_path).create()
    session.append({"type": "message", "message": {"role": "user", "content": "fix the bug"}})
    assert main(["sessions", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert session.id in out and "fix the bug" in out
    assert main(["sessions", "--json", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)[0]["id"] == session.id
