"""A package's names loaded on first use (PEP 562): the one ``__getattr__``/``__dir__``
pair of every lazy front door, so that importing the package imports none of its modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    namespace: dict[str, Any], homes: Mapping[str, tuple[str, str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package whose ``globals()`` is ``namespace``.

    Args:
        namespace: the package's globals; a name, once loaded, is stored there, so the
            next access does not come back here.
        homes: each lazy name -> ``(module, attribute)`` it is loaded from.

    The ``__getattr__`` raises ``AttributeError`` for a name not in ``homes``; ``__dir__``
    lists the globals and ``__all__``.
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:  # noqa: N807 - the PEP 562 hook's own name
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = home
        value = getattr(importlib.import_module(module), attribute)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:  # noqa: N807 - the PEP 562 hook's own name
        return sorted([*namespace, *namespace["__all__"]])

    return __getattr__, __dir__
