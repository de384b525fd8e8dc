"""A record (``@record``, :class:`FrozenRecord`) behaves as ``@dataclass(frozen=True)``
would make the same class: fields and their order, ``__init__``, defaults, equality, hash,
repr, immutability, ``replace`` and the :mod:`dataclasses` functions."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc._core.record import FrozenRecord, field, record, replace
from agc.integrity import ArtifactReport, Finding, RunReport, Verdict


@record
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
    note: str = dataclasses.field(default="", compare=False)
    secret: str = dataclasses.field(default="", repr=False)
    weight: int = dataclasses.field(default=0, hash=False)


@record
class SharedChild(Shared):
    extra: int = 0


@record
class Holder(FrozenRecord):
    items: list[Any]


@dataclass(frozen=True)
class DataclassChild(Shared):
    """A ``@dataclass`` subclass of a record (as a feature's report of ``Report``)."""

    more: int = 0


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
    item = Shared("a", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.size = 2  # type: ignore[misc]
    assert dataclasses.is_dataclass(item)
    assert dataclasses.replace(item, size=2) == Shared("a", 2)
    assert replace(item, size=2) == Shared("a", 2)
    assert [f.name for f in dataclasses.fields(SharedChild)][-1] == "extra"
    assert dataclasses.asdict(SharedChild("a", 1, extra=3))["extra"] == 3
    assert repr(SharedChild("a", 1, extra=3)).startswith("SharedChild(name='a', size=1, ")
    # Copied and pickled as a dataclass is (a worker process sends its reports back).
    assert pickle.loads(pickle.dumps(item)) == item
    assert copy.deepcopy(SharedChild("a", 1, extra=3)) == SharedChild("a", 1, extra=3)


def test_a_dataclass_subclass_of_a_record_is_a_dataclass_of_all_fields() -> None:
    child = DataclassChild("a", 1, more=5)
    assert [f.name for f in dataclasses.fields(child)][-2:] == ["weight", "more"]
    assert child == DataclassChild("a", 1, more=5) != DataclassChild("a", 1)
    assert repr(child).startswith("DataclassChild(name='a', size=1, ")
    with pytest.raises(dataclasses.FrozenInstanceError):
        child.more = 2  # type: ignore[misc]


def test_a_record_that_contains_itself_prints() -> None:
    holder = Holder([])
    holder.items.append(holder)
    assert repr(holder) == "Holder(items=[...])"


@pytest.mark.parametrize("kind", [Finding, ArtifactReport, RunReport, Verdict])
def test_the_verifier_records_use_it(kind: type) -> None:
    # Their methods are the shared ones, none compiled for the class itself.
    assert issubclass(kind, FrozenRecord)
    assert {"__eq__", "__hash__", "__repr__", "__setattr__"}.isdisjoint(vars(kind))
    assert "__record_fields__" in vars(kind)


def test_a_record_must_extend_frozen_record() -> None:
    with pytest.raises(TypeError, match="must extend FrozenRecord"):
        record(type("Loose", (), {"__annotations__": {"a": "int"}}))


# -- the same class made both ways ------------------------------------------------------

_NAMES = ("alpha", "beta", "gamma", "delta", "eps")
_SCALARS = st.one_of(st.integers(-2, 2), st.text(max_size=2), st.none())
# What a field declares: no default, a default, a factory, or options through field().
_DECLARED = st.one_of(
    st.just(("none",)),
    st.tuples(st.just("plain"), _SCALARS),
    st.tuples(st.just("plain"), st.just([])),  # a mutable default: refused
    st.tuples(
        st.just("field"),
        st.one_of(st.just(("missing",)), st.tuples(st.just("default"), _SCALARS)),
        st.sampled_from([None, list, tuple]),
        st.booleans(),
        st.sampled_from([None, True, False]),
        st.booleans(),
        st.sampled_from([None, True, False]),
    ),
)


@st.composite
def _class_specs(draw: st.DrawFn) -> tuple[list[list[tuple[str, Any]]], list[int | None]]:
    """Fields of a base class and a subclass (the subclass may redeclare a base field),
    and where each puts a ``KW_ONLY`` marker (``None``: none)."""
    levels = draw(st.integers(1, 2))
    classes = []
    markers: list[int | None] = []
    for _ in range(levels):
        names = draw(st.lists(st.sampled_from(_NAMES), unique=True, max_size=4))
        classes.append([(name, draw(_DECLARED)) for name in names])
        markers.append(draw(st.one_of(st.none(), st.integers(0, len(names)))))
    return classes, markers


def _namespace(
    fields: list[tuple[str, Any]], marker: int | None, make_field: Any, kw_only: Any
) -> dict[str, Any]:
    annotations: dict[str, Any] = {}
    namespace: dict[str, Any] = {"__annotations__": annotations, "__module__": __name__}
    for index, (name, declared) in enumerate(fields):
        if index == marker:
            annotations["_"] = kw_only
        annotations[name] = "int"
        if declared[0] == "plain":
            namespace[name] = declared[1]
        elif declared[0] == "field":
            _, default, factory, use_repr, use_hash, compare, field_kw_only = declared
            options: dict[str, Any] = {"repr": use_repr, "hash": use_hash, "compare": compare}
            if default[0] == "default":
                options["default"] = default[1]
            if factory is not None:
                options["default_factory"] = factory
            if field_kw_only is not None:
                options["kw_only"] = field_kw_only
            namespace[name] = make_field(**options)
    if marker is not None and marker >= len(fields):
        annotations["_"] = kw_only
    return namespace


def _build(
    classes: list[list[tuple[str, Any]]], markers: list[int | None], as_record: bool
) -> type | type[BaseException]:
    """The class hierarchy made with ``@record`` or ``@dataclass(frozen=True)``; the
    exception's type when the definition is refused."""
    base: type = FrozenRecord if as_record else object
    make_field = field if as_record else dataclasses.field
    kw_only = "KW_ONLY" if as_record else dataclasses.KW_ONLY
    decorate = record if as_record else dataclass(frozen=True)
    made = base
    for fields, marker in zip(classes, markers, strict=True):
        try:
            namespace = _namespace(fields, marker, make_field, kw_only)
            made = decorate(type("Thing", (made,), namespace))
        except (TypeError, ValueError) as exc:
            return type(exc)
    return made


def _call(kind: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        return kind(*args, **kwargs)
    except TypeError:
        return TypeError


def _outcome(function: Any, value: Any) -> Any:
    """``function(value)``, or the type of the exception it raises."""
    try:
        return function(value)
    except Exception as exc:
        return type(exc)


def _fields_of(kind: Any) -> list[tuple[Any, ...]]:
    return [
        (f.name, f.type, f.default, f.default_factory, f.repr, f.hash, f.compare, f.kw_only, f.init)
        for f in dataclasses.fields(kind)
    ]


@given(
    _class_specs(),
    st.lists(st.integers(-3, 3), max_size=6).map(tuple),
    st.dictionaries(st.sampled_from((*_NAMES, "zeta")), st.integers(-3, 3), max_size=4),
    st.lists(st.integers(-3, 3), max_size=6).map(tuple),
    st.dictionaries(st.sampled_from(_NAMES), st.integers(-3, 3), max_size=3),
)
def test_a_record_is_the_frozen_dataclass_of_its_fields(
    spec: tuple[list[list[tuple[str, Any]]], list[int | None]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    other_args: tuple[Any, ...],
    changes: dict[str, Any],
) -> None:
    classes, markers = spec
    made, twin = _build(classes, markers, True), _build(classes, markers, False)
    if isinstance(twin, type) and issubclass(twin, BaseException):
        assert made is twin  # refused the same way
        return
    assert isinstance(made, type)
    assert not issubclass(made, BaseException)
    assert _fields_of(made) == _fields_of(twin)
    assert made.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    ours, theirs = _call(made, args, kwargs), _call(twin, args, kwargs)
    if theirs is TypeError:
        assert ours is TypeError
        return
    assert ours is not TypeError
    assert vars(ours) == vars(theirs)
    assert repr(ours) == repr(theirs)
    assert _outcome(hash, ours) == _outcome(hash, theirs)
    other_ours, other_theirs = _call(made, other_args, {}), _call(twin, other_args, {})
    if other_theirs is not TypeError:
        assert (ours == other_ours) == (theirs == other_theirs)
        assert (ours != other_ours) == (theirs != other_theirs)
    for name in (*_NAMES, "zeta"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(ours, name, 1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(ours, name)
    # A factory makes a new value for each instance (where the dataclass's does).
    again_ours, again_theirs = _call(made, args, kwargs), _call(twin, args, kwargs)
    for name in vars(theirs):
        shared = getattr(again_theirs, name) is getattr(theirs, name)
        assert (getattr(again_ours, name) is getattr(ours, name)) == shared
    replaced = {name: value for name, value in changes.items() if name in vars(theirs)}
    expected = vars(dataclasses.replace(theirs, **replaced))
    assert vars(replace(ours, **replaced)) == expected
    assert vars(dataclasses.replace(ours, **replaced)) == expected
