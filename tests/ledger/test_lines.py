"""Tests for agc.ledger._lines: a turn file's lines in bounded pieces."""

from __future__ import annotations

import io
import json
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agc.ledger import OverlongLine, _lines, event_lines
from agc.ledger._fastjson import loads_event
from agc.ledger._lines import MAX_READ_LINE_BYTES, iter_line_pieces
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.ledger._lines": "the line reader itself (pieces of over-long lines)",
    "agc.ledger._fastjson": "the ledger's strict event reader judges the cut copy",
}


@pytest.mark.parametrize("torn", [False, True], ids=["terminated", "torn-tail"])
def test_every_byte_comes_back_in_order_and_a_long_line_only_in_pieces(torn: bool) -> None:
    short = b'{"a":1}\n'
    long = b"x" * (3 * MAX_READ_LINE_BYTES) + b"\n"
    last = b'{"b":2}' + (b"" if torn else b"\n")
    pieces = list(iter_line_pieces(io.BytesIO(short + long + short + last)))
    assert b"".join(p.data for p in pieces) == short + long + short + last
    assert [p.data for p in pieces if p.whole] == [short, short, last]
    assert all(p.first for p in pieces if p.whole)
    parts = [p for p in pieces if not p.whole]
    assert [p.first for p in parts] == [True] + [False] * (len(parts) - 1)
    assert max(len(p.data) for p in parts) == MAX_READ_LINE_BYTES + 1


@pytest.mark.parametrize("extra", [0, 1], ids=["at-the-limit", "one-byte-over"])
def test_a_line_is_whole_up_to_the_read_limit(extra: int) -> None:
    line = b"y" * (MAX_READ_LINE_BYTES - 1 + extra) + b"\n"
    pieces = list(iter_line_pieces(io.BytesIO(line)))
    assert [p.whole for p in pieces] == ([True] if extra == 0 else [False])
    assert b"".join(p.data for p in pieces) == line


_SIZES = st.sampled_from(
    [0, 1, 7, MAX_READ_LINE_BYTES - 1, MAX_READ_LINE_BYTES, MAX_READ_LINE_BYTES + 1,
     2 * MAX_READ_LINE_BYTES + 3]
)  # fmt: skip


@settings(max_examples=examples(100), deadline=None)
@given(sizes=st.lists(_SIZES, min_size=1, max_size=5), torn=st.booleans())
def test_event_lines_give_short_lines_whole_and_long_ones_by_size(
    sizes: list[int], torn: bool
) -> None:
    """Each line of at most the limit (its newline included) comes back as its bytes;
    each longer one as an OverlongLine of its size; nothing else, in order."""
    lines = [b"z" * size + b"\n" for size in sizes]
    if torn:
        lines[-1] = lines[-1][:-1]
    lines = [line for line in lines if line]
    expected = [
        line if len(line) <= MAX_READ_LINE_BYTES else OverlongLine(len(line)) for line in lines
    ]
    assert list(event_lines(io.BytesIO(b"".join(lines)))) == expected


# -- the cut copy of an overlong line -------------------------------------------------

_TEXT = st.lists(
    st.one_of(
        st.sampled_from(['"', "\\", "\\\\", "/", "\n", "\u00e9", "\u20ac", "\U0001f600", "\ud83d"]),
        st.characters(codec="utf-8"),
    ),
    max_size=30,
).map("".join)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet="abc", max_size=1), inner, max_size=4)
    ),
    max_leaves=12,
)


_MARK = re.compile(r"\u2026sha256:[0-9a-f]{16}\Z")


def _prefix_of(cut: object, whole: object) -> bool:
    """``cut`` is ``whole`` with some strings (keys too) replaced by a prefix and the
    cut mark; a string is whole or cut, never changed otherwise."""
    if isinstance(whole, str):
        if not isinstance(cut, str):
            return False
        mark = _MARK.search(cut)
        return whole.startswith(cut[: mark.start()]) if mark else cut == whole
    if isinstance(whole, list):
        return (
            isinstance(cut, list)
            and len(cut) == len(whole)
            and all(_prefix_of(c, w) for c, w in zip(cut, whole, strict=True))
        )
    if isinstance(whole, dict):
        if not isinstance(cut, dict) or len(cut) != len(whole):
            return False  # two keys cut alike would have merged
        return all(
            any(_prefix_of(k, key) and _prefix_of(v, value) for k, v in cut.items())
            for key, value in whole.items()
        )
    return cut == whole


@settings(max_examples=examples(1000))
@given(
    value=_JSON,
    ascii_only=st.booleans(),
    keep=st.integers(min_value=1, max_value=24),
    cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=6),
)
@example(value=["\U0001f600"], ascii_only=True, keep=6, cuts=[])  # cut between a pair's halves
@example(value=["\u20ac"], ascii_only=False, keep=2, cuts=[])  # cut inside a UTF-8 sequence
@example(value=['a\\"b'], ascii_only=True, keep=3, cuts=[3])  # an escaped quote split off
@example(value={"kkkA": 1, "kkkB": 2}, ascii_only=True, keep=3, cuts=[])  # keys cut alike
def test_the_cut_copy_is_json_whose_strings_are_prefixes(
    value: object, ascii_only: bool, keep: int, cuts: list[int]
) -> None:
    """Whatever the strings hold (escapes, surrogate pairs, a lone surrogate, multi-byte
    UTF-8) and wherever the pieces split the text: the copy parses, has the same shape,
    and each string is a prefix of the original, whole when its JSON text fits."""
    text = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:  # a lone surrogate written raw: not UTF-8 JSON text
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_lines, "KEPT_STRING_BYTES", keep)
        shrinker = _lines._Shrinker()
        at = 0
        for size in cuts:
            shrinker.feed(text[at : at + size])
            at += size
        shrinker.feed(text[at:])
        copy = shrinker.result()
    assert copy is not None
    parsed = loads_event(copy)  # the ledger's own strict reader
    assert _prefix_of(parsed, value)
    if "\ud83d" not in json.dumps(value, ensure_ascii=False).replace("\ud83d\ude00", ""):
        # No string was cut inside a surrogate pair: the copy is well-formed Unicode.
        json.dumps(parsed, ensure_ascii=False).encode("utf-8")
    if len(text) <= keep:
        assert parsed == value


def test_a_copy_still_over_the_limit_is_given_up() -> None:
    """A line whose copy would still be over 1 MiB (structure, not strings) has none."""
    line = b"[" + b"1," * MAX_READ_LINE_BYTES + b"1]\n"
    (only,) = list(event_lines(io.BytesIO(line)))
    assert isinstance(only, OverlongLine)
    assert only.size == len(line)
    assert only.shrunk is None
