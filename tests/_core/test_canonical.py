"""canonical_json: byte-identical to the reference ``rfc8785.dumps`` for every value."""

from __future__ import annotations

import sys
from typing import Any

import orjson
import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc._core.canonical import canonical_json
from tests.conftest import examples

_LIMIT = 2**53 - 1

# Every code point, lone surrogates included (they have no canonical form).
_ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
# Characters where the orderings and the escapes differ: controls, the quote and the
# backslash, DEL, U+2028/9, the top of the BMP (U+E000-U+FFFF) and beyond it.
_TRICKY_CHAR = st.sampled_from(
    ["\x00", "\x1f", "\x7f", '"', "\\", "/", "\b", "\f", "\n", "\r", "\t", "a", "\u00e9",
     "\u2028", "\u2029", "\ud7ff", "\ue000", "\uffff", "\U00010000", "\U0001f600",
     "\U0010ffff"]
)  # fmt: skip
_TEXT = st.text(st.one_of(_ANY_CHAR, _TRICKY_CHAR), max_size=12)
_SURROGATE_FREE = st.text(
    st.one_of(
        st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=["Cs"]),
        _TRICKY_CHAR,
    ),
    max_size=12,
)
_INTEGERS = st.one_of(
    st.integers(min_value=-_LIMIT, max_value=_LIMIT),
    st.sampled_from([_LIMIT, -_LIMIT, _LIMIT + 1, -_LIMIT - 1, 2**63, -(2**64), 0]),
    st.integers(),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    _INTEGERS,
    st.floats(allow_nan=True, allow_infinity=True),
    _TEXT,
    _SURROGATE_FREE,
)


def _values(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        _SCALARS,
        lambda children: st.one_of(
            st.lists(children, max_size=5),
            st.tuples(children, children),
            st.dictionaries(keys, children, max_size=6),
        ),
        max_leaves=30,
    )


def _outcome(fn: Any, value: Any) -> tuple[str, bytes | str]:
    try:
        return "ok", fn(value)
    except Exception as exc:  # the differential compares failures too
        return "error", type(exc).__name__


def _assert_same(value: Any) -> None:
    reference = _outcome(rfc8785.dumps, value)
    assert _outcome(lambda v: canonical_json(v, encoder="orjson"), value) == reference
    assert _outcome(lambda v: canonical_json(v, encoder="stdlib"), value) == reference


@settings(max_examples=examples(1500), suppress_health_check=[HealthCheck.too_slow])
@given(_values(st.one_of(_TEXT, _SURROGATE_FREE)))
def test_any_json_value_is_the_reference_bytes(value: Any) -> None:
    _assert_same(value)


@settings(max_examples=examples(800))
@given(_values(st.text(_TRICKY_CHAR, max_size=4)))
def test_keys_of_every_plane_sort_as_the_reference(value: Any) -> None:
    # Keys drawn from the characters where UTF-16 and code-point order disagree.
    _assert_same(value)


@settings(max_examples=examples(500))
@given(st.dictionaries(_SURROGATE_FREE, _SURROGATE_FREE, max_size=8))
def test_orjson_path_is_the_reference_bytes(value: dict[str, str]) -> None:
    # Surrogate-free strings only: the result is the bytes, never an error.
    assert canonical_json(value, encoder="orjson") == rfc8785.dumps(value)
    assert canonical_json(value, encoder="stdlib") == rfc8785.dumps(value)


def test_keys_sort_by_utf16_code_units_not_code_points() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16, before U+E000; by code point
    # (orjson's order) it comes after.
    value: dict[str, Any] = {"\ue000": 1, "\U0001f600": 2, "a": {"\uffff": 3, "\U00010000": 4}}
    expected = rfc8785.dumps(value)
    assert expected.index("\U0001f600".encode()) < expected.index("\ue000".encode())
    assert orjson.dumps(value, option=orjson.OPT_SORT_KEYS) != expected  # the case is real
    assert canonical_json(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"b": 1, "a": [True, None, "é\n"]}, b'{"a":[true,null,"\xc3\xa9\\n"],"b":1}'),
        ({"n": 2**53 - 1, "m": -(2**53 - 1)}, b'{"m":-9007199254740991,"n":9007199254740991}'),
        ({"f": 1.0, "g": 1e21, "h": 5e-7}, b'{"f":1,"g":1e+21,"h":5e-7}'),
        ("\x7f\u2028\x1f", b'"\x7f\xe2\x80\xa8\\u001f"'),
    ],
)
def test_known_canonical_forms(value: Any, expected: bytes) -> None:
    assert canonical_json(value) == expected == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "value",
    [2**53, -(2**53), float("nan"), float("inf"), "\ud800", {1: "x"}, {"a": object()}, b"x"],
)
def test_no_canonical_form_raises_as_the_reference(value: Any) -> None:
    with pytest.raises(rfc8785.CanonicalizationError):
        rfc8785.dumps(value)
    with pytest.raises(rfc8785.CanonicalizationError):
        canonical_json(value)


def test_a_manifest_needs_no_rfc8785(monkeypatch: pytest.MonkeyPatch) -> None:
    # The values agc writes take the orjson path: rfc8785 is not even imported.
    monkeypatch.setitem(sys.modules, "rfc8785", None)
    document = {
        "schema_version": 1,
        "run_id": "run-1",
        "closed": True,
        "artifacts": {
            "transcript": {
                "file": "run-1.jsonl",
                "algorithm": "blake3",
                "digest": "ab" * 32,
                "bytes": 1234,
                "records": 4,
                "last_seq": 3,
                "sealed_at_ms": 1764547200000,
                "closed": True,
                "segments": [],
                "recovered": False,
            }
        },
        "chain": {"position": 7, "prev": "cd" * 32},
        "attributes": {"ticket": "ÄBC-1 \U0001f600", "n": -5},
    }
    assert canonical_json(document).startswith(b'{"artifacts":')
    with pytest.raises(ImportError):
        canonical_json({"x": 1.5})  # a float: the reference, which is now unavailable
