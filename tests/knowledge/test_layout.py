"""The memory's sub-packages each say what they offer (`__all__`), and say it truly."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import knowledge

SUBPACKAGES = sorted(
    info.name for info in pkgutil.iter_modules(knowledge.__path__, "knowledge.") if info.ispkg
)


def test_the_memory_is_in_sub_packages_with_nothing_loose_but_the_episodes() -> None:
    loose = [
        info.name
        for info in pkgutil.iter_modules(knowledge.__path__, "knowledge.")
        if not info.ispkg
    ]
    assert loose == ["knowledge.episodes"]
    assert {"knowledge.core", "knowledge.index", "knowledge.recall", "knowledge.memory"} <= set(
        SUBPACKAGES
    )


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_sub_package_lists_what_it_offers_and_each_name_resolves(name: str) -> None:
    package = importlib.import_module(name)
    offered = getattr(package, "__all__", None)
    assert offered, f"{name} has no __all__"
    assert len(offered) == len(set(offered)), f"{name}.__all__ repeats a name"
    for item in offered:
        if not hasattr(package, item):  # a sub-module offered by name
            importlib.import_module(f"{name}.{item}")
