"""Strict JSON: one reader, one writer, one rule for what counts as JSON.

Every JSON document agc reads back (run manifests, chain lines and the chain head,
checkpoint lines, sealed snapshots, ledger turn files, histories and agent input) is
parsed by :func:`loads`, and every record agc writes goes through :func:`dumps` (the
JSONL writer inlines the same fast path). The rule is RFC 8259 JSON that is also
I-JSON (RFC 7493):

* ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON (RFC 8259 §6), and neither is a
  number too large for an IEEE 754 double (``1e400`` would read as infinity);
* an object may not name a member twice. RFC 8259 §4 leaves the meaning of a duplicate
  to the parser (Python, JavaScript and orjson keep the last value, other parsers the
  first or fail), and RFC 7493 §2.3 forbids it: evidence must mean one thing to every
  reader, so a manifest with two ``artifacts`` members is refused, not read one way;
* arrays and objects nest at most :data:`MAX_DEPTH` deep (a deeper document is refused,
  never a ``RecursionError``);
* a string may not hold a lone surrogate (an unpaired ``\\uD800``-``\\uDFFF`` escape:
  not a Unicode scalar value, RFC 7493 §2.1, and not encodable as UTF-8). Readers of
  transcripts written by other programs pass ``allow_lone_surrogates=True``: an agent
  that cut a string inside a surrogate pair still wrote RFC 8259 JSON, and the line
  is read (and written back) as it is;
* bytes are UTF-8 without a byte order mark (RFC 8259 §8.1).

Why the reader is the standard library's parser, not orjson: orjson keeps the last of
two duplicate members silently and turns integers beyond 64 bits into floats, so it
cannot apply the rule; the standard library's C scanner with a duplicate check costs
about as much as orjson plus the walk that check would need. The writer does use
orjson (compact, raw UTF-8) and falls back to the standard library where orjson refuses
a value or may differ (see :func:`dumps`).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

from agc.errors import JsonInvalidError

__all__ = [
    "MAX_DEPTH",
    "Canonical",
    "JsonInvalidError",
    "canonical",
    "dumps",
    "dumps_stdlib",
    "exceeds_depth",
    "has_lone_surrogate",
    "line_reader",
    "loads",
    "loads_lines",
    "not_native",
    "orjson_options",
    "stable_spelling",
]

T = TypeVar("T")

MAX_DEPTH: Final = 512
"""Deepest nesting of arrays and objects read or written (orjson writes up to 254)."""


@functools.cache
def orjson_options() -> int:
    """The orjson options of every agc writer.

    Types orjson would serialize where the standard library refuses (datetime,
    dataclasses, subclasses of builtins) are passed to :func:`not_native` instead, which
    sends the value to the standard-library path: one verdict whichever path runs.
    orjson is imported here, on first write: readers (``agc-verify``) never load it.
    """
    from agc._core.orjson_loader import orjson  # noqa: PLC0415 - see above

    options: int = (
        orjson.OPT_PASSTHROUGH_DATETIME
        | orjson.OPT_PASSTHROUGH_DATACLASS
        | orjson.OPT_PASSTHROUGH_SUBCLASS
    )
    return options


def not_native(value: Any) -> Any:
    """orjson ``default=``: leave every type orjson does not take natively to the
    standard library (raises ``TypeError``)."""
    raise TypeError(f"{type(value).__name__} is left to the standard library")


class _RefusedError(ValueError):
    """Raised inside the decoder's hooks; becomes a JsonInvalidError with its problem."""

    def __init__(self, message: str, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RefusedError(f"duplicate key {key!r}", "duplicate")
            seen.add(key)
    return result


def _refuse_constant(name: str) -> Any:
    raise _RefusedError(f"{name} is not valid JSON", "constant")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _RefusedError(f"number {text} is out of range for a float", "number")
    return value


# One decoder, built once: json.loads() with hooks builds a new one on every call.
_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=_unique_members,
    parse_constant=_refuse_constant,
    parse_float=_finite_float,
)


def loads(data: bytes | str, *, allow_lone_surrogates: bool = False, many: bool = False) -> Any:
    """Parse one JSON document under the rule above.

    Args:
        data: UTF-8 bytes (or text) of exactly one JSON value; surrounding whitespace is
            allowed.
        allow_lone_surrogates: keep a lone surrogate escape in a string (as a Python
            ``str`` that cannot be encoded as UTF-8) instead of refusing the document;
            only for transcripts written by other programs.
        many: the caller parses many documents (the lines of a session file), so bytes
            of any size take orjson's path (below) when it gives the rule's value: the
            import of orjson is paid once, and the standard library's scanner with the
            duplicate check takes several times longer per document.

    Returns:
        The value: ``dict`` (insertion-ordered), ``list``, ``str``, ``int``, ``float``,
        ``bool`` or ``None``.

    Raises:
        JsonInvalidError: a ``ValueError`` naming the problem (and its
            :attr:`~agc.errors.JsonInvalidError.problem`): not UTF-8, a byte order mark,
            not JSON (with line and column), NaN/Infinity, a number beyond a double, a
            duplicate member name, nesting deeper than :data:`MAX_DEPTH`, or a lone
            surrogate.
        TypeError: ``data`` is neither bytes nor str.
    """
    if many and type(data) is bytes:  # checked first: called once per line
        value = _loads_orjson(data)
        if value is not _NOT_TAKEN:
            return value
    return _loads_rule(data, allow_lone_surrogates=allow_lone_surrogates, many=many)


def _loads_rule(data: bytes | str, *, allow_lone_surrogates: bool, many: bool) -> Any:
    """:func:`loads` after orjson's path for ``many`` (the standard library decides)."""
    if isinstance(data, str):
        text = data
    elif not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"JSON text must be bytes or str, not {type(data).__name__}")
    else:
        data = bytes(data)
        if data.startswith(b"\xef\xbb\xbf"):
            raise JsonInvalidError("starts with a UTF-8 byte order mark", problem="bom")
    if not isinstance(data, str):
        if not many and len(data) >= _FAST_PATH_BYTES:
            value = _loads_orjson(data)
            if value is not _NOT_TAKEN:
                return value
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonInvalidError(
                f"not UTF-8 ({exc.reason} at byte {exc.start})", problem="not-utf8"
            ) from exc
    try:
        value = _DECODER.decode(text)
    except RecursionError as exc:
        raise _too_deep() from exc
    except _RefusedError as exc:
        raise JsonInvalidError(str(exc), problem=exc.problem) from exc
    except ValueError as exc:  # json.JSONDecodeError; an integer of more than 4300 digits
        raise JsonInvalidError(str(exc), problem="syntax") from exc
    # Cheap bounds first: most documents have fewer brackets than MAX_DEPTH, and in
    # UTF-8 bytes a lone surrogate can only come from a \u escape.
    if text.count("[") + text.count("{") > MAX_DEPTH and _nests_deeper(value, MAX_DEPTH):
        raise _too_deep()
    if (
        not allow_lone_surrogates
        and ("\\u" in text or (isinstance(data, str) and _not_utf8(text)))
        and has_lone_surrogate(value)
    ):
        raise JsonInvalidError(
            "a string holds a lone surrogate (an unpaired \\uD800-\\uDFFF escape)",
            problem="surrogate",
        )
    return value


# Documents this large are read by orjson when that gives the same value (below);
# smaller ones never load orjson (agc-verify reads a 2 KB manifest and starts faster).
_FAST_PATH_BYTES: Final = 64 * 1024
_NOT_TAKEN: Final = object()
# Every digit becomes "0": a run of 19 zeros then marks a run of 19 digits, found at
# C speed (a regular expression took longer than orjson's whole parse).
_DIGITS_TO_ZERO: Final = bytes.maketrans(b"0123456789", b"0" * 10)
_NINETEEN_DIGITS: Final = b"0" * 19


@functools.cache
def _orjson() -> Any:
    """orjson, imported on first use (see :data:`_FAST_PATH_BYTES`)."""
    from agc._core.orjson_loader import orjson  # noqa: PLC0415 - only for large documents or many

    return orjson


def line_reader() -> Callable[[bytes], Any]:
    """:func:`loads` of one line of a transcript (bytes, ``allow_lone_surrogates=True``,
    ``many=True``) as a function that does orjson's path itself (see
    :func:`_loads_orjson`, the same tests in the same order of cost) and calls no other
    Python function for a line it takes: a pass over a session file parses hundreds of
    thousands of lines, where the calls cost more than orjson's parse. A property test
    holds it to :func:`loads` on every kind of line.

    Raises (the returned function):
        JsonInvalidError: as :func:`loads`.
    """
    orjson = _orjson()
    parse, write = orjson.loads, orjson.dumps
    failed = (orjson.JSONDecodeError, orjson.JSONEncodeError)
    digits, nineteen = _DIGITS_TO_ZERO, _NINETEEN_DIGITS

    def read(data: bytes) -> Any:
        try:
            value = parse(data)
            written = write(value)
        except failed:
            return _loads_rule(data, allow_lone_surrogates=True, many=True)
        if (
            written == data
            or data.replace(b" ", b"") == written.replace(b" ", b"")
            or (
                written.count(b":") == data.count(b":")
                and not (b"\\u003" in data and (b"\\u003a" in data or b"\\u003A" in data))
                and nineteen not in data.translate(digits)
            )
        ):
            return value
        return _loads_rule(data, allow_lone_surrogates=True, many=True)

    return read


def _loads_orjson(data: bytes) -> Any:
    """orjson's value when it is provably the rule's value, else ``_NOT_TAKEN``.

    orjson refuses NaN/Infinity, numbers beyond a double, lone surrogates, a byte order
    mark, invalid UTF-8 and nesting deeper than 1024, as the rule does. Where it may
    differ, the standard library decides: a run of 19+ digits (orjson reads an integer
    beyond 64 bits as a float), a ``\\u003a`` escape (see below), anything orjson refuses
    (for the exact error, or a lone surrogate the caller allows), nesting deeper than
    254 (orjson cannot write the value back) and a duplicate member.

    The value is written back; when that gives the input byte for byte (compact JSON
    as the agents' clients write it), orjson's value is the rule's: an object that
    lost a duplicate member, or an integer read as a float, is written otherwise, and a
    float written in its shortest form is read as that same double by any correctly
    rounding reader. The same holds when the two are equal once every space (0x20) is
    taken out of both (JSON written with a space after each separator): a space is
    never inside a number, a literal or an escape, so taking the spaces out of valid
    JSON leaves its tokens (a string only shorter by its spaces). The input then has
    the members, items and number tokens of the value written back, in order: no
    member was dropped, and each number is spelled as orjson's value of it is written
    (an integer as its digits, a float in its shortest form); its strings read alike
    under both parsers. Otherwise the checks above decide, and duplicates are found by
    counting: in JSON a colon is either a member separator or inside a string, and
    orjson writes the value back with one separator per member kept and every colon of
    every string as a raw ``:``. So when the input spells no colon as ``\\u003a``, the
    input has as many colons as the value written back exactly when no member was
    dropped.
    """
    orjson = _orjson()
    try:
        value = orjson.loads(data)
        written: bytes = orjson.dumps(value)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return _NOT_TAKEN
    if written == data or data.replace(b" ", b"") == written.replace(b" ", b""):
        return value
    if (b"\\u003" in data and (b"\\u003a" in data or b"\\u003A" in data)) or (
        _NINETEEN_DIGITS in data.translate(_DIGITS_TO_ZERO)
    ):
        return _NOT_TAKEN
    return value if written.count(b":") == data.count(b":") else _NOT_TAKEN


def _nests_deeper(value: Any, limit: int) -> bool:
    """:func:`exceeds_depth` for parsed JSON (only ``dict`` and ``list``), level by level."""
    level = [value]
    for _ in range(limit + 1):
        dicts = [item for item in level if type(item) is dict]
        lists = [item for item in level if type(item) is list]
        if not dicts and not lists:
            return False
        level = [child for item in dicts for child in item.values()]
        level += [child for item in lists for child in item]
    return True


def _too_deep() -> JsonInvalidError:
    return JsonInvalidError(f"nested deeper than {MAX_DEPTH} levels", problem="depth")


def exceeds_depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when arrays/objects (lists, tuples, mappings) in ``value`` nest deeper
    than ``limit``; a scalar has depth 0. Iterative: any depth is measured safely."""
    try:
        _check_tree(value, limit, keys=False)
    except JsonInvalidError:
        return True
    return False


_KEY_TEXT: Final[dict[object, str]] = {True: "true", False: "false", None: "null"}


def _check_tree(value: Any, limit: int, *, keys: bool) -> None:
    """Refuse nesting deeper than ``limit`` and (``keys``) non-string keys that the
    standard library would write as a name the object already has (``{1: .., "1": ..}``)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if type(item) is Canonical:
            item = item.value
        if isinstance(item, Mapping):
            children: Any = item.values()
            if keys and not all(type(key) is str for key in item):
                names = [_key_text(key) for key in item]
                if len(set(names)) != len(names):
                    raise JsonInvalidError(
                        "two keys of an object would be written as one name", problem="duplicate"
                    )
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        if depth > limit:
            raise JsonInvalidError(f"nested deeper than {limit} levels", problem="depth")
        stack.extend(
            (child, depth)
            for child in children
            if isinstance(child, Mapping | list | tuple | Canonical)
        )


def _key_text(key: object) -> object:
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bool) or key is None:
        return _KEY_TEXT[key]
    if isinstance(key, int | float):
        return json.dumps(key)
    return key  # the standard library refuses it with a TypeError


def _not_utf8(text: str) -> bool:
    """A ``str`` given may hold a raw surrogate (bytes never do: they were UTF-8)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def has_lone_surrogate(value: Any) -> bool:
    """Whether a string in ``value`` (a parsed JSON value) holds a lone surrogate, which
    is not a Unicode scalar value (RFC 7493 section 2.1) and cannot be written as UTF-8."""
    try:
        json.dumps(value, ensure_ascii=False, check_circular=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def dumps(value: Any) -> bytes:
    """Compact JSON bytes of ``value`` (raw UTF-8, no trailing newline) under the rule.

    orjson first; a value orjson does not take natively, or whose bytes hold ``null``
    (orjson writes NaN/Infinity as ``null``, so they could hide there), goes through
    :func:`dumps_stdlib`, which refuses them.

    Raises:
        JsonInvalidError: NaN/Infinity, a lone surrogate, a non-string key that is not
            a ``str``/``int``/``float``/``bool``/``None``, a type JSON has no form for,
            or nesting deeper than :data:`MAX_DEPTH`.
    """
    from agc._core.orjson_loader import orjson  # noqa: PLC0415 - readers never load it (see orjson_options)

    try:
        data: bytes = orjson.dumps(value, default=not_native, option=orjson_options())
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return dumps_stdlib(value)
    if b"null" in data:
        # orjson took it: every key is a str and nesting is at most 254 deep.
        return dumps_stdlib(value, checked=True)
    return data


# Where orjson and the standard library spell a float differently, orjson's spelling
# is a decimal with four zeros after the point (``0.00001``: 1e-5 <= |x| < 1e-4, which
# the standard library writes ``1e-05``) or a one-digit negative exponent (``1e-7``,
# the standard library ``1e-07``). Every other value both write the same (a property
# test checks both claims).
_DIGITS: Final = frozenset(b"0123456789")


def stable_spelling(data: bytes) -> bool:
    """True when orjson's bytes ``data`` hold no float that the standard library would
    spell differently, so that ``json.dumps`` (compact, raw UTF-8) gives the same bytes
    for the same value. False may be a false alarm (``"1e-5"`` inside a string).

    The two markers are found with ``bytes.find`` (a C search) and only their few
    occurrences are looked at (a regular expression scanned every byte, slower).
    """
    digits, end = _DIGITS, len(data)
    at = data.find(b"e-")
    while at != -1:
        # <digit>e-<digit>, and no digit after that one: a one-digit exponent.
        if (
            at
            and data[at - 1] in digits
            and at + 2 < end
            and data[at + 2] in digits
            and (at + 3 == end or data[at + 3] not in digits)
        ):
            return False
        at = data.find(b"e-", at + 2)
    at = data.find(b".0000")
    while at != -1:
        if at and data[at - 1] in digits:  # <digit>.0000
            return False
        at = data.find(b".0000", at + 1)
    return True


class Canonical:
    """JSON text proven to be the writer's own spelling of its value.

    Made only by :func:`canonical`. The text is what :func:`dumps` writes for
    :attr:`value`, and what both of its paths (orjson and the standard library) write,
    so a writer may copy :attr:`data` instead of encoding the value again wherever the
    value stands in a record: the line is the same byte for byte.

    Attributes:
        data: the text (UTF-8, no newline).
        value: the parsed value (as :func:`loads` reads it).
        fragment: ``orjson.Fragment(data)``, which orjson copies as it is.
    """

    __slots__ = ("data", "fragment", "value")

    def __init__(self, data: bytes, value: Any, fragment: Any) -> None:
        self.data = data
        self.value = value
        self.fragment = fragment

    def __repr__(self) -> str:
        return f"Canonical({self.data[:60]!r}{'…' if len(self.data) > 60 else ''})"


# A record holding a member nested this deep is beyond what orjson writes (255 levels).
_ORJSON_MEMBER_DEPTH: Final = 254


def canonical(data: bytes) -> Canonical | None:
    """``data`` as a :class:`Canonical` when it is exactly :func:`dumps` of its own value
    under the rule (``dumps(loads(data)) == data``), else ``None``. Pure, never raises.

    Proof that the value is the rule's, from orjson alone: orjson refuses NaN,
    Infinity, numbers beyond a double, lone surrogates, invalid UTF-8 and a byte order
    mark, as :func:`loads` does, and its value written back is compared with ``data``
    byte for byte. The comparison fails for every text :func:`loads` would read
    otherwise or refuse: whitespace, escapes orjson does not write, other spellings of
    a number, an integer beyond 64 bits (orjson reads it as a float, written with a
    ``.`` or an exponent), a duplicate member (the value written back has one member
    fewer) and nesting deeper than 254 (orjson does not write it). Text with 254 or
    more opening brackets is never proven either: kept as a member of a record, it
    would let orjson write a record that, as a value, is one level too deep for it and
    written by the standard library (whose float spelling may differ). A float orjson
    spells unlike the standard library (:func:`stable_spelling`) is checked against the
    standard library's bytes too. ``None`` means only "not proven": read such text with
    :func:`loads`.
    """
    from agc._core.orjson_loader import orjson  # noqa: PLC0415 - see orjson_options

    if data.count(b"[") + data.count(b"{") >= _ORJSON_MEMBER_DEPTH:
        return None  # maybe nested too deep to be a member (see above): not proven
    try:
        value = orjson.loads(data)
        written = orjson.dumps(value, option=orjson_options())
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return None
    if written != data:
        return None
    if not stable_spelling(data):
        try:
            if dumps_stdlib(value, checked=True) != data:
                return None
        except JsonInvalidError:
            return None
    return Canonical(data, value, orjson.Fragment(data))


def _unwrap_canonical(value: Any) -> Any:
    """``json.dumps`` ``default=``: a :class:`Canonical` is written as its value."""
    if type(value) is Canonical:
        return value.value
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps_stdlib(value: Any, *, checked: bool = False) -> bytes:
    """:func:`dumps` by the standard library alone (the path for what orjson refuses).

    Args:
        value: the value.
        checked: the caller knows that every key is a ``str`` and that nesting is
            within :data:`MAX_DEPTH` (orjson took the value), so the walk is skipped.

    Raises:
        JsonInvalidError: as :func:`dumps`; also when two keys of one object would be
            written as the same name (``{1: …, "1": …}``).
    """
    if not checked:
        _check_tree(value, MAX_DEPTH, keys=True)
    try:
        text = json.dumps(
            value,
            ensure_ascii=False,
            allow_nan=False,
            separators=(",", ":"),
            default=_unwrap_canonical,
        )
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise JsonInvalidError(
            f"a string holds a lone surrogate ({exc.reason})", problem="surrogate"
        ) from exc
    except ValueError as exc:  # NaN or Infinity (allow_nan=False)
        raise JsonInvalidError(f"not JSON: {exc}", problem="constant") from exc
    except (TypeError, RecursionError) as exc:
        raise JsonInvalidError(f"not JSON: {exc}", problem="syntax") from exc


def loads_lines(lines: bytes | Iterable[bytes], build: Callable[[Any], T]) -> tuple[list[T], int]:
    """Parse a JSONL evidence file line by line; return ``(built records, unusable)``.

    Each non-empty line is parsed by :func:`loads` and handed to ``build``, which turns
    the value into a record or raises ``ValueError``, ``KeyError`` or ``TypeError``
    when its shape is wrong. A line that is not strict JSON or that ``build`` refuses
    counts as unusable and is skipped: a torn last line (a crash while appending) or a
    damaged line never makes the other lines unreadable, and the caller reports the
    count. Empty lines are ignored.

    Args:
        lines: the file's bytes, or an iterable of lines (a binary file object: read as
            it is iterated, so a large file is never held whole); each line may keep
            its ``\\n``.
        build: turns one parsed value into a record.
    """
    if isinstance(lines, bytes | bytearray | memoryview):
        lines = bytes(lines).split(b"\n")
    built: list[T] = []
    unusable = 0
    for line in lines:
        text = line[:-1] if line.endswith(b"\n") else line
        if not text:
            continue
        try:
            built.append(build(loads(text)))
        except (ValueError, KeyError, TypeError):  # JsonInvalidError is a ValueError
            unusable += 1
    return built, unusable
