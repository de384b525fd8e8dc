"""The beginning of a JSON text whose end was cut off, read as far as it is whole.

A tool call's ``arguments`` is a JSON object encoded in a string. On an event line too
long to decode whole, that string is cut (:mod:`agc.ledger._lines`), and the object's
text then stops anywhere: inside a string, after a key, in a number. :func:`loads_prefix`
reads what the cut left: every member and element that is whole, plus the string the cut
fell in (its beginning, as far as its escapes are whole), and says which values are
incomplete. Nothing is guessed: the text is closed where it stopped (RFC 8259 grammar)
and read by the ledger's strict event reader.
"""

from __future__ import annotations

import re
from typing import Any, Final, NamedTuple

from agc.errors import JsonInvalidError
from agc.ledger._fastjson import loads_event_text

__all__ = ["CutValue", "loads_prefix"]

_SPACE: Final = re.compile(r"[ \t\r\n]*+")
_STRING: Final = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)
_WHOLE_ESCAPES: Final = re.compile(r"(?:[^\\]++|\\u[0-9a-fA-F]{4}|\\[^u])*+", re.DOTALL)
_HIGH_SURROGATE: Final = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}")
_LITERAL: Final = re.compile(r'[^ \t\r\n{}\[\]:,"]++')


class CutValue(NamedTuple):
    """What the beginning of a cut JSON text holds.

    Attributes:
        value: the whole members and elements, and the beginning of the string the
            cut fell in (closed where the cut was).
        open_path: the member names and element indexes from the top value down to the
            innermost value the cut fell in; each value on that path is incomplete
            (``()``: the top value itself). A value off the path is whole.
    """

    value: Any
    open_path: tuple[str | int, ...]


class _Open:
    """A container being read: its closing bracket, its place in its parent, what
    comes next (``key``, ``colon``, ``value``, ``comma``) and the current member name
    or element index."""

    __slots__ = ("close", "expect", "member", "place")

    def __init__(self, close: str, place: str | int | None) -> None:
        self.close = close
        self.place = place
        self.expect = "key" if close == "}" else "value"
        self.member: str | int = -1 if close == "]" else ""


def loads_prefix(text: str) -> CutValue | None:
    """Read the beginning ``text`` of a JSON text whose end is missing.

    The value is the text closed at the last point where it was whole (after a whole
    member or element, or inside the string value the cut fell in, before an escape
    the cut split), read by :func:`agc.ledger._fastjson.loads_event_text`. A member
    whose name was cut, a member without its value and a number or literal that may
    have lost characters (``12`` of ``1234``) are left out. A text holding a whole
    value is read as that value (then ``open_path`` is ``()`` too).

    Args:
        text: the beginning of a JSON text (linear time in its length).

    Returns:
        The :class:`CutValue`, or ``None`` when no beginning of a value is whole or
        what is whole is refused by the strict reader (not JSON, a duplicate member
        name, a number beyond a double).
    """
    stack: list[_Open] = []
    # the last point where the text may be closed: (end, closing brackets, open path)
    safe: tuple[int, str, tuple[str | int, ...]] | None = None
    n = len(text)
    pos = _skip_space(text, 0)
    while pos < n:
        top = stack[-1] if stack else None
        char = text[pos]
        end = pos + 1
        if (top is None or top.expect == "value") and char not in "]}":
            if top is not None and top.close == "]":
                top.member = int(top.member) + 1
            place = None if top is None else top.member
            if char == '"':
                end = _match_end(_STRING, text, end)
                if end >= n or text[end] != '"':  # the cut fell in it: whole escapes kept
                    whole = _whole_string_end(text, pos + 1)
                    path = _path(stack) if place is None else (*_path(stack), place)
                    return _read(text[:whole] + '"' + _closers(stack), path)
                end += 1
            elif char in "{[":
                stack.append(_Open("}" if char == "{" else "]", place))
            else:
                end = _match_end(_LITERAL, text, pos)
                if end >= n:
                    break  # a number or literal the cut may have shortened
            if char not in "{[" and top is not None:
                top.expect = "comma"
            safe = (end, _closers(stack), _path(stack))
        elif top is None:
            return None  # after the top value: not one JSON value
        elif char == '"' and top.expect == "key":
            end = _match_end(_STRING, text, end)
            if end >= n or text[end] != '"':
                break  # a member name the cut fell in: the member is left out
            end += 1
            name = _read(text[pos:end], ())
            top.member = name.value if name is not None and isinstance(name.value, str) else ""
            top.expect = "colon"
        elif char == top.close:
            stack.pop()
            if stack:
                stack[-1].expect = "comma"
            safe = (end, _closers(stack), _path(stack))
        elif char == ":" and top.expect == "colon":
            top.expect = "value"
        elif char == "," and top.expect == "comma":
            top.expect = "key" if top.close == "}" else "value"
        else:
            return None
        if not stack:
            break  # the top value is whole
        pos = _skip_space(text, end)
    if safe is None:
        return None
    stop, closers, path = safe
    return _read(text[:stop] + closers, path)


def _whole_string_end(text: str, start: int) -> int:
    """Where the content of a string cut short (from ``start``) ends its last whole
    character: before an escape the cut split, and before a high surrogate escape whose
    low half was cut off (RFC 8259, section 7)."""
    end = _match_end(_WHOLE_ESCAPES, text, start)
    last = end - 6
    if (
        last >= start
        and _HIGH_SURROGATE.fullmatch(text, last, end)
        and _WHOLE_ESCAPES.fullmatch(text, start, last)  # its backslash starts an escape
    ):
        return last
    return end


def _match_end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where ``pattern`` (one that matches the empty string too) stops from ``pos``."""
    found = pattern.match(text, pos)
    return pos if found is None else found.end()


def _skip_space(text: str, pos: int) -> int:
    return _match_end(_SPACE, text, pos)


def _closers(stack: list[_Open]) -> str:
    return "".join(item.close for item in reversed(stack))


def _path(stack: list[_Open]) -> tuple[str | int, ...]:
    return tuple(item.place for item in stack if item.place is not None)


def _read(closed: str, path: tuple[str | int, ...]) -> CutValue | None:
    try:
        return CutValue(loads_event_text(closed), path)
    except JsonInvalidError:
        return None
