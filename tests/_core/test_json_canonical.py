"""agc._core.json.canonical: JSON text kept as it is when it is the writer's spelling.

Differential: the reference is the rule itself (:func:`loads`, then :func:`dumps` and
:func:`dumps_stdlib`). Every text of every value, in every spelling that
``tests.spellings`` draws (whitespace, escapes, number forms, duplicate members, big
integers, surrogate pairs), is either refused by :func:`canonical` or is exactly what
both writer paths write for the value the strict reader reads from it.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.json import (
    Canonical,
    canonical,
    dumps,
    dumps_stdlib,
    exceeds_depth,
    loads,
    stable_spelling,
)
from agc.errors import JsonInvalidError
from tests.conftest import examples
from tests.spellings import JSON_OBJECTS, JSON_VALUES, spellings


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_float(item) for item in value)
    return False


def _fits_orjson(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


# -- what the writer relies on: where orjson and the standard library agree -----------


@given(JSON_VALUES)
@settings(max_examples=examples(400))
def test_orjson_and_the_standard_library_agree_where_stable_spelling_says_so(
    value: Any,
) -> None:
    try:
        data = orjson.dumps(value)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits: not orjson's case
        return
    stdlib = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if stable_spelling(data):
        assert stdlib == data
    if not _has_float(value):
        # Without floats they agree always (the writer then skips the "null" scan).
        assert stable_spelling(data)
        assert stdlib == data


@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=examples(2000))
def test_every_float_spelled_differently_is_flagged(value: float) -> None:
    data = orjson.dumps([value, {"x": -value}])
    stdlib = json.dumps([value, {"x": -value}], separators=(",", ":")).encode()
    assert stdlib == data or not stable_spelling(data)


@pytest.mark.parametrize("exponent", range(-330, 310))
def test_every_decade_of_floats_is_flagged_where_the_spellings_differ(exponent: int) -> None:
    for mantissa in ("1", "1.5", "9.999999999999999", "3.141592653589793", "2"):
        value = float(f"{mantissa}e{exponent}")
        if math.isinf(value):
            continue
        data = orjson.dumps(value)
        assert json.dumps(value).encode() == data or not stable_spelling(data), value


# -- canonical(): proven or refused, never wrong ----------------------------------------


@given(spellings())
@settings(max_examples=examples(600))
def test_canonical_text_is_what_both_writer_paths_write_for_its_value(raw: bytes) -> None:
    found = canonical(raw)
    try:
        value = loads(raw)
    except JsonInvalidError:
        # What the strict reader refuses (a duplicate member …) is never canonical.
        assert found is None
        return
    if found is None:
        return
    assert isinstance(found, Canonical)
    assert found.data == raw
    assert found.value == value
    assert json.dumps(found.value) == json.dumps(value)  # -0.0, key order, types
    assert dumps(value) == raw
    assert dumps_stdlib(value) == raw
    assert orjson.dumps(value) == raw


@given(JSON_OBJECTS)
@settings(max_examples=examples(300))
def test_the_writers_own_spelling_is_taken_when_it_holds_no_float(value: dict[str, Any]) -> None:
    if _has_float(value) or not _fits_orjson(value) or exceeds_depth(value, 254):
        return
    found = canonical(dumps(value))
    assert found is not None  # the fast path is not vacuous
    assert found.value == value


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":1,"a":1}',  # a duplicate member, same value
        b'{"a":{"b":1,"b":2}}',
        b'{"a":NaN}',
        b'{"a":1e400}',
        b'{"a":"\\ud800"}',  # a lone surrogate
        b'{"a":123456789012345678901234567890}',  # beyond 64 bits
        b'{"a":18446744073709551616}',  # 2**64
        b'{"a":1e2}',
        b'{"a":1.0E0}',
        b'{"a":-0}',
        b'{"a": 1}',
        b'{"a":"\\u0041"}',
        b'{"a":"\\/"}',
        b'{"a":"\\ud83d\\ude00"}',  # a surrogate pair: orjson writes the raw character
        b'{"a":1e-05}',  # the standard library's spelling of 1e-5
        b'{"a":0.00001}',  # orjson's: the standard library writes 1e-05
        b'{"a":1e-7}',
        b"\xef\xbb\xbf{}",
        b'{"a":"\xff"}',
        b"[" * 255 + b"]" * 255,
        b"",
        b"{}x",
    ],
)
def test_texts_the_rule_reads_otherwise_are_not_canonical(raw: bytes) -> None:
    assert canonical(raw) is None


@pytest.mark.parametrize(
    "raw",
    [b"{}", b'{"a":null}', b'{"a":[1,2.5,true,null]}', b'{"\xc3\xa9":"\\n\\u0000\xe2\x80\xa8"}'],
)
def test_canonical_texts(raw: bytes) -> None:
    found = canonical(raw)
    assert found is not None
    assert found.value == loads(raw)
    assert dumps(found.value) == raw


def test_a_canonical_is_written_by_the_standard_library_path_as_its_value() -> None:
    found = canonical(b'{"a":[1,null,"x"]}')
    assert found is not None
    assert dumps_stdlib({"k": found, "n": None}) == b'{"k":{"a":[1,null,"x"]},"n":null}'
    assert dumps({"k": [found]}) == b'{"k":[{"a":[1,null,"x"]}]}'


_REFERENCE_UNSTABLE = re.compile(rb"[0-9]e-[0-9](?![0-9])|[0-9]\.0000")


@given(st.binary(max_size=40) | st.text(alphabet='0159e-.0x"', max_size=40).map(str.encode))
@settings(max_examples=examples(1500))
def test_stable_spelling_finds_what_the_pattern_finds(data: bytes) -> None:
    """The find-loop is the regular expression it replaced."""
    assert stable_spelling(data) == (_REFERENCE_UNSTABLE.search(data) is None)
