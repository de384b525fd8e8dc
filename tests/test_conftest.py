"""The shared test helpers keep what they promise (a flaky helper makes flaky tests)."""

from __future__ import annotations

import errno
import itertools
import os
import sqlite3
import time
import types
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import settings

from tests import conftest
from tests.conftest import examples, sampled, write_run


def _files(store: Path) -> dict[str, bytes]:
    return {str(p.relative_to(store)): p.read_bytes() for p in store.rglob("*") if p.is_file()}


def test_write_run_writes_the_same_bytes_when_the_machine_pauses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pause of seconds between two writes (simulated: the monotonic clock jumps 5 s
    at every reading) would fire the writers' time trigger and shift every later ``ts``
    of the default clock; write_run's files must not depend on it."""
    quiet = tmp_path / "quiet"
    write_run(quiet, transcript=[{"n": n} for n in range(4)])
    jumps = itertools.count(time.monotonic_ns(), 5_000_000_000)
    monkeypatch.setattr(time, "monotonic_ns", jumps.__next__)
    paused = tmp_path / "paused"
    write_run(paused, transcript=[{"n": n} for n in range(4)])
    assert _files(paused) == _files(quiet)


def test_the_default_profile_runs_a_fraction_of_each_count_and_thorough_all() -> None:
    active = settings.default
    assert active is not None
    assert active.deadline is None
    assert active.max_examples == (100 if conftest.THOROUGH else 25)
    if conftest.THOROUGH:
        assert [examples(n) for n in (8, 40, 2000)] == [8, 40, 2000]
    else:
        assert [examples(n) for n in (8, 40, 60, 2000)] == [8, 10, 12, 400]
    # A lower floor for costly examples; thorough keeps the full count.
    assert examples(8, least=2) == (8 if conftest.THOROUGH else 2)
    assert examples(40, least=2) == (40 if conftest.THOROUGH else 8)


def test_a_sample_keeps_both_ends_and_is_the_same_on_every_run() -> None:
    items = list(range(1000))
    chosen = sampled(items, keep=50, seed="flips")
    assert chosen == sampled(items, keep=50, seed="flips")
    if conftest.THOROUGH:
        assert chosen == items
    else:
        assert len(chosen) == 52 == len(set(chosen))
        assert chosen[0] == 0
        assert chosen[-1] == 999
        assert chosen == sorted(chosen)
    assert sampled(items[:40], keep=50, seed="flips") == items[:40]


def test_a_sample_keeps_a_member_of_every_class_it_is_told_to_cover() -> None:
    # 600 items in 60 kinds and 7 placements; a draw of 5 cannot hold every kind.
    items = [(kind, number % 7, number) for kind in range(60) for number in range(10)]
    cover = (lambda item: item[0], lambda item: item[1])
    chosen = sampled(items, keep=5, seed="corpus", cover=cover)
    assert chosen == sampled(items, keep=5, seed="corpus", cover=cover)
    if conftest.THOROUGH:
        assert chosen == items
        return
    assert {item[0] for item in chosen} == set(range(60))
    assert {item[1] for item in chosen} == set(range(7))
    assert chosen == sorted(chosen)
    assert len(chosen) == len(set(chosen)) < len(items)
    # The draw without cover is kept as it was: covering only adds members.
    assert set(sampled(items, keep=5, seed="corpus")) <= set(chosen)


def test_fsync_is_off_and_still_refuses_a_bad_descriptor(tmp_path: Path) -> None:
    assert not isinstance(os.fsync, types.BuiltinFunctionType)
    fd = os.open(tmp_path / "f", os.O_CREAT | os.O_WRONLY, 0o600)
    os.fsync(fd)
    os.close(fd)
    with pytest.raises(OSError, match="Bad file descriptor") as raised:
        os.fsync(fd)
    assert raised.value.errno == errno.EBADF


@pytest.mark.real_fsync
def test_a_test_marked_real_fsync_gets_the_real_fsync(tmp_path: Path) -> None:
    assert isinstance(os.fsync, types.BuiltinFunctionType)
    assert os.fsync.__name__ == "fsync"
    assert _sqlite_synchronous(tmp_path / "agent.db") == 2  # FULL, SQLite's default


def _sqlite_synchronous(path: Path) -> int:
    """The ``PRAGMA synchronous`` level of a new connection to ``path`` (0 is OFF)."""
    with closing(sqlite3.connect(path)) as conn:
        level: int = conn.execute("PRAGMA synchronous").fetchone()[0]
        return level


def test_sqlite_does_not_sync_and_still_refuses_a_file_that_is_no_database(
    tmp_path: Path,
) -> None:
    assert _sqlite_synchronous(tmp_path / "agent.db") == 0
    not_a_db = tmp_path / "not.db"
    not_a_db.write_bytes(b"not a database, " * 16)
    with closing(sqlite3.connect(not_a_db)) as conn, pytest.raises(sqlite3.DatabaseError):
        conn.execute("CREATE TABLE IF NOT EXISTS t (a)")
