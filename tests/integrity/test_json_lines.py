"""The records of a JSONL stream are the same however its bytes are cut into chunks:
what the run reader counts in the legacy shared tool-events file of any store."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agc.integrity._store_io import iter_json_lines

REACHES_INSIDE = {
    "agc.integrity._store_io": "the JSONL stream reader on its own",
}

_RECORDS = st.lists(
    st.one_of(
        st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=30), max_size=3),
        st.just("not an object"),
        st.just("{torn"),
    ),
    max_size=12,
)


@given(records=_RECORDS, cuts=st.lists(st.integers(min_value=0), max_size=8), end=st.booleans())
def test_records_are_the_same_whatever_the_chunks(
    records: list[Any], cuts: list[int], end: bool
) -> None:
    lines = [r if r in ("not an object", "{torn") else json.dumps(r) for r in records]
    data = "\n".join(lines).encode() + (b"\n" if end and lines else b"")
    at = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in itertools.pairwise(at)]
    expected = [r for r in records if isinstance(r, dict)]
    assert list(iter_json_lines(chunks)) == expected
    assert list(iter_json_lines([data])) == expected
