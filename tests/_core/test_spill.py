"""SpilledItems: items appended in order, the first held, the rest spilled to a private
temporary file in pickled chunks, read back in order any number of times; a full disk
while spilling is the disk-full error (exit 3), never a short list."""

from __future__ import annotations

import errno
import tempfile
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agc._core.spill as spill
from agc._core.spill import SpilledItems
from agc.errors import FileWriteError
from agc.exitcodes import ExitCode
from tests.conftest import examples


@settings(max_examples=examples(60), deadline=None)
@given(
    items=st.lists(
        st.one_of(st.integers(), st.text(), st.tuples(st.text(), st.none())), max_size=40
    ),
    hold=st.integers(0, 5),
    chunk=st.integers(1, 4),
)
def test_items_come_back_in_order_as_often_as_read(items: list[Any], hold: int, chunk: int) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(spill, "_CHUNK", chunk)
        held = SpilledItems(items, hold=hold)
        assert len(held) == len(items)
        assert list(held) == items
        assert list(held) == items  # read again: the same
        assert [held[i] for i in range(len(items))] == items
        assert [held[-i] for i in range(1, len(items) + 1)] == [
            items[-i] for i in range(1, len(items) + 1)
        ]
        assert held[1:-1] == items[1:-1]
        assert held[::2] == items[::2]
        assert held == items
        assert held == tuple(items)
        assert bool(held) == bool(items)
        assert held.spilled == (max(len(items) - hold, 0) // chunk) * chunk
        with pytest.raises(IndexError):
            held[len(items)]


def test_only_the_first_are_held_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill, "_CHUNK", 3)
    held = SpilledItems(range(20), hold=4)
    assert held._head == [0, 1, 2, 3]
    assert held.spilled == 15  # five chunks of three in the file
    assert held._tail == [19]
    assert list(held) == list(range(20))


def test_the_bound_is_spill_at_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill, "SPILL_AT", 2)
    monkeypatch.setattr(spill, "_CHUNK", 2)
    held = SpilledItems(range(7))
    assert held._head == [0, 1]
    assert held.spilled == 4
    assert list(held) == list(range(7))


def test_a_base_is_shared_up_to_its_length_then_the_own_items(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(spill, "_CHUNK", 2)
    base = SpilledItems(range(9), hold=2)
    first = SpilledItems([100, 101], hold=1, base=base)
    second = SpilledItems(hold=1, base=base)
    base.append(9)  # after: not read by the holders that share it
    assert list(first) == [*range(9), 100, 101]
    assert list(second) == list(range(9))
    assert first[3] == 3
    assert first[9] == 100
    assert first[-1] == 101
    assert len(first) == 11


def test_marked_says_whether_any_item_passed_the_test() -> None:
    held = SpilledItems([1, 3], hold=0, mark=lambda item: item % 2 == 0)
    assert not held.marked
    held.append(4)
    assert held.marked
    shared = SpilledItems(hold=0, base=held, mark=lambda item: False)
    assert shared.marked  # the base's items are its own


def test_a_frozen_holder_takes_no_more() -> None:
    held = SpilledItems([1])
    held.freeze()
    with pytest.raises(TypeError):
        held.append(2)
    assert list(held) == [1]


class _FullDisk:
    """A temporary file whose writes fail as on a full disk."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _ShortWrites:
    """A temporary file that writes at most 7 bytes a call (as a write may)."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def write(self, data: Any) -> int:
        return int(self._real.write(bytes(data[:7])))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_a_full_disk_while_spilling_is_the_disk_full_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(spill, "_CHUNK", 2)
    real = tempfile.TemporaryFile
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda **kw: _FullDisk(real(**kw)))
    held: SpilledItems[int] = SpilledItems(hold=1, what="findings")
    held.extend([1, 2])
    with pytest.raises(FileWriteError) as caught:
        held.append(3)  # the first chunk is spilled
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.exit_code == ExitCode.UNREADABLE  # exit 3
    assert "temporary file of findings" in caught.value.message
    assert "no space left on device" in caught.value.message
    with pytest.raises(TypeError):  # never a list silently short afterwards
        held.append(4)


def test_a_short_write_is_written_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill, "_CHUNK", 2)
    real = tempfile.TemporaryFile
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda **kw: _ShortWrites(real(**kw)))
    items = [f"item {n} " * 5 for n in range(11)]
    held = SpilledItems(items, hold=1)
    assert held.spilled == 10
    assert list(held) == items
