"""agc._core.json: one rule for what is JSON, for every reader and writer.

The properties attack the classes, not cases: a duplicate member, a NaN/Infinity
literal or a lone surrogate placed *anywhere* in any document is refused; no byte
string makes the reader raise anything but ``JsonInvalidError``; what the writer
writes, the reader reads back equal.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core import json as strict_json
from agc._core.json import MAX_DEPTH, dumps, dumps_stdlib, exceeds_depth, loads, loads_lines
from agc.errors import JsonInvalidError
from tests.conftest import examples

# Text without surrogates (category Cs): what UTF-8 can hold.
_TEXT = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=25,
)


def _nest(depth: int, leaf: Any = 0) -> Any:
    value = leaf
    for index in range(depth):
        value = [value] if index % 2 else {"k": value}
    return value


def _objects(value: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


# -- the reader agrees with the standard library on strict JSON -----------------------


@given(JSON_VALUES)
def test_strict_json_reads_as_the_standard_library_reads_it(value: Any) -> None:
    data = json.dumps(value).encode()
    assert loads(data) == json.loads(data)
    assert loads(data.decode()) == json.loads(data)


@given(JSON_VALUES)
def test_what_dumps_writes_loads_reads_back_equal(value: Any) -> None:
    data = dumps(value)
    assert b"\n" not in data.replace(b"\\n", b"")
    assert loads(data) == value
    assert dumps_stdlib(value) == json.dumps(
        value, ensure_ascii=False, allow_nan=False, separators=(",", ":")
    ).encode("utf-8")


# -- the orjson fast path for large documents gives the same verdict ---------------------


def _variants(value: Any) -> list[bytes]:
    """The document and forms that the fast path must hand to the standard library."""
    text = json.dumps({"v": value, "w": value}, ensure_ascii=False)
    return [
        text.encode(),
        text.replace('"w":', '"v":', 1).encode(),  # a duplicate member
        text.replace('"w":', '"\\u0076":', 1).encode(),  # a duplicate spelled with \\u
        text.replace('"w":', '"\\u003a":', 1).encode(),  # a colon spelled \\u003a
        text.replace('"w":', '"w":18446744073709551616,"x":', 1).encode(),  # 2**64
        text.replace('"w":', '"w":"\\ud800","x":', 1).encode(),  # a lone surrogate
        text.replace('"w":', '"w":' + "[" * 300 + "]" * 300 + ',"x":', 1).encode(),
    ]


def _verdict(read: Any, data: bytes) -> tuple[str, Any]:
    try:
        return ("value", read(data))
    except JsonInvalidError as exc:
        return ("refused", exc.problem)


@settings(max_examples=examples(200))
@given(JSON_VALUES)
def test_the_fast_path_agrees_with_the_standard_library(value: Any) -> None:
    for data in _variants(value):
        fast = strict_json._loads_orjson(data)
        slow = _verdict(loads, data)  # small: the standard library's path
        if fast is not strict_json._NOT_TAKEN:
            assert slow == ("value", fast)
            assert json.dumps(fast) == json.dumps(slow[1])  # same types (int, not float)


@pytest.mark.parametrize(
    ("tail", "problem"),
    [
        (b',"a":1', "duplicate"),
        (b',"b":18446744073709551616', None),
        (b',"b":"\\ud800"', "surrogate"),
        (b',"b":NaN', "constant"),
        (b',"b":' + b"[" * 600 + b"]" * 600, "depth"),
        (b',"b":' + b"[" * 300 + b"]" * 300, None),
    ],
)
def test_a_large_document_gets_the_same_verdict_as_a_small_one(
    tail: bytes, problem: str | None
) -> None:
    padding = json.dumps("x" * (strict_json._FAST_PATH_BYTES + 10)).encode()
    for data in (b'{"a":' + padding + tail + b"}", b'{"a":"x"' + tail + b"}"):
        verdict = _verdict(loads, data)
        if problem is None:
            assert verdict[0] == "value"
        else:
            assert verdict == ("refused", problem)
    assert loads(b'{"a":' + padding + b',"b":18446744073709551616}')["b"] == 2**64
    # ... and a plain large document is read by orjson.
    assert strict_json._loads_orjson(b'{"a":' + padding + b"}") == {"a": json.loads(padding)}


# -- duplicate members: refused at any depth -----------------------------------------


@given(JSON_VALUES, st.data())
def test_a_duplicate_member_anywhere_is_refused(value: Any, data: st.DataObject) -> None:
    document = {"root": value}
    target = data.draw(st.sampled_from(_objects(document)))
    key = data.draw(st.sampled_from(sorted(target)) if target else _TEXT)
    target.setdefault(key, 1)
    marker = "\x00dup\x00"
    # Write the object with a placeholder member, then turn it into a second `key`.
    target[marker] = "forged"
    text = json.dumps(document)
    text = text.replace(json.dumps(marker), json.dumps(key), 1)
    with pytest.raises(JsonInvalidError) as info:
        loads(text.encode())
    assert info.value.problem == "duplicate"
    assert repr(key) in info.value.message


def test_a_manifest_like_document_with_two_artifacts_members_is_refused() -> None:
    forged_first = b'{"run_id": "r1", "artifacts": {"forged": 1}, "artifacts": {"real": 2}}'
    with pytest.raises(JsonInvalidError, match="duplicate key 'artifacts'"):
        loads(forged_first)


def test_equal_names_written_differently_are_one_name() -> None:
    # "\u0061" is "a": the member is named twice although the bytes differ.
    with pytest.raises(JsonInvalidError, match="duplicate"):
        loads(b'{"a": 1, "\\u0061": 2}')


# -- NaN, Infinity, numbers beyond a double ------------------------------------------


@given(JSON_VALUES, st.sampled_from(["NaN", "Infinity", "-Infinity"]), st.data())
def test_nan_and_infinity_anywhere_are_refused(
    value: Any, constant: str, data: st.DataObject
) -> None:
    marker = "\x00const\x00"
    document = [value]
    containers = [document, *_objects(document)]
    target = data.draw(st.sampled_from(containers))
    if isinstance(target, list):
        target.append(marker)
    else:
        target[marker + "k"] = marker
    text = json.dumps(document).replace(json.dumps(marker), constant)
    with pytest.raises(JsonInvalidError) as info:
        loads(text)
    assert info.value.problem == "constant"


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1E+309", "17976931348623159e292"])
def test_a_number_beyond_a_double_is_refused_not_read_as_infinity(number: str) -> None:
    with pytest.raises(JsonInvalidError) as info:
        loads(f'{{"x": {number}}}')
    assert info.value.problem == "number"


def test_large_integers_are_kept_exactly() -> None:
    # orjson would read this as a float; the rule keeps integers exact.
    assert loads(b"[123456789012345678901234567890]") == [123456789012345678901234567890]


def test_an_integer_beyond_the_digit_limit_is_refused_not_a_crash() -> None:
    with pytest.raises(JsonInvalidError):
        loads(b"1" * 5000)


# -- nesting ---------------------------------------------------------------------------


def test_nesting_up_to_max_depth_is_read_and_one_more_is_refused() -> None:
    assert loads(json.dumps(_nest(MAX_DEPTH))) == _nest(MAX_DEPTH)
    with pytest.raises(JsonInvalidError) as info:
        loads(json.dumps(_nest(MAX_DEPTH + 1)))
    assert info.value.problem == "depth"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 900, 5_000, 200_000])
@pytest.mark.parametrize("opener", [b"[", b'{"a":'])
def test_deep_nesting_is_refused_never_a_recursion_error(depth: int, opener: bytes) -> None:
    closer = b"]" if opener == b"[" else b"}"
    with pytest.raises(JsonInvalidError) as info:
        loads(opener * depth + b"0" + closer * depth)
    assert info.value.problem == "depth"


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = json.dumps({"s": "[" * 10_000 + "{" * 10_000})
    assert loads(text) == {"s": "[" * 10_000 + "{" * 10_000}


def test_exceeds_depth_measures_any_depth_without_recursion() -> None:
    deep: Any = 0
    for _ in range(100_000):
        deep = [deep]
    assert exceeds_depth(deep)
    assert not exceeds_depth(_nest(MAX_DEPTH))
    assert exceeds_depth(_nest(3), limit=2)
    assert not exceeds_depth("scalar", limit=0)


# -- lone surrogates -------------------------------------------------------------------


@pytest.mark.parametrize(
    "escape", ["\\ud800", "\\udbff", "\\udc00", "\\udfff", "\\ude00\\ud83d", "\\ud83dx"]
)
@pytest.mark.parametrize("where", ["value", "key"])
def test_a_lone_surrogate_is_refused_unless_allowed(escape: str, where: str) -> None:
    text = f'{{"{escape}": 1}}' if where == "key" else f'{{"k": "a{escape}b"}}'
    with pytest.raises(JsonInvalidError) as info:
        loads(text.encode())
    assert info.value.problem == "surrogate"
    kept = loads(text.encode(), allow_lone_surrogates=True)
    assert json.dumps(kept) == json.dumps(json.loads(text))


def test_a_surrogate_pair_escape_is_one_character() -> None:
    assert loads(b'"\\ud83d\\ude00"') == "\U0001f600"


def test_an_escaped_backslash_before_u_is_not_an_escape() -> None:
    assert loads(b'"\\\\ud800"') == "\\ud800"


def test_a_raw_surrogate_in_text_is_refused() -> None:
    with pytest.raises(JsonInvalidError) as info:
        loads('{"k": "\ud800"}')
    assert info.value.problem == "surrogate"


# -- bytes -----------------------------------------------------------------------------


def test_a_byte_order_mark_and_invalid_utf8_are_refused() -> None:
    with pytest.raises(JsonInvalidError) as bom:
        loads(b"\xef\xbb\xbf{}")
    assert bom.value.problem == "bom"
    with pytest.raises(JsonInvalidError) as bad:
        loads(b'{"a": "\xff"}')
    assert bad.value.problem == "not-utf8"
    assert "byte 7" in bad.value.message


def test_only_bytes_or_text_are_parsed() -> None:
    with pytest.raises(TypeError):
        loads(42)  # type: ignore[arg-type]


@settings(max_examples=examples(300))
@given(st.binary(max_size=200))
def test_no_bytes_make_the_reader_raise_anything_else(data: bytes) -> None:
    problem = None
    try:
        loads(data)
    except JsonInvalidError as exc:
        problem = exc.problem
    assert problem is None or problem in JsonInvalidError.PROBLEMS


@settings(max_examples=examples(300))
@given(st.text(alphabet='[]{}",:0\\ud8 aNIn-e', max_size=300))
def test_no_json_like_text_makes_the_reader_raise_anything_else(text: str) -> None:
    with contextlib.suppress(JsonInvalidError):
        loads(text)


def _read_with(data: bytes, **options: bool) -> tuple[str, Any]:
    try:
        value = loads(data, allow_lone_surrogates=True, **options)
    except JsonInvalidError as exc:
        return "error", str(exc)
    return "value", json.dumps(value)  # the same types too (an int is not a float)


@settings(max_examples=examples(500))
@given(
    st.one_of(
        JSON_VALUES.map(lambda value: json.dumps(value).encode()),
        st.text(alphabet='[]{}",:0123456789\\ud8 aNIn-e\u00e9', max_size=120).map(
            lambda text: text.encode("utf-8", "surrogatepass")
        ),
        st.binary(max_size=60),
    )
)
def test_many_small_documents_get_the_verdict_of_one(data: bytes) -> None:
    """``many=True`` (orjson's path at any size) reads every small document as the
    standard library's path does, and refuses it with the same message."""
    assert _read_with(data, many=True) == _read_with(data)


def test_an_unknown_problem_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown JSON problem"):
        JsonInvalidError("x", problem="nope")


# -- the writer ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"x": math.nan}, "constant"),
        ({"x": [1, {"y": -math.inf}]}, "constant"),
        ({"x": None, "y": math.inf}, "constant"),  # orjson writes both as null
        ({"x": "\ud800"}, "surrogate"),
        ({"\udc00": 1}, "surrogate"),
        ({1: "a", "1": "b"}, "duplicate"),  # the standard library writes "1" twice
        ({"n": {None: 1, "null": 2}}, "duplicate"),
        ({"x": _nest(MAX_DEPTH)}, "depth"),
        ({"x": {1, 2}}, "syntax"),
    ],
    ids=repr,
)
def test_dumps_refuses_what_loads_would_refuse(value: Any, problem: str) -> None:
    with pytest.raises(JsonInvalidError) as info:
        dumps(value)
    assert info.value.problem == problem


def test_dumps_is_compact_raw_utf8_and_keeps_exact_integers() -> None:
    assert (
        dumps({"a": "é ✓", "b": [None, 2**70]})
        == '{"a":"é ✓","b":[null,1180591620717411303424]}'.encode()
    )


def test_the_reader_never_loads_orjson() -> None:
    code = (
        "import sys\n"
        "from agc._core.json import loads\n"
        "loads(b'{\"a\": [1]}')\n"
        "print('orjson' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# -- JSONL evidence files ----------------------------------------------------------------


def _pair(raw: Any) -> tuple[int, int]:
    return (raw["a"], raw["b"])


def test_loads_lines_builds_good_lines_and_counts_the_rest() -> None:
    data = (
        b'{"a": 1, "b": 2}\n'
        b"\n"  # empty: ignored
        b'{"a": 1, "a": 3, "b": 2}\n'  # duplicate
        b'{"a": NaN, "b": 2}\n'  # not JSON
        b'{"a": 1}\n'  # build refuses (KeyError)
        b"[1]\n"  # build refuses (TypeError)
        b'{"a": 5, "b": 6}\n'
        b'{"a": 7, "b"'  # torn last line
    )
    assert loads_lines(data, _pair) == ([(1, 2), (5, 6)], 5)


def test_loads_lines_reads_a_file_object_as_it_iterates() -> None:
    handle = io.BytesIO(b'{"a": 1, "b": 2}\n{"a": 3, "b": 4}\n' + b"[" * 100_000 + b"\n")
    assert loads_lines(handle, _pair) == ([(1, 2), (3, 4)], 1)


def test_the_module_exports_its_names() -> None:
    assert set(strict_json.__all__) <= set(dir(strict_json))
