"""Reading a long JSON-array history without holding its parsed records.

Parsed JSON takes several times the bytes of its text in Python objects (a dict per
message and per tool call, a string per value), and orjson's parse of one large
document peaks higher still. A history read here keeps the file's text and, per
record, only its place in it; the neutral view keeps what validation and repair use
(roles, kinds, call ids, tool names, arguments), and every ``raw`` is a
:class:`~agc.resume._formats.model.RawRef` parsed again when read (by a writer, for the
few records a repair changes, or by the element-wise dump of the output).

The records are read one at a time with the standard library's scanner and held to agc's
JSON rule (RFC 8259 and I-JSON, RFC 7493, as :func:`agc._core.json.loads` with lone
surrogates allowed) element by element: NaN/Infinity and numbers beyond a double are
refused by the scanner's hooks; a duplicate member is excluded by counting colons (in
JSON a colon is a member separator or part of a string, and orjson writes the parsed
value back with one separator per member kept and each string's colons raw, so, when
no colon is spelt ``\\u003a``, the counts agree exactly when no member was dropped);
anything orjson cannot write back is read by the strict reader; nesting is limited as
in the whole document. Whatever is not proven this way, and any error, gives ``None``:
the caller then reads the file as before, so an invalid file gets the same error.
"""

from __future__ import annotations

import codecs
import json
import math
import re
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, overload

from agc._core import json as strict_json
from agc.errors import HistoryFormatError, JsonInvalidError
from agc.resume._formats.model import Message, RawRef

__all__ = ["LEAN_MIN_BYTES", "SpanRecords", "read_lean", "scan_array"]

LEAN_MIN_BYTES: Final = 1024 * 1024
"""Smaller files are parsed whole (the saving is small, the whole parse faster)."""

_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")


class _NotProvenError(Exception):
    """The lean read cannot prove it reads what the strict reader reads."""


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NotProvenError(text)
    return value


def _refuse_constant(name: str) -> Any:
    raise _NotProvenError(name)


# No object_pairs_hook: the scanner builds dicts in C (duplicates are excluded after).
_SCAN: Final[Callable[[str, int], tuple[Any, int]]] = json.JSONDecoder(
    parse_float=_finite_float, parse_constant=_refuse_constant
).scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__ (the C scanner)


def _element(element: str, value: Any, orjson: Any) -> Any:
    """``value`` (scanned from ``element``) when it is provably the strict reader's value
    of that element inside the array, else raise :class:`_NotProvenError`."""
    if element.count("[") + element.count("{") >= strict_json.MAX_DEPTH and (
        strict_json.exceeds_depth(value, strict_json.MAX_DEPTH - 1)
    ):
        raise _NotProvenError("depth")  # the array adds one level
    if "\\u003" not in element or ("\\u003a" not in element and "\\u003A" not in element):
        try:
            written = orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass  # a lone surrogate, an integer beyond 64 bits, 255+ levels: strict reader
        else:
            if written.count(b":") == element.count(":"):
                return value
    try:
        return strict_json.loads(element, allow_lone_surrogates=True)
    except JsonInvalidError as exc:
        raise _NotProvenError(str(exc)) from exc


_WINDOW: Final = 1024 * 1024


class _Window:
    """A decoded piece of the file: ``text`` is ``data[start:end]`` as text (``end`` on a
    character boundary), so the whole file is never held as one ``str``."""

    __slots__ = ("_byte", "_char", "ascii", "end", "final", "start", "text")

    def __init__(self, data: bytes, start: int, size: int) -> None:
        end = min(len(data), start + size)
        while end < len(data) and data[end] & 0xC0 == 0x80:  # inside a UTF-8 sequence
            end -= 1
        self.start = start
        self.end = end
        self.final = end == len(data)
        self.text = data[start:end].decode("utf-8")  # valid: the caller decoded it all
        self.ascii = self.text.isascii()
        self._char = 0
        self._byte = 0

    def byte_at(self, index: int) -> int:
        """Byte offset in the file of character ``index`` of :attr:`text` (asked in
        increasing order, so each character is encoded once)."""
        if self.ascii:
            return self.start + index
        if index < self._char:
            self._char = self._byte = 0
        self._byte += len(self.text[self._char : index].encode("utf-8"))
        self._char = index
        return self.start + self._byte


def _next(data: bytes, window: _Window, index: int, size: int) -> tuple[_Window, int]:
    """The window and index of the next character that is not whitespace.

    Raises:
        _NotProvenError: the file ends first.
    """
    while True:
        index = _skip(window.text, index)
        if index < len(window.text):
            return window, index
        if window.final:
            raise _NotProvenError("the array is not closed")
        window = _Window(data, window.byte_at(index), size)
        index = 0


def scan_array(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """``(start, end, value)`` of each element of the JSON array ``data`` (UTF-8 bytes
    that decode), offsets in bytes.

    Raises:
        _NotProvenError: ``data`` is not one JSON array under the rule, or a part of it is
            not provably read as the strict reader reads it.
    """
    from agc._core.orjson_loader import orjson  # noqa: PLC0415 - a long array's only

    size = _WINDOW
    window, index = _next(data, _Window(data, 0, size), 0, size)
    if window.text[index] != "[":
        raise _NotProvenError("not an array")
    window, index = _next(data, window, index + 1, size)
    if window.text[index] == "]":
        index += 1
    else:
        while True:
            text = window.text
            try:
                value, end = _SCAN(text, index)
            except (ValueError, StopIteration) as exc:
                if window.final:
                    raise _NotProvenError("element") from exc
                value, end = None, len(text)  # cut by the window's end: read it again
            except RecursionError as exc:
                raise _NotProvenError("depth") from exc
            if end >= len(text) and not window.final:
                # The element did not fit (a number may also go on past the window).
                at = window.byte_at(index)
                size = max(size, 2 * (window.end - at))  # the element did not fit
                window, index = _Window(data, at, size), 0
                continue
            element = text[index:end]
            start = window.byte_at(index)
            yield start, window.byte_at(end), _element(element, value, orjson)
            window, index = _next(data, window, end, size)
            separator = window.text[index]
            if separator == "]":
                index += 1
                break
            if separator != ",":
                raise _NotProvenError("separator")
            window, index = _next(data, window, index + 1, size)
    if data[window.byte_at(index) :].strip(b" \t\r\n"):
        raise _NotProvenError("trailing data")


def _skip(text: str, index: int) -> int:
    return _WHITESPACE.match(text, index).end()  # type: ignore[union-attr]


class SpanRecords(Sequence[Any]):
    """A JSON array's records as places in its text; each read parses its record again
    (already proven by :func:`scan_array`: the scanner gives the same value again)."""

    __slots__ = ("_ends", "_starts", "_text")

    def __init__(self, data: bytes, starts: array[int], ends: array[int]) -> None:
        self._text = data  # the caller's bytes: no copy
        self._starts = starts
        self._ends = ends

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        element = self._text[self._starts[index] : self._ends[index]].decode("utf-8")
        value, _ = _SCAN(element, 0)
        return value


def _detach(
    message: Message,
    record: Any,
    records: SpanRecords,
    index: int,
    paths: dict[tuple[str | int, ...], tuple[str | int, ...]],
) -> None:
    """Replace the message's and its blocks' ``raw`` (the record or a part of it) by a
    :class:`RawRef`, so that the record itself can be freed; share what repeats."""
    whole = RawRef(records, index, ())
    message.role = sys.intern(message.role)
    if message.native() is record:
        message.raw = whole
    for block in message.blocks:
        path = _path_in(record, block.native())
        if path is not None:
            block.raw = whole if not path else RawRef(records, index, paths.setdefault(path, path))
        if type(block.name) is str:
            block.name = sys.intern(block.name)
        if type(block.call_id) is str:  # a call's id and its result's: one string
            block.call_id = sys.intern(block.call_id)


def _path_in(record: Any, part: Any) -> tuple[str | int, ...] | None:
    """Keys (and one list position) from ``record`` to ``part``, by identity, else None."""
    if part is record:
        return ()
    if not isinstance(record, dict):
        return None
    for key, value in record.items():
        if value is part:
            return (key,)
        if isinstance(value, list):
            for position, item in enumerate(value):
                if item is part:
                    return (key, position)
    return None


def read_lean(
    data: bytes,
    read_one: Callable[[Any, int], Message] | None,
    detector: Any = None,
) -> tuple[list[Message] | None, SpanRecords] | None:
    """Read the JSON array ``data`` record by record.

    Args:
        data: the file's bytes.
        read_one: the format's reader of one record (``None``: only ``detector`` runs).
        detector: an object whose ``feed(record)`` sees every record that is a dict.

    Returns:
        ``(messages, records)``; ``messages`` is ``None`` when ``read_one`` refused a
        record (``HistoryFormatError``: the caller reads the file whole for the error).
        ``None`` when the file must be read whole (not proven or not valid JSON).
    """
    if data.startswith(b"\xef\xbb\xbf"):
        return None
    try:
        codecs.decode(data, "utf-8")  # valid UTF-8, checked without keeping the text
    except UnicodeDecodeError:
        return None
    starts: array[int] = array("q")
    ends: array[int] = array("q")
    records = SpanRecords(data, starts, ends)
    messages: list[Message] | None = [] if read_one is not None else None
    paths: dict[tuple[str | int, ...], tuple[str | int, ...]] = {}  # one tuple per path
    try:
        for start, end, value in scan_array(data):
            index = len(starts)
            starts.append(start)
            ends.append(end)
            if detector is not None and isinstance(value, dict):
                detector.feed(value)
            if messages is not None and read_one is not None:
                try:
                    message = read_one(value, index)
                except HistoryFormatError:
                    messages = None
                    continue
                _detach(message, value, records, index, paths)
                messages.append(message)
    except _NotProvenError:
        return None
    return messages, records
