"""A streamed read's memory does not grow with the session file: its lines are found
again from a few marks, not from a place per line; the numbers of the lines a history
skips are spilled to a file past a bound; so are the fingerprints of the ids of the
calls let go of, and an id used again far apart still reads as the whole read reads
it (the file is read again with the ids held).

A streamed read holds the place of one line in :data:`MARK_EVERY` (so its memory does
not grow with the lines of the file) and finds the others by reading on from a mark:
every line read again, copied, or passed over in order is the file's, byte for byte,
whatever the lengths of the lines (empty, longer than a read), the last line (with or
without its line break, cut inside a character) or the lines let go of.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agc.resume._formats.model as model
from agc.resume import Strategy
from agc.resume._formats.model import SpilledCallIds, SpilledLines
from agc.resume._formats.stream import HEAD_LINES, MARK_EVERY, LineFile, LineSequence
from tests.conftest import examples
from tests.resume.helpers import REAL_FIXTURES, need
from tests.resume.test_repair import _claude_lines, _codex_lines
from tests.resume.test_settle import _same_as_whole, sessions
from tests.resume.test_stream import FIXTURES, _both
from tests.resume.test_stream_fast import _tail_repair

REACHES_INSIDE = {
    "agc.resume._formats.model": "SpilledLines, SpilledCallIds and their bound (SPILL_AT), "
    "made small",
    "agc.resume._formats.stream": "LineFile: the places of a file's lines, read again",
}

_LINE = st.one_of(
    st.just(b""),
    st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\n", b"x")),
    st.integers(70_000, 140_000).map(lambda n: b"y" * n),  # longer than a read piece
)


def _noted(path: Path, lines: list[bytes], final_newline: bool) -> LineFile:
    """A LineFile of ``lines`` written to ``path``, noted as a read notes them."""
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    records = LineFile(path, None, ())
    offset = 0
    for body in lines:
        records.note(offset, offset + len(body))
        offset += len(body) + 1
    return records


@settings(max_examples=examples(60), deadline=None)
@given(
    lines=st.lists(_LINE, min_size=1, max_size=300).filter(lambda ls: sum(map(len, ls)) < 600_000),
    final_newline=st.booleans(),
    seed=st.integers(0, 2**32),
)
def test_property_every_line_is_found_again_from_the_marks(
    tmp_path_factory: object, lines: list[bytes], final_newline: bool, seed: int
) -> None:
    path = tmp_path_factory.mktemp("places") / "s.jsonl"  # type: ignore[attr-defined]
    if not final_newline and lines[-1] == b"":
        lines = [*lines[:-1], b"z"]  # a last line without a break holds a byte
    records = _noted(path, lines, final_newline)
    try:
        order = list(range(len(lines)))
        random.Random(seed).shuffle(order)
        for index in order:  # out of order: from the marks
            assert records._bytes(index) == lines[index]
        assert list(records.bodies(len(lines))) == lines
        texts = LineSequence(records, len(lines), parsed=False)
        for first, stop in ((0, len(lines)), *((seed % (i + 1), i) for i in range(len(lines)))):
            out: list[bytes] = []
            texts.copy(first, stop, out.append)
            assert b"".join(out) == b"".join(line + b"\n" for line in lines[first:stop])
        for index in range(len(lines)):
            assert records.start_of(index) == sum(len(line) + 1 for line in lines[:index])
    finally:
        records.close()


def test_the_places_held_grow_by_one_mark_per_run_of_lines(tmp_path: Path) -> None:
    lines = [b'{"n":%d}' % i for i in range(50 * MARK_EVERY)]
    records = _noted(tmp_path / "s.jsonl", lines, True)
    try:
        assert len(records.marks) == 50
        assert records.record(len(lines) - 1) == {"n": len(lines) - 1}
    finally:
        records.close()


def test_lines_let_go_of_but_the_first_are_refused_the_rest_found(tmp_path: Path) -> None:
    lines = [b'{"n":%d}' % i for i in range(10 * MARK_EVERY + 7)]
    records = _noted(tmp_path / "s.jsonl", lines, True)
    try:
        cut = 5 * MARK_EVERY + 3
        records.forget(cut)
        assert len(records.marks) <= 6
        for index in [*range(HEAD_LINES), *range(cut, len(lines))]:
            assert records._bytes(index) == lines[index]
        for index in (HEAD_LINES, cut - 1):
            try:
                records._bytes(index)
            except IndexError:
                continue
            raise AssertionError(f"line {index} was let go of")
    finally:
        records.close()


@settings(max_examples=examples(100), deadline=None)
@given(
    indices=st.lists(st.integers(0, 2**40), max_size=200),
    spill_at=st.integers(1, 9),
    asked=st.lists(st.integers(-250, 250), max_size=20),
)
def test_property_spilled_lines_read_as_the_list_added(
    indices: list[int], spill_at: int, asked: list[int]
) -> None:
    lines = SpilledLines(indices[: len(indices) // 2], spill_at=spill_at)
    for index in indices[len(indices) // 2 :]:
        lines.append(index)
    assert len(lines) == len(indices)
    assert list(lines) == indices
    assert list(lines) == indices  # read again
    assert lines[1:-1] == indices[1:-1]
    for index in asked:
        if -len(indices) <= index < len(indices):
            assert lines[index] == indices[index]
        else:
            with pytest.raises(IndexError):
                lines[index]


def test_a_long_session_spills_the_lines_it_skips() -> None:
    lines = SpilledLines(range(10), spill_at=4)
    assert len(lines._tail) < 4  # the others are in the file
    assert list(lines) == list(range(10))


@pytest.mark.parametrize("path", FIXTURES)
def test_a_streamed_read_whose_skipped_lines_spill_equals_the_whole_read(
    path: Path | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = need(path, REAL_FIXTURES)
    monkeypatch.setattr(model, "SPILL_AT", 3)
    whole, streamed = _both(path)
    if isinstance(whole, Exception) or isinstance(streamed, Exception):
        assert str(whole) == str(streamed)
        return
    assert list(streamed.skipped) == list(whole.skipped)
    assert list(streamed.lines or ()) == list(whole.lines or ())


@settings(max_examples=examples(300), deadline=None)
@given(
    data=sessions(),
    settle=st.integers(min_value=1, max_value=4),
    spill_at=st.integers(min_value=1, max_value=4),
    strategy=st.sampled_from(["strip", "synthesize"]),
)
def test_property_reads_whose_ids_spill_check_and_repair_as_the_whole_read(
    data: bytes,
    settle: int,
    spill_at: int,
    strategy: Strategy,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = tmp_path_factory.mktemp("spill")
    path = folder / "session.jsonl"
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(model, "SPILL_AT", spill_at)
        _same_as_whole(path, settle, strategy, folder / "out.jsonl")
        _tail_repair(path, settle, strategy, folder / "tail.jsonl")


def _events(turns: int, reuse: bool) -> list[tuple[object, ...]]:
    events: list[tuple[object, ...]] = []
    for turn in range(turns):
        events += [("user", "go"), ("assistant", "", [(f"t{turn}", True)], False)]
        events.append(("result", f"t{turn}", False))
    if reuse:  # the first call's id, used again by a call far after it
        events += [("user", "go"), ("assistant", "", [("t0", True)], False)]
        events.append(("result", "t0", False))
    return events


@pytest.mark.parametrize("reuse", [False, True])
@pytest.mark.parametrize("codex", [False, True])
def test_an_id_used_again_far_apart_reads_as_the_whole_read(
    reuse: bool, codex: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = _events(40, reuse)
    data = _codex_lines(events, False) if codex else _claude_lines(events, False, False)
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    monkeypatch.setattr(model, "SPILL_AT", 4)
    settled = _same_as_whole(path, 1, "synthesize", tmp_path / "out.jsonl")
    assert settled is not None
    ids = settled.settled.call_ids if settled.settled is not None else None
    # Bounded unless an id is used again (then read again with the ids held).
    assert isinstance(ids, SpilledCallIds) is not reuse
    if isinstance(ids, SpilledCallIds):
        assert len(ids._recent) < 4 < len(ids)
