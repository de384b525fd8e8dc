"""JSON values and the many ways to spell them, for differential tests of fast paths.

:func:`spell` writes one JSON text for a value, drawing each free choice: whitespace
around every token, a ``\\uXXXX`` escape (a surrogate pair beyond the BMP) or a short
escape for any character, ``\\/``, another spelling of a number (``1e2`` for
``100.0``, ``1.0E0``, ``-0.0``, ``100.00``, a leading ``-0``), and, when asked, a
duplicate member. The text written by :func:`spell` reads back as the value (except for
the duplicate member it was told to add), so a fast path and the reference path can be
compared on every spelling of every value.
"""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

import orjson
from hypothesis import strategies as st

__all__ = ["JSON_OBJECTS", "JSON_VALUES", "spell", "spellings"]

# Text without surrogates (category Cs): what UTF-8 can hold; some control characters,
# quotes, backslashes, slashes, U+2028 and astral characters on purpose.
_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"])
    | st.sampled_from(['"', "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "\u2028", "😀"]),
    max_size=10,
)
# Floats where orjson and the standard library spell differently are drawn on purpose
# (1e-5 <= |x| < 1e-4, one-digit negative exponents), and floats that look like ints.
_FLOATS = (
    st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(min_value=1e-10, max_value=1e-3)
    | st.sampled_from([0.0, -0.0, 1.0, 100.0, 1e16, 1e22, 1.5e-7, 2.5e-5, 1e-5, 5e-324])
)
_INTS = st.integers(min_value=-(2**63), max_value=2**64 - 1) | st.integers(
    min_value=-(2**80), max_value=2**80
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | _INTS | _FLOATS | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)
JSON_OBJECTS = st.dictionaries(_TEXT, JSON_VALUES, max_size=5)

_SHORT = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b"}
_SHORT |= {"\f": "\\f", "/": "\\/"}


def _space(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(["", "", "", " ", "\t", "\n ", "\r\n"]))


def _string(draw: st.DrawFn, text: str) -> str:
    out = ['"']
    for char in text:
        code = ord(char)
        choice = draw(st.integers(0, 5))
        if code < 0x20 or char in '"\\':
            # Must be escaped: a short escape where there is one, else \\u00XX.
            if choice < 3 and char in _SHORT:
                out.append(_SHORT[char])
            else:
                out.append(f"\\u{code:04x}" if choice % 2 else f"\\u{code:04X}")
        elif choice == 0 and code > 0xFFFF:
            high, low = divmod(code - 0x10000, 0x400)
            out.append(f"\\ud{0x800 + high:03x}\\ud{0xC00 + low:03x}")
        elif choice == 0:
            out.append(f"\\u{code:04x}")
        elif choice == 1 and char == "/":
            out.append("\\/")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _number(draw: st.DrawFn, value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        whole = int(value)
        sign = "-" if math.copysign(1, value) < 0 else ""
        return draw(
            st.sampled_from(
                [
                    repr(value),
                    f"{sign}{abs(whole)}.0",
                    f"{sign}{abs(whole)}.00",
                    f"{sign}{abs(whole)}e0",
                    f"{sign}{abs(whole)}E+0",
                    f"{sign}{abs(whole) * 10}e-1",
                ]
            )
        )
    text = json.dumps(value)
    return draw(st.sampled_from([text, text.upper(), text.replace("e", "e+").replace("+-", "-")]))


def spell(draw: st.DrawFn, value: Any, *, duplicate: bool = False) -> str:
    """One JSON text of ``value`` (see the module docstring); ``duplicate`` repeats a
    member of the outermost object (if it has one) with another value."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return _number(draw, value)
    if isinstance(value, str):
        return _string(draw, value)
    if isinstance(value, list):
        items = [_space(draw) + spell(draw, item) + _space(draw) for item in value]
        return "[" + ",".join(items) + "]" if items else "[" + _space(draw) + "]"
    members = [
        f"{_space(draw)}{_string(draw, key)}{_space(draw)}:{_space(draw)}"
        f"{spell(draw, item)}{_space(draw)}"
        for key, item in value.items()
    ]
    if duplicate and value:
        key = draw(st.sampled_from(sorted(value)))
        members.insert(draw(st.integers(0, len(members))), f"{_string(draw, key)}:1")
    return "{" + ",".join(members) + "}" if members else "{" + _space(draw) + "}"


@st.composite
def spellings(draw: st.DrawFn, values: st.SearchStrategy[Any] = JSON_OBJECTS) -> bytes:
    """A value's compact standard spelling or another of its spellings, as UTF-8."""
    value = draw(values)
    choice = draw(st.integers(0, 3))
    if choice == 0:
        # orjson's spelling (the fast path's case, unless a float or an integer beyond
        # 64 bits is in it).
        with contextlib.suppress(orjson.JSONEncodeError):
            encoded: bytes = orjson.dumps(value)
            return encoded
    if choice <= 1:
        # The standard library's compact spelling.
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return spell(draw, value, duplicate=draw(st.integers(0, 7)) == 0).encode("utf-8")
