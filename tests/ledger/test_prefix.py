"""Tests for agc.ledger._prefix: the beginning of a cut JSON text, read as far as it is
whole."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agc.ledger._prefix import loads_prefix
from tests.conftest import examples

REACHES_INSIDE = {"agc.ledger._prefix": "the reader of a cut JSON text, on its own"}

_TEXT = st.lists(
    st.one_of(st.sampled_from(['"', "\\", "\n", "\u00e9", "\U0001f600", "{", "]", ",", ":"]),
              st.characters(codec="utf-8")),
    max_size=12,
).map("".join)  # fmt: skip
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


def _consistent(got: Any, whole: Any, path: tuple[str | int, ...], *, open_: bool) -> bool:
    """``got`` is what a beginning of ``whole``'s text holds: equal off the open path;
    on it, a string is a beginning, a list or object holds a first part of the members
    and elements (each equal but the one the path goes on in)."""
    if not open_:
        return bool(got == whole and type(got) is type(whole))
    if isinstance(whole, str):
        return isinstance(got, str) and whole.startswith(got) and not path
    if isinstance(whole, list):
        if not isinstance(got, list) or len(got) > len(whole):
            return False
        last = path[0] if path else None
        if last is not None and last != len(got) - 1:
            return False
        return all(
            _consistent(g, w, path[1:], open_=i == last)
            for i, (g, w) in enumerate(zip(got, whole, strict=False))
        )
    if isinstance(whole, dict):
        if not isinstance(got, dict) or list(got) != list(whole)[: len(got)]:
            return False
        last = path[0] if path else None
        if last is not None and last != list(got)[-1]:
            return False
        return all(_consistent(got[k], whole[k], path[1:], open_=k == last) for k in got)
    return False  # a number or literal is never open: one the cut fell in is left out


@settings(max_examples=examples(500))
@given(value=_JSON, ascii_only=st.booleans(), spaced=st.booleans(), data=st.data())
@example(value={"cmd": "cat a", "n": 12}, ascii_only=True, spaced=False, data=None)
def test_every_beginning_is_read_as_far_as_it_is_whole(
    value: Any, ascii_only: bool, spaced: bool, data: st.DataObject | None
) -> None:
    """Cut anywhere (inside an escape, a surrogate pair's escapes, a name, a number):
    what is read is equal to the whole off the open path and a beginning on it; the
    whole text is read whole."""
    separators = (", ", ": ") if spaced else (",", ":")
    text = json.dumps(value, ensure_ascii=ascii_only, separators=separators)
    ends = (
        range(len(text) + 1)
        if data is None
        else [data.draw(st.integers(0, len(text)), label="end") for _ in range(8)]
    )
    for end in ends:
        found = loads_prefix(text[:end])
        if found is None:
            # nothing whole: a top value that is a number/literal, or no text at all
            assert not isinstance(value, list | dict | str) or text[:end].strip() == ""
            continue
        assert _consistent(found.value, value, found.open_path, open_=end < len(text)), (
            text[:end],
            found,
        )
    if isinstance(value, list | dict | str):  # a number at the end may have lost digits
        whole = loads_prefix(text)
        assert whole is not None
        assert whole.value == value


@pytest.mark.parametrize(
    ("text", "value", "path"),
    [
        ('{"cmd":"cat README.md","workdir":"/wo', {"cmd": "cat README.md", "workdir": "/wo"},
         ("workdir",)),
        ('{"command":["bash","-lc","cat a\\nb\\u00', {"command": ["bash", "-lc", "cat a\nb"]},
         ("command", 2)),
        ('{"command":["bash","-lc"', {"command": ["bash", "-lc"]}, ("command",)),
        ('{"a":1,"timeout":12', {"a": 1}, ()),  # 12 may be the start of 1200
        ('{"a":1,"na', {"a": 1}, ()),  # a cut name: its member is left out
        ('{"a":tr', {}, ()),
        ('{"a":"x\\', {"a": "x"}, ("a",)),  # an escape split by the cut
    ],
)  # fmt: skip
def test_known_cuts(text: str, value: object, path: tuple[str | int, ...]) -> None:
    found = loads_prefix(text)
    assert found is not None
    assert (found.value, found.open_path) == (value, path)


@given(st.text(max_size=200))
def test_any_text_is_read_without_error(text: str) -> None:
    found = loads_prefix(text)
    assert found is None or isinstance(found.open_path, tuple)


def test_a_duplicate_member_is_refused_as_the_strict_reader_refuses_it() -> None:
    assert loads_prefix('{"a":1,"a":2,"b":"x') is None
