"""The JSON reader of transcript lines (``agc._core.json.line_reader``) reads every
line as ``loads`` does: the same values, the same refusals (duplicate members, NaN and
Infinity, numbers beyond a double, integers beyond 64 bits, lone surrogates, a ``\\u003a``
colon, whitespace of every kind and place, invalid UTF-8, a byte order mark)."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.json import JsonInvalidError, line_reader, loads
from tests.conftest import examples

READ = line_reader()

_keys = st.sampled_from(["a", "b", "id", "type", "é", ":", "a:b", "\\u003a"])
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64, 10**19]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["\ud800", "a\udfffb", "x:y", "1e-5", "\u2028"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(st.tuples(_keys, inner), max_size=4),  # pairs: a name may repeat
    ),
    max_leaves=12,
)


def _write(value: Any, space: str, rng: st.DataObject) -> str:
    """JSON text of ``value`` (pairs written as an object, keeping repeated names), with
    ``space`` between tokens, floats and strings spelled as the draw says."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        members = [
            f"{_write(k, space, rng)}{space}:{space}{_write(v, space, rng)}" for k, v in value
        ]
        return "{" + space + f"{space},{space}".join(members) + space + "}"
    if isinstance(value, list):
        return "[" + f"{space},{space}".join(_write(v, space, rng) for v in value) + "]"
    if isinstance(value, float):
        return rng.draw(st.sampled_from([repr(value), f"{value:.25e}", f"{value:.20f}"]))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=rng.draw(st.booleans()))
    return json.dumps(value)


_specials = st.sampled_from(
    [
        b"NaN",
        b"[Infinity]",
        b'{"a": -Infinity}',
        b"1e400",
        b"-1e400",
        b'{"a":1,"a":1}',
        b'{"a": 1, "a": 1}',
        b'{"a b": 1, "ab": 2, "a b": 3}',
        b'{"n": 18446744073709551616, "m": [1, 2.50, 1E5, -0]}',
        b'{"a\\u003a":1,"a:":1}',
        b'{"x":"\\u003a"}',
        b"\xef\xbb\xbf{}",
        b'{"a": "\xff"}',
        b'"\\ud800"',
        b'"\\udc00\\ud800"',
        b"123456789012345678901234567890",
        b"-9223372036854775809",
        b"0.1234567890123456789012",
        b"  {}  ",
        b"\t[1,\r\n2]\r",
        b"",
        b"   ",
        b"{",
        b"[1,]",
        b"01",
        b"[" * 600 + b"]" * 600,
    ]
)


def _same(line: bytes) -> None:
    """The line reader, ``loads(many=True)`` (orjson's path, then the standard library)
    and ``loads`` (the standard library's parser, the rule itself) agree."""
    rule = _outcome(lambda d: loads(d, allow_lone_surrogates=True), line)
    assert _outcome(READ, line) == rule
    assert _outcome(lambda d: loads(d, allow_lone_surrogates=True, many=True), line) == rule


def _outcome(read: Any, data: bytes) -> tuple[str, Any]:
    try:
        value = read(data)
    except JsonInvalidError as exc:
        return "refused", exc.problem
    return "read", json.dumps(value, sort_keys=False, default=str, allow_nan=True) + repr(
        _types(value)
    )


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return type(value).__name__, value


@settings(max_examples=examples(2000, least=200), deadline=None)
@given(value=_values, space=st.sampled_from(["", " ", "\t", "\n ", "\r"]), data=st.data())
def test_a_line_reads_as_loads_reads_it(value: Any, space: str, data: st.DataObject) -> None:
    line = _write(value, space, data).encode("utf-8", "surrogatepass")
    _same(line)


@settings(max_examples=examples(200, least=50), deadline=None)
@given(line=_specials)
def test_an_odd_line_reads_as_loads_reads_it(line: bytes) -> None:
    _same(line)
