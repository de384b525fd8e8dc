"""Tests for agc.ledger._lines: a turn file's lines in bounded pieces."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.ledger import OverlongLine, event_lines
from agc.ledger._lines import MAX_READ_LINE_BYTES, iter_line_pieces
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.ledger._lines": "the line reader itself (pieces of over-long lines)",
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
