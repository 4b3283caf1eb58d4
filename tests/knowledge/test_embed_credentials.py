"""Saved chat credentials: atomic write, mode 0600."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from knowledge.core.credentials import (
    ChatCredentials,
    credentials_path,
    load_credentials,
    save_credentials,
)
from tests.conftest import configure

CREDS = ChatCredentials("https://gateway.example/v1", "sk-secret", "theus-chat")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    configure(monkeypatch, home=str(tmp_path))
    return tmp_path


def test_round_trip_in_config_home(home: Path) -> None:
    assert load_credentials() is None
    path = save_credentials(CREDS)
    assert path == credentials_path() == home / "config" / "credentials.json"
    assert load_credentials() == CREDS


def test_file_mode_is_0600_even_over_a_looser_file(home: Path) -> None:
    path = credentials_path()
    path.parent.mkdir(parents=True)
    path.write_text("{}")
    path.chmod(0o644)
    save_credentials(CREDS)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["credentials.json"]  # no temp left


def test_unusable_files_read_as_none(home: Path) -> None:
    path = credentials_path()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert load_credentials() is None
    path.write_text('{"base_url": "u", "api_key": 3, "model": "m"}')
    assert load_credentials() is None


def test_repr_hides_the_key() -> None:
    assert "sk-secret" not in repr(CREDS)
