"""A FrozenRecord compares, hashes and prints as ``@dataclass(frozen=True)`` would."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc._core.record import FrozenRecord
from agc.integrity import ArtifactReport, Finding, RunReport, Verdict


@dataclass(frozen=True, eq=False, repr=False)
class Shared(FrozenRecord):
    name: str
    size: int
    tags: tuple[str, ...] = ()
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)
    weight: int = field(default=0, hash=False)


@dataclass(frozen=True)
class Generated:
    name: str
    size: int
    tags: tuple[str, ...] = ()
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)
    weight: int = field(default=0, hash=False)


@dataclass(frozen=True, eq=False, repr=False)
class SharedChild(Shared):
    extra: int = 0


@dataclass(frozen=True, eq=False, repr=False)
class Holder(FrozenRecord):
    items: list[Any]


_VALUES = st.tuples(
    st.text(max_size=4),
    st.integers(-3, 3),
    st.lists(st.text(max_size=2), max_size=2).map(tuple),
    st.text(max_size=2),
    st.text(max_size=2),
    st.integers(-2, 2),
)


@given(_VALUES, _VALUES)
def test_eq_hash_and_repr_are_the_generated_ones(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    shared_a, shared_b = Shared(*a), Shared(*b)
    generated_a, generated_b = Generated(*a), Generated(*b)
    assert (shared_a == shared_b) == (generated_a == generated_b)
    assert (shared_a != shared_b) == (generated_a != generated_b)
    assert hash(shared_a) == hash(generated_a)
    assert repr(shared_a) == repr(generated_a).replace("Generated(", "Shared(", 1)


def test_equal_only_to_the_same_class() -> None:
    assert Shared("a", 1) != SharedChild("a", 1)
    assert SharedChild("a", 1) == SharedChild("a", 1)
    assert SharedChild("a", 1) != SharedChild("a", 1, extra=2)
    assert Shared("a", 1) != ("a", 1)
    assert Shared("a", 1).__eq__(("a", 1)) is NotImplemented


def test_still_a_frozen_dataclass() -> None:
    record = Shared("a", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.size = 2  # type: ignore[misc]
    assert dataclasses.replace(record, size=2) == Shared("a", 2)
    assert [f.name for f in dataclasses.fields(SharedChild)][-1] == "extra"
    assert repr(SharedChild("a", 1, extra=3)).startswith("SharedChild(name='a', size=1, ")


def test_a_record_that_contains_itself_prints() -> None:
    holder = Holder([])
    holder.items.append(holder)
    assert repr(holder) == "Holder(items=[...])"


@pytest.mark.parametrize("kind", [Finding, ArtifactReport, RunReport, Verdict])
def test_the_verifier_records_use_it(kind: type) -> None:
    # Their methods are the shared ones, none compiled for the class itself.
    assert issubclass(kind, FrozenRecord)
    assert {"__eq__", "__hash__", "__repr__"}.isdisjoint(vars(kind))
