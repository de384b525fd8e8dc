"""Findings and reports: the one shape every agc check returns.

Every ``check_*()`` function returns a frozen report and never raises on findings. A
report holds :class:`Finding` objects, each with a stable kebab-case ``code`` (typed by
the report kind's ``Literal`` of codes), a ``severity`` and a human ``message``. The
report's verdict (``complete`` for runs and stores, ``valid`` for histories, ``ok`` for
turn files …) is a property computed from its findings, never a stored field that could
contradict them: an ``error`` finding fails the verdict, ``warning`` and ``info`` do not.

Every report serialises with ``to_dict()``, whose first member is ``schema_version``
(:data:`SCHEMA_VERSION`, the version of every agc ``--json`` output); ``to_streamed()``
is the same document with its long lists left as :class:`JsonItems`, made one item at
a time as they are written (``agc resume --json`` of a report that keeps every finding).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, Literal, TypeVar, get_args

from agc._core.record import FrozenRecord, record
from agc.errors import ReportInvalidError

if TYPE_CHECKING:
    from dataclasses import KW_ONLY

__all__ = [
    "SCHEMA_VERSION",
    "SEVERITIES",
    "CodeT_co",
    "Finding",
    "JsonItems",
    "Report",
    "Severity",
    "listed",
]

SCHEMA_VERSION: Final = 1
"""Version of every report and result agc prints with ``--json`` (``schema_version``)."""

Severity = Literal["error", "warning", "info"]
SEVERITIES: Final[tuple[Severity, ...]] = get_args(Severity)

CodeT_co = TypeVar("CodeT_co", bound=str, covariant=True)
_T = TypeVar("_T")
"""A report kind's code type: a ``Literal`` of its codes."""

_KEBAB: Final = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


@record
class Finding(FrozenRecord, Generic[CodeT_co]):
    """One thing that is wrong (or, for warnings and infos, worth knowing).

    ``code``, ``message`` and ``severity`` may be given by position; the rest, which a
    report kind uses or not, only by keyword.

    Attributes:
        code: stable kebab-case code, one of the report kind's codes.
        message: the human sentence, e.g. ``"transcript checksum mismatch"``.
        severity: ``error`` fails the report's verdict; ``warning`` and ``info`` do not.
        artifact: what the finding is about: an artifact kind (``transcript``,
            ``tool-events``), ``manifest`` or ``store``.
        expected: what the seal says (``digest``, ``bytes``, ``records`` …), if known.
        actual: what was found instead, if known.
        attempt: the attempt (1-based) of a turn file the finding is about.
        line: the 1-based line of the file the finding is about.
        lines: ``(first, last)``, the 1-based range of lines (inclusive, as ``sed -n``
            counts them) in which the change the finding is about begins.
        message_index: index of the message or item in a history's view.
        record: 0-based index of the history's native record (a session file's line).
        call_id: the tool call or result id concerned.

    Raises:
        ReportInvalidError: ``code`` is not kebab-case or ``severity`` is unknown.
    """

    code: CodeT_co
    message: str
    severity: Severity = "error"
    _: KW_ONLY
    artifact: str | None = None
    expected: Mapping[str, Any] | None = None
    actual: Mapping[str, Any] | None = None
    attempt: int | None = None
    line: int | None = None
    lines: tuple[int, int] | None = None
    message_index: int | None = None
    record: int | None = None
    call_id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.code, str) or not _KEBAB.fullmatch(self.code):
            raise ReportInvalidError(f"finding code {self.code!r} is not kebab-case")
        if self.severity not in SEVERITIES:
            raise ReportInvalidError(
                f"finding severity {self.severity!r} is not one of {', '.join(SEVERITIES)}"
            )

    @property
    def is_error(self) -> bool:
        """True for an ``error`` finding (it fails the verdict)."""
        return self.severity == "error"

    def to_dict(self, keys: Sequence[str] | None = None) -> dict[str, Any]:
        """JSON-ready dict of ``keys`` (attribute names, in output order; default: all).

        Mappings (``expected``, ``actual``) are copied to plain dicts.
        """
        names = keys if keys is not None else [f.name for f in self.__record_fields__]
        out: dict[str, Any] = {}
        for name in names:
            value = getattr(self, name)
            if isinstance(value, Mapping):
                value = dict(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[name] = value
        return out


@record
class Report(FrozenRecord, Generic[CodeT_co]):
    """Base of every agc report; subclasses are frozen records
    (:func:`agc._core.record.record`) or frozen dataclasses.

    A subclass declares its findings (a field, or a property for a report made of
    others), its codes in :attr:`CODES`, its one verdict property computed from
    :attr:`errors`, and its JSON members in :meth:`_members`.

    Raises:
        ReportInvalidError: at construction, a finding's code is not one of :attr:`CODES`.
    """

    CODES: ClassVar[frozenset[str]] = frozenset()
    """The kind's finding codes (``get_args`` of its ``Literal``); checked at construction."""

    if TYPE_CHECKING:

        @property
        def findings(self) -> Sequence[Finding[CodeT_co]]:
            """Every finding, in the order found."""

    def __post_init__(self) -> None:
        unknown = sorted(self.codes() - self.CODES)
        if unknown:
            raise ReportInvalidError(
                f"{type(self).__name__} does not know the finding code(s) {', '.join(unknown)}"
            )

    @property
    def errors(self) -> tuple[Finding[CodeT_co], ...]:
        """The findings of severity ``error``: the verdict fails when there is one."""
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> tuple[Finding[CodeT_co], ...]:
        """The findings of severity ``warning``."""
        return tuple(f for f in self.findings if f.severity == "warning")

    def codes(self) -> frozenset[str]:
        """The codes of every finding."""
        return frozenset(f.code for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: ``schema_version`` first, then the report's members."""
        return listed(self.to_streamed())

    def to_streamed(self) -> dict[str, Any]:
        """:meth:`to_dict` with the long lists a report kind makes lazily left as
        :class:`JsonItems` (members of the dict or of a dict in it), for a writer that
        writes them one item at a time."""
        return {"schema_version": SCHEMA_VERSION, **self._members()}

    def _members(self) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} does not define its JSON members")


class JsonItems(Generic[_T]):
    """A JSON array of a report whose items are made as they are written: each of
    ``items`` (iterated once per reading, so a re-iterable such as a tuple or a
    :class:`~agc._core.spill.SpilledItems`) given by ``render`` as a JSON-ready value.

    ``escapes``: whether an item's value holds a lone surrogate (a string that has no
    UTF-8 form, so the whole document is written with ``\\u`` escapes); ``None`` when
    not known (a writer then looks at every item first).
    """

    __slots__ = ("escapes", "items", "render")

    def __init__(
        self, items: Iterable[_T], render: Callable[[_T], Any], *, escapes: bool | None = None
    ) -> None:
        self.items = items
        self.render = render
        self.escapes = escapes

    def __iter__(self) -> Iterator[Any]:
        render = self.render
        for item in self.items:
            yield render(item)

    def __bool__(self) -> bool:
        return any(True for _ in self.items)

    def __repr__(self) -> str:
        return f"JsonItems({self.items!r})"


def listed(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with each :class:`JsonItems` among its members (or the members of a
    dict in it) made a list: the JSON-ready dict it stands for."""
    out: dict[str, Any] = {}
    for key, value in document.items():
        if isinstance(value, JsonItems):
            out[key] = list(value)
        else:
            out[key] = listed(value) if type(value) is dict else value
    return out
