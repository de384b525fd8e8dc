"""The short cuts of a streamed check and repair give what the straightforward way gives.

- A repair's output is checked by reading it from the first message the input's read
  still held (``scan_tail``), the lines before being copies of the input's: the same
  report, the same bytes as a repair of the file read whole, on generated sessions
  (broken turns, reused ids, Codex ``compacted`` lines) and on every fixture.
- The ids of settled calls are held as fingerprints (``CallIdSet``): membership is
  exact, also when fingerprints collide (each match confirmed by reading its line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc.errors import AgcError
from agc.resume import (
    ScanStart,
    Strategy,
    load_history,
    repair_loaded,
    repair_streamed,
    scan_session,
    scan_tail,
)
from agc.resume._formats.model import CallIdSet
from tests.conftest import examples
from tests.resume.helpers import REAL_FIXTURES, need
from tests.resume.test_repair import _codex_lines
from tests.resume.test_settle import FIXTURES, sessions

REACHES_INSIDE = {
    "agc.resume._formats.model": "CallIdSet: the compact set of settled call ids, "
    "with fingerprints forced to collide",
}


def _tail_repair(path: Path, settle: int, strategy: Strategy, out: Path) -> list[int]:
    """Repair ``path`` read with ``settle``, the output checked from the tail on, and
    assert it equals the repair of the file read whole (bytes and report); returns the
    lines the tail reads started from (none: the whole output was read)."""
    try:
        whole = load_history(path.read_bytes(), source=str(path))
    except AgcError:  # refused: the settled-read tests cover it
        return []
    expected = repair_loaded(whole, strategy=strategy)
    history = scan_session(path, source=str(path), format=None, settle=settle)
    starts: list[int] = []

    def read_tail(start: ScanStart) -> Any:
        starts.append(start.line)
        return scan_tail(out, start, source="out", format=history.format, settle=settle)

    with out.open("wb") as sink:
        report = repair_streamed(
            history,
            sink,
            lambda: scan_session(out, source="out", format=history.format, settle=settle),
            strategy=strategy,
            read_tail=read_tail,
        )
    assert out.read_bytes() == expected.data
    assert report.to_dict() == expected.report.to_dict()
    return starts


@settings(max_examples=examples(300), deadline=None)
@given(
    data=sessions(),
    settle=st.integers(min_value=1, max_value=4),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
def test_property_an_output_checked_from_its_tail_is_checked_as_the_whole(
    data: bytes,
    settle: int,
    strategy: Strategy,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = tmp_path_factory.mktemp("tail")
    path = folder / "session.jsonl"
    path.write_bytes(data)
    _tail_repair(path, settle, strategy, folder / "out.jsonl")


@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
@pytest.mark.parametrize("path", FIXTURES)
def test_a_fixture_checked_from_its_tail_is_checked_as_the_whole(
    path: Path | None, strategy: Strategy, tmp_path: Path
) -> None:
    path = need(path, REAL_FIXTURES)
    _tail_repair(path, 1, strategy, tmp_path / "out.jsonl")


def test_a_late_broken_call_is_checked_from_the_tail_only(tmp_path: Path) -> None:
    events: list[tuple[Any, ...]] = []
    for turn in range(6):
        events += [("user", "go"), ("assistant", "", [(f"c{turn}", True)], False)]
        events.append(("result", f"c{turn}", False))
    events.append(("assistant", "", [("late", True)], False))  # in flight
    path = tmp_path / "session.jsonl"
    path.write_bytes(_codex_lines(events, False))
    starts = _tail_repair(path, 1, "synthesize", tmp_path / "out.jsonl")
    assert starts  # read from a line on ...
    assert starts[0] > 0  # ... after the settled ones, not read again


_IDS = st.lists(st.text(alphabet="abcxyz-_0123", min_size=1, max_size=6), max_size=60)


class _Colliding(CallIdSet):
    """Fingerprints of three values only: most ids share one."""

    def _key(self, call_id: str) -> int:
        return len(call_id) % 3 + 1


@settings(max_examples=examples(300), deadline=None)
@given(held=_IDS, asked=_IDS, colliding=st.booleans())
def test_property_call_id_set_membership_is_exact(
    held: list[str], asked: list[str], colliding: bool
) -> None:
    lines = {index: call_id for index, call_id in enumerate(held)}
    reads: list[int] = []

    def confirm(line: int, call_id: str) -> bool:
        reads.append(line)
        return lines[line] == call_id

    ids = (_Colliding if colliding else CallIdSet)(confirm)
    for index, call_id in enumerate(held):
        ids.add(call_id, index)
    for call_id in [*asked, *held]:
        assert (call_id in ids) == (call_id in set(held))
    assert 5 not in ids  # not an id


def test_a_call_id_set_over_another_holds_both() -> None:
    first = CallIdSet(lambda line, call_id: call_id == "a")
    first.add("a", 0)
    second = CallIdSet(lambda line, call_id: call_id == "b", base=first)
    second.add("b", 7)
    assert "a" in second
    assert "b" in second
    assert "c" not in second
    assert "b" not in first
