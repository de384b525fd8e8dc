"""Counts in words (:func:`agc._core.words.counted`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc._core.words import counted


@pytest.mark.parametrize(
    ("count", "noun", "plural", "expected"),
    [
        (0, "record", None, "0 records"),
        (1, "record", None, "1 record"),
        (2, "record", None, "2 records"),
        (1, "tool event", None, "1 tool event"),
        (3, "entry", "entries", "3 entries"),
        (1, "entry", "entries", "1 entry"),
    ],
)
def test_one_is_singular_every_other_count_plural(
    count: int, noun: str, plural: str | None, expected: str
) -> None:
    assert counted(count, noun, plural) == expected


@given(st.integers(min_value=0, max_value=10**12))
def test_the_grouped_count_is_the_number_with_thousands_separators(count: int) -> None:
    text = counted(count, "byte", grouped=True)
    number, word = text.split(" ")
    assert int(number.replace(",", "")) == count
    assert word == ("byte" if count == 1 else "bytes")
    assert all(len(group) == 3 for group in number.split(",")[1:])
