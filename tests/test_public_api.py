"""Each front door's ``__all__`` is exactly its public names (as httpx checks its own).

A public name is one a user sees in ``dir(module)`` without a leading underscore, other
than submodules and ``from __future__`` features. Everything else lives in private
modules (``agc.integrity._verify`` …) behind the front door.
"""

from __future__ import annotations
import __future__

import importlib
import types

import pytest

FRONT_DOORS = (
    "agc",
    "agc.integrity",
    "agc.resume",
    "agc.ledger",
    "agc.extensions",
    "agc.readiness",
    "agc.serve",
    "agc.flows",
    "agc.cli",
)


def _public_names(module: types.ModuleType) -> set[str]:
    names = set()
    for name in dir(module):
        if name.startswith("_"):
            continue
        value = getattr(module, name)
        if isinstance(value, types.ModuleType | __future__._Feature):
            continue
        names.add(name)
    return names


@pytest.mark.parametrize("module_name", FRONT_DOORS)
def test_all_is_exactly_the_public_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    declared = list(module.__all__)
    assert len(declared) == len(set(declared)), "a name is listed twice"
    # Dunders such as ``__version__`` may be exported on purpose; they are not counted.
    assert {name for name in declared if not name.startswith("__")} == _public_names(module)


@pytest.mark.parametrize("module_name", FRONT_DOORS)
def test_every_exported_name_is_defined_behind_the_door(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name in module.__all__:
        value = getattr(module, name)
        home = getattr(value, "__module__", None)
        if isinstance(home, str) and home.startswith("agc"):
            assert home == module_name or home.startswith(("agc._core", f"{module_name}.")), (
                f"{module_name}.{name} comes from {home}"
            )
