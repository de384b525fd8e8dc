"""A ``SpilledMap`` (the counts of call ids used again, a Claude Code repair's dropped
uuids) answers as a dict does however many keys it spilled to disk: a key set again
after a spill answers its last value, a lone surrogate in a key is kept."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agc.resume._formats.model import SpilledMap
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.resume._formats.model": "SpilledMap, spilled to disk after a few keys",
}

_KEYS = st.sampled_from(["a", "b", "c", "d\udc80", "é", "toolu_1", ""])
_VALUES = st.one_of(st.none(), st.integers(), st.text(max_size=3), st.just({"k": [1.5, True]}))


@settings(max_examples=examples(200), deadline=None)
@given(
    sets=st.lists(st.tuples(_KEYS, _VALUES), max_size=30),
    spill_at=st.integers(min_value=1, max_value=5),
)
def test_a_spilled_map_answers_as_a_dict(sets: list[tuple[str, Any]], spill_at: int) -> None:
    spilled = SpilledMap(spill_at)
    held: dict[str, Any] = {}
    for key, value in sets:
        spilled[key] = value
        held[key] = value
    absent = object()
    for key in ["a", "b", "c", "d\udc80", "é", "toolu_1", "", "x"]:
        assert spilled.get(key, absent) == held.get(key, absent)
    assert set(spilled.keys()) == set(held)
    assert len(spilled) >= len(held)
    spilled.close()
    assert spilled.get("a", absent) is absent
