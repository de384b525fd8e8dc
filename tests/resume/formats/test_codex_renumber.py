"""The renumbering of a numbered Codex rollout holds runs of old ``history_sequence``
numbers shifted alike, not a number per line: it gives what holding every number one
by one gives (the rule of ``codex_rollout.write``), whatever the order of the numbers."""

from __future__ import annotations

import bisect
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agc.resume._formats.codex_rollout import _Renumber
from tests.conftest import examples

REACHES_INSIDE = {
    "agc.resume._formats.codex_rollout": "_Renumber, compared with a reference that holds "
    "every old number one by one",
}


class _OneByOne:
    """The renumbering as it held every old number (the reference)."""

    def __init__(self, removed: list[int]) -> None:
        self.removed = list(removed)
        self.shift = 0
        self.last_sequence = 0
        self.old_sequences: list[int] = []
        self.new_sequences: dict[int, int] = {}

    def apply(self, old: int | None, sampled: Any, *, new: bool) -> tuple[int, Any] | None:
        if new:
            self.shift += 1
            sequence = self.last_sequence + 1
        else:
            if old is None:
                return None
            while self.removed and self.removed[0] < old:
                self.removed.pop(0)
                self.shift -= 1
            sequence = old + self.shift
            sampled = self._mapped(sampled)
            bisect.insort(self.old_sequences, old)
            self.new_sequences[old] = sequence
        self.last_sequence = sequence
        return sequence, sampled

    def _mapped(self, sampled: Any) -> Any:
        if not isinstance(sampled, int) or sampled < 0:
            return sampled
        if sampled in self.new_sequences:
            return self.new_sequences[sampled]
        position = bisect.bisect_right(self.old_sequences, sampled)
        if position == 0:
            return sampled
        return self.new_sequences[self.old_sequences[position - 1]]


_ITEM = st.tuples(
    st.booleans(),  # a new item (inserted by the repair)
    st.sampled_from([1, 1, 1, 1, 2, 3, 0]),  # the step from the last old number
    st.integers(min_value=0, max_value=9).map(lambda n: n == 0),  # taken back (out of order)
    st.one_of(st.none(), st.integers(min_value=-6, max_value=1)),  # sampled, from the old
)


@settings(max_examples=examples(300), deadline=None)
@given(
    items=st.lists(_ITEM, max_size=40),
    removed=st.lists(st.integers(min_value=0, max_value=40), max_size=8),
)
def test_runs_renumber_as_every_number_held(
    items: list[tuple[bool, int, bool, int | None]], removed: list[int]
) -> None:
    runs = _Renumber(sorted(removed))
    reference = _OneByOne(sorted(removed))
    old = 0
    for new, step, back, sampled in items:
        if not new:
            old = max(old - step, 0) if back else old + step
        at = None if sampled is None else old + sampled
        metadata = {"history_sequence": None if new else old, "sampled_through_sequence": at}
        record: dict[str, Any] = {"type": "response_item", "payload": {}, "metadata": metadata}
        changed = runs.apply(record, new=new)
        expected = reference.apply(None if new else old, at, new=new)
        assert expected is not None
        written = (changed or record)["metadata"]
        assert (written["history_sequence"], written["sampled_through_sequence"]) == expected
