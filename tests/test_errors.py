"""Every exception class Theus defines derives from the one root, `TheusError`."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import entrypoint
import knowledge
import theus
import tui
from knowledge.core.errors import TheusError


def _modules() -> list[str]:
    names = []
    for package in (entrypoint, knowledge, theus, tui):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not info.name.endswith("__main__"):  # running it is the command itself
                names.append(info.name)
    return names


def test_every_exception_class_derives_from_theus_error() -> None:
    defined = []
    for name in _modules():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and issubclass(cls, BaseException):
                defined.append(cls)
    assert len(defined) >= 35  # the walk found them (a broken walk would pass vacuously)
    stray = [f"{c.__module__}.{c.__qualname__}" for c in defined if not issubclass(c, TheusError)]
    assert stray == []


def test_errors_callers_catch_as_built_ins_keep_those_bases() -> None:
    from knowledge.episodes import EpisodeNotFound
    from knowledge.facts.extraction import ExtractionError
    from knowledge.memdir.crud import MemoryNotFound

    assert issubclass(EpisodeNotFound, LookupError) and issubclass(MemoryNotFound, LookupError)
    assert issubclass(ExtractionError, ValueError)
