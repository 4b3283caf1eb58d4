"""Loading the settings, once, at start: each from the first place that sets it among the
command line's flags, the `THEUS_*` variables, `config.toml` in the config folder, and the
defaults; then installed for the process (`theus.settings.install`).

A value that does not parse is ignored with one warning naming it, and the next place is
asked. The chat endpoint is taken whole from one place: THEUS_BASE_URL/THEUS_API_KEY (or
their keys in the file), else OPENAI_BASE_URL/OPENAI_API_KEY, so a key set for one server is
never sent to a URL set for another.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from knowledge.core.paths import CONFIG_FILE, config_folder
from theus.settings import Settings, install

log = logging.getLogger(__name__)

_NOT_SET = ("", "0", "false", "no", "off")
_ENDPOINT = ("base_url", "api_key")
# Each setting's type, as written in the class ("bool", "int", "float", "str").
_TYPES = {f.name: str(f.type) for f in fields(Settings) if f.name != "origin"}
_KIND_WORDS = {"bool": "switch", "int": "whole number", "float": "number", "str": "text"}


def env_name(name: str) -> str:
    return f"THEUS_{name.upper()}"


def config_path(environ: Mapping[str, str]) -> Path:
    """`config.toml` in the config folder (which THEUS_HOME moves, so it is read first)."""
    return config_folder(environ.get(env_name("home"), "")) / CONFIG_FILE


def apply(flags: Mapping[str, object], environ: Mapping[str, str]) -> Settings:
    """Load the settings and install them for the process (once, at start; a benchmark that
    sets its variables calls it after)."""
    settings = load(flags, environ)
    install(settings)
    return settings


def load(flags: Mapping[str, object], environ: Mapping[str, str]) -> Settings:
    """The settings from `flags` (a None value is not given), `environ` and the config file."""
    path = config_path(environ)
    return resolve(flags, environ, _read_config(path), path.name)


def resolve(
    flags: Mapping[str, object],
    environ: Mapping[str, str],
    config: Mapping[str, object],
    config_name: str = CONFIG_FILE,
) -> Settings:
    """The settings from already-read sources, first place first (pure: no I/O)."""
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for name in _TYPES:
        for where, raw in (
            (f"--{name.replace('_', '-')}", flags.get(name)),
            (env_name(name), environ.get(env_name(name))),
            (config_name, config.get(name)),
        ):
            value = _parsed(name, raw, where)
            if value is not None:
                values[name], origin[name] = value, where
                break
    if not any(name in values for name in _ENDPOINT):
        for name in _ENDPOINT:  # the whole endpoint from the standard variables
            standard = f"OPENAI_{name.upper()}"
            if environ.get(standard, "").strip():
                values[name], origin[name] = environ[standard].strip(), standard
    return Settings(**values, origin=origin)


def _parsed(name: str, raw: object, where: str) -> object | None:
    """`raw` as the setting's type; None when not given (or empty), or when it does not parse
    (with a warning naming it)."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    kind = _TYPES[name]
    if isinstance(raw, str):
        text = raw.strip()
        if kind == "bool":
            return text.lower() not in _NOT_SET
        try:
            return int(float(text)) if kind == "int" else float(text) if kind == "float" else text
        except ValueError:
            pass
    elif kind == "bool" and isinstance(raw, (bool, int)):
        return bool(raw)
    elif kind in ("int", "float") and isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return int(raw) if kind == "int" else float(raw)
    given = (
        f"{where}={raw!r}" if where.startswith(("THEUS_", "--")) else f"{name} = {raw!r} in {where}"
    )
    log.warning("ignoring %s: not a %s", given, _KIND_WORDS[kind])
    return None


def _read_config(path: Path) -> dict[str, object]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        log.warning("ignoring %s: %s", path, exc)
        return {}
    import tomllib  # here: most runs have no file, and every run's start counts

    try:
        table = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return {}
    known = set(_TYPES) - {"home"}
    for key in sorted(set(table) - known):
        why = "the file lives in it: set THEUS_HOME" if key == "home" else "no such setting"
        log.warning("ignoring %r in %s: %s (see the README's Settings)", key, path, why)
    return {key: value for key, value in table.items() if key in known}
