"""Frozen records: what ``@dataclass(frozen=True)`` makes, without compiling a method per class.

Python 3.11's :func:`dataclasses.dataclass` compiles each method it adds with ``exec``
(about a million instructions per class), and importing :mod:`dataclasses` imports
:mod:`inspect`, :mod:`ast`, :mod:`dis` and :mod:`tokenize`; ``agc-verify`` defines some
thirty records before it reads a byte, at every process start. A record declared as

    @record
    class Thing(FrozenRecord):
        name: str
        size: int = 0
        tags: Mapping[str, str] = field(default_factory=dict)

behaves as ``@dataclass(frozen=True)`` would make it, from methods shared by every
record instead of compiled per class:

- ``__init__`` takes the fields in declaration order (a base's fields first, a field
  redeclared in a subclass keeping its base's place), by position or keyword, those after
  a ``_: KW_ONLY`` marker by keyword only; a missing field takes its default or calls its
  ``default_factory``; then ``__post_init__`` runs when the class has one. A call that
  does not bind raises :class:`TypeError`; a mutable default (list, dict, set), a field
  without default after one with a default, or a base that is a dataclass but no record
  are refused when the class is defined, with :class:`TypeError` or :class:`ValueError`
  as :func:`dataclasses.dataclass` refuses them.
- Assigning or deleting a field raises :class:`dataclasses.FrozenInstanceError` (any
  attribute, on an instance of the record class itself).
- ``==`` is true only for an instance of the very same class whose compared fields are
  equal in order; ``hash`` is over the fields :func:`dataclasses.dataclass` hashes
  (``hash=True``, or ``hash=None`` and compared); ``repr`` is
  ``QualName(field=repr, …)`` over the fields with ``repr=True`` (``...`` for a record
  that contains itself).
- It is still a dataclass to the :mod:`dataclasses` functions (:func:`dataclasses.fields`,
  :func:`dataclasses.replace`, :func:`dataclasses.asdict`, a ``@dataclass`` subclass):
  ``__dataclass_fields__`` and ``__dataclass_params__`` are made by
  :func:`dataclasses.dataclass` itself, the first time one is asked for.

:func:`replace` is :func:`dataclasses.replace` for records, without importing
:mod:`dataclasses`.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar, dataclass_transform

if TYPE_CHECKING:
    from dataclasses import Field

__all__ = ["FrozenRecord", "field", "record", "replace"]

_T = TypeVar("_T")


class _Missing:
    """No default (the role of :data:`dataclasses.MISSING`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()

# Annotations (strings under ``from __future__ import annotations``) that are no field.
_CLASS_VARIABLE: Final = ("ClassVar", "typing.ClassVar", "t.ClassVar")
_KW_ONLY: Final = frozenset({"KW_ONLY", "dataclasses.KW_ONLY"})
_INIT_VARIABLE: Final = ("InitVar", "dataclasses.InitVar")


class Spec:
    """One field of a record: what :func:`dataclasses.field` records, as the record's
    methods read it (``default`` and ``default_factory`` are :data:`MISSING` when not
    given)."""

    __slots__ = (
        "compare",
        "default",
        "default_factory",
        "hash",
        "kw_only",
        "name",
        "repr",
        "type",
    )

    def __init__(
        self,
        *,
        default: Any = MISSING,
        default_factory: Any = MISSING,
        repr: bool = True,
        hash: bool | None = None,
        compare: bool = True,
        kw_only: bool | None = None,
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.hash = hash
        self.compare = compare
        self.kw_only = kw_only

    def named(self, name: str, annotation: Any, kw_only: bool) -> Spec:
        """This field as ``name`` of a class (a copy, as a base's field stays the base's)."""
        spec = Spec(
            default=self.default,
            default_factory=self.default_factory,
            repr=self.repr,
            hash=self.hash,
            compare=self.compare,
            kw_only=kw_only if self.kw_only is None else self.kw_only,
        )
        spec.name, spec.type = name, annotation
        return spec


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | _Missing = MISSING,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    kw_only: bool | _Missing = MISSING,
) -> Any:
    """A record field with options, as :func:`dataclasses.field` (without ``init`` and
    ``metadata``: every field of a record is a parameter of ``__init__``).

    Raises:
        ValueError: both ``default`` and ``default_factory`` are given.
    """
    return Spec(
        default=default,
        default_factory=default_factory,
        repr=repr,
        hash=hash,
        compare=compare,
        kw_only=None if isinstance(kw_only, _Missing) else kw_only,
    )


def _annotation_name(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")


def _collect(cls: type) -> dict[str, Spec]:
    """The fields of record class ``cls``, in :func:`dataclasses.dataclass`'s order;
    moves each declared default to the class as it does."""
    specs: dict[str, Spec] = {}
    for base in cls.__mro__[-1:0:-1]:
        inherited = base.__dict__.get("__record_fields__")
        if inherited is not None:
            specs.update((spec.name, spec) for spec in inherited)
        elif "__dataclass_fields__" in base.__dict__:
            raise TypeError(f"record {cls.__qualname__} cannot extend dataclass {base.__name__}")
    kw_only = False
    # The class's own annotations, as inspect.get_annotations reads them (not importing
    # inspect is the point of this module).
    own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    for name, annotation in own.items():
        label = _annotation_name(annotation)
        if label.startswith(_CLASS_VARIABLE):
            continue
        if label in _KW_ONLY:
            if kw_only:
                raise TypeError(f"{name!r} is KW_ONLY, but KW_ONLY has already been specified")
            kw_only = True
            continue
        if label.startswith(_INIT_VARIABLE):
            raise TypeError(f"record {cls.__qualname__}: InitVar {name!r} is not supported")
        # As dataclasses reads it: a default may be a base's class attribute.
        declared = getattr(cls, name, MISSING)
        given = declared if isinstance(declared, Spec) else Spec(default=declared)
        spec = given.named(name, annotation, kw_only)
        if isinstance(declared, Spec):
            if spec.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        default_type = type(spec.default)
        if spec.default is not MISSING and default_type.__hash__ is None:
            raise ValueError(
                f"mutable default {default_type} for field {name} is not allowed: "
                "use default_factory"
            )
        specs[name] = spec
    seen_default = ""
    for spec in specs.values():
        if spec.kw_only:
            continue
        if spec.default is not MISSING or spec.default_factory is not MISSING:
            seen_default = spec.name
        elif seen_default:
            raise TypeError(f"non-default argument {spec.name!r} follows default argument")
    return specs


def _init(cls: type, specs: tuple[Spec, ...]) -> Callable[..., None]:
    """``__init__`` of record class ``cls``: binds the fields ``specs`` (see the module
    docstring) and runs ``__post_init__`` when ``cls`` has one."""
    ordered = tuple(
        (s.name, s.default, s.default_factory)
        for s in (*(s for s in specs if not s.kw_only), *(s for s in specs if s.kw_only))
    )
    positional = tuple(s.name for s in specs if not s.kw_only)
    # The fields left for keywords and defaults after ``n`` positional arguments.
    rest = tuple(ordered[n:] for n in range(len(positional) + 1))
    names = frozenset(s.name for s in specs)
    post_init = getattr(cls, "__post_init__", None) is not None
    owner = f"{cls.__qualname__}.__init__()"
    set_attribute = object.__setattr__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        given = len(args)
        if given > len(positional):
            raise TypeError(
                f"{owner} takes {len(positional) + 1} positional arguments "
                f"but {given + 1} were given"
            )
        for name, value in zip(positional, args, strict=False):
            set_attribute(self, name, value)
        used = 0
        for name, default, factory in rest[given]:
            if name in kwargs:
                value = kwargs[name]
                used += 1
            elif default is not MISSING:
                value = default
            elif factory is not MISSING:
                value = factory()
            else:
                raise TypeError(f"{owner} missing required argument: {name!r}")
            set_attribute(self, name, value)
        if used != len(kwargs):
            for name in kwargs:
                if name in positional[:given]:
                    raise TypeError(f"{owner} got multiple values for argument {name!r}")
                if name not in names:
                    raise TypeError(f"{owner} got an unexpected keyword argument {name!r}")
        if post_init:
            self.__post_init__()

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


class _DataclassView:
    """``__dataclass_fields__`` or ``__dataclass_params__`` of a record class, made the
    first time it is asked for by :func:`dataclasses.dataclass` itself, from a class of
    the same fields (see :func:`_dataclass_view`)."""

    def __init__(self, owner: type, which: str) -> None:
        self.owner, self.which = owner, which

    def __get__(self, instance: object, kind: type | None = None) -> Any:
        fields, params = _dataclass_view(self.owner)
        type.__setattr__(self.owner, "__dataclass_fields__", fields)
        type.__setattr__(self.owner, "__dataclass_params__", params)
        return fields if self.which == "__dataclass_fields__" else params


def _dataclass_view(cls: type) -> tuple[dict[str, Field[Any]], Any]:
    """What ``@dataclass(frozen=True, eq=False, repr=False)`` would give ``cls`` as
    ``__dataclass_fields__`` and ``__dataclass_params__``."""
    import dataclasses  # noqa: PLC0415 - only a caller of the dataclasses functions needs it

    namespace: dict[str, Any] = {
        "__annotations__": {},
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
    }
    for spec in cls.__dict__["__record_fields__"]:
        namespace["__annotations__"][spec.name] = spec.type
        namespace[spec.name] = dataclasses.field(
            default=dataclasses.MISSING if spec.default is MISSING else spec.default,
            default_factory=dataclasses.MISSING
            if spec.default_factory is MISSING
            else spec.default_factory,
            repr=spec.repr,
            hash=spec.hash,
            compare=spec.compare,
            kw_only=bool(spec.kw_only),
        )
    twin: Any = dataclasses.dataclass(frozen=True, eq=False, repr=False)(
        type(cls.__name__, (), namespace)
    )
    return twin.__dataclass_fields__, twin.__dataclass_params__


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[_T]) -> type[_T]:
    """Make ``cls`` (a subclass of :class:`FrozenRecord`) a frozen record of its annotated
    fields (see the module docstring).

    Raises:
        TypeError: ``cls`` is no :class:`FrozenRecord`, a field without default follows
            one with a default, an ``InitVar``, or a dataclass base that is no record.
        ValueError: a mutable default (list, dict, set or any unhashable value).
    """
    if not issubclass(cls, FrozenRecord):
        raise TypeError(f"record {cls.__qualname__} must extend FrozenRecord")
    specs = tuple(_collect(cls).values())
    setattr_ = type.__setattr__
    setattr_(cls, "__record_fields__", specs)
    setattr_(cls, "__match_args__", tuple(s.name for s in specs if not s.kw_only))
    setattr_(cls, "__init__", _init(cls, specs))
    setattr_(cls, "__dataclass_fields__", _DataclassView(cls, "__dataclass_fields__"))
    setattr_(cls, "__dataclass_params__", _DataclassView(cls, "__dataclass_params__"))
    return cls


def _fields_of(kind: type) -> tuple[Any, ...]:
    """The fields (:class:`Spec` or :class:`dataclasses.Field`) of the nearest record or
    dataclass among ``kind`` and its bases: a ``@dataclass`` subclass of a record has the
    fields :func:`dataclasses.dataclass` gave it."""
    for klass in kind.__mro__:
        own = klass.__dict__
        if "__record_fields__" in own:
            return tuple(own["__record_fields__"])
        if "__dataclass_fields__" in own:
            import dataclasses  # noqa: PLC0415 - imported already: kind is a dataclass

            return dataclasses.fields(kind)
    return ()


def _names(kind: type, which: str) -> tuple[str, ...]:
    """The field names of record class ``kind`` that take part in ``which`` (``compare``,
    ``hash``, ``repr``, or ``init``: all), in declaration order; computed once per class."""
    cache = _CACHES[which]
    names = cache.get(kind)
    if names is None:
        found = _fields_of(kind)
        if which == "init":
            names = tuple(f.name for f in found)
        elif which == "hash":
            names = tuple(f.name for f in found if (f.compare if f.hash is None else f.hash))
        elif which == "compare":
            names = tuple(f.name for f in found if f.compare)
        else:
            names = tuple(f.name for f in found if f.repr)
        cache[kind] = names
    return names


_CACHES: Final[dict[str, dict[type, tuple[str, ...]]]] = {
    "compare": {},
    "hash": {},
    "repr": {},
    "init": {},
}


def _frozen(name: str) -> Exception:
    from dataclasses import FrozenInstanceError  # noqa: PLC0415 - a bug's path only

    return FrozenInstanceError(f"cannot assign to field {name!r}")


class FrozenRecord:
    """Base of a :func:`record`: the ``__eq__``, ``__hash__``, ``__repr__``,
    ``__setattr__`` and ``__delattr__`` that ``@dataclass(frozen=True)`` would generate
    (see the module docstring)."""

    __slots__ = ()

    if TYPE_CHECKING:
        __record_fields__: ClassVar[tuple[Spec, ...]]
        __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = _names(self.__class__, "compare")
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in _names(self.__class__, "hash")))

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown: list[Any] = [f"{n}={getattr(self, n)!r}" for n in _names(self.__class__, "repr")]
        return f"{self.__class__.__qualname__}({', '.join(shown)})"

    def __setattr__(self, name: str, value: object) -> None:
        kind = type(self)
        if "__record_fields__" in kind.__dict__ or name in _names(kind, "init"):
            raise _frozen(name)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        kind = type(self)
        if "__record_fields__" in kind.__dict__ or name in _names(kind, "init"):
            raise _frozen(name)
        super().__delattr__(name)


_R = TypeVar("_R", bound=FrozenRecord)  # not a string: no ForwardRef compiled at import


def replace(obj: _R, /, **changes: Any) -> _R:
    """A copy of record ``obj`` with ``changes`` (field name -> value), as
    :func:`dataclasses.replace` makes it: a new instance, ``__post_init__`` run again.

    Raises:
        TypeError: a name in ``changes`` is no field of the record.
    """
    for spec in type(obj).__record_fields__:
        if spec.name not in changes:
            changes[spec.name] = getattr(obj, spec.name)
    return obj.__class__(**changes)
