"""The comparison, hash and repr of a frozen dataclass, shared instead of compiled per class.

Python 3.11's :func:`dataclasses.dataclass` compiles each method it adds with ``exec``;
of a frozen record's six, ``__eq__``, ``__hash__`` and ``__repr__`` are a third of the
cost of defining the class, paid at every process start that imports it (``agc-verify``
defines some thirty records before it reads a byte). A record declared as

    @dataclass(frozen=True, eq=False, repr=False)
    class Thing(FrozenRecord): ...

is still a dataclass (:func:`dataclasses.fields`, :func:`dataclasses.replace`,
:func:`dataclasses.asdict` work as before) and compares, hashes and prints exactly as
``@dataclass(frozen=True)`` would make it: equal only to an instance of the very same
class whose compared fields are equal in order, hashed over the fields that
:func:`dataclasses.dataclass` hashes (``hash=True``, or ``hash=None`` and compared), and
shown as ``QualName(field=repr, …)`` over the fields with ``repr=True`` (``...`` for a
record that contains itself).
"""

from __future__ import annotations

import reprlib
from dataclasses import fields
from typing import Any

__all__ = ["FrozenRecord"]

_COMPARED: dict[type, tuple[str, ...]] = {}
_HASHED: dict[type, tuple[str, ...]] = {}
_SHOWN: dict[type, tuple[str, ...]] = {}


def _names(kind: type, cache: dict[type, tuple[str, ...]], which: str) -> tuple[str, ...]:
    """The field names of dataclass ``kind`` that take part in ``which`` (``compare``,
    ``hash`` or ``repr``), in declaration order; computed once per class."""
    names = cache.get(kind)
    if names is None:
        found = fields(kind)
        if which == "hash":
            names = tuple(f.name for f in found if (f.compare if f.hash is None else f.hash))
        elif which == "compare":
            names = tuple(f.name for f in found if f.compare)
        else:
            names = tuple(f.name for f in found if f.repr)
        cache[kind] = names
    return names


class FrozenRecord:
    """Base of a ``@dataclass(frozen=True, eq=False, repr=False)`` record: the
    ``__eq__``, ``__hash__`` and ``__repr__`` that ``@dataclass(frozen=True)`` would
    generate (see the module docstring)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = _names(self.__class__, _COMPARED, "compare")
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in _names(self.__class__, _HASHED, "hash")))

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown: list[Any] = [
            f"{n}={getattr(self, n)!r}" for n in _names(self.__class__, _SHOWN, "repr")
        ]
        return f"{self.__class__.__qualname__}({', '.join(shown)})"
