"""The shared test helpers keep what they promise (a flaky helper makes flaky tests)."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from tests.conftest import write_run


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
