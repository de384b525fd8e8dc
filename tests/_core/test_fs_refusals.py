"""The file helpers' refusals, each what its docstring promises: a machine failure is
``file-write-failed`` (exit 3) and anything else a store error; a small file that is
a FIFO or too large is refused unread; a folder blocked by a file is named; a write
is committed once and never through a symlink; stale temporary files are removed
only when no writer holds them; a held lock refuses a second, non-blocking taker."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

import pytest

from agc._core.fs import (
    atomic_write_bytes,
    ensure_dirs,
    exclusive_lock,
    prepare_write,
    read_small_file,
    remove_stale_temp_files,
    store_write_error,
)
from agc.errors import (
    FileWriteError,
    RunLockedError,
    StoreError,
    UnsafePathError,
)
from agc.exitcodes import ExitCode


@pytest.mark.parametrize(
    ("number", "machine"), [(errno.ENOSPC, True), (errno.EROFS, True), (errno.EACCES, False)]
)
def test_a_failed_change_is_a_write_failure_only_when_the_machine_failed(
    tmp_path: Path, number: int, machine: bool
) -> None:
    error = store_write_error(
        "cannot write x", tmp_path / "x", OSError(number, os.strerror(number))
    )
    assert isinstance(error, FileWriteError) is machine
    assert isinstance(error, StoreError)
    assert error.exit_code == ExitCode.UNREADABLE
    assert error.message == "cannot write x"
    assert error.code == ("file-write-failed" if machine else "store-unreadable")


def test_a_small_file_that_is_a_fifo_or_too_large_is_refused_unread(tmp_path: Path) -> None:
    fifo = tmp_path / "x.b3"
    os.mkfifo(fifo)  # a read would wait for a writer forever
    with pytest.raises(UnsafePathError, match="is not a regular file"):
        read_small_file(fifo, max_bytes=100)
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 101)
    with pytest.raises(StoreError, match="is larger than 100 bytes"):
        read_small_file(big, max_bytes=100)
    assert read_small_file(big, max_bytes=101) == b"x" * 101


def test_a_folder_blocked_by_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "audit").write_text("a file where a folder goes")
    with pytest.raises(StoreError, match=f"cannot create {tmp_path / 'audit' / 'transcripts'}"):
        ensure_dirs(tmp_path / "audit" / "transcripts")


def test_a_prepared_write_is_committed_once(tmp_path: Path) -> None:
    prepared = prepare_write(tmp_path / "f", b"new")
    prepared.commit(overwrite=False)
    assert (tmp_path / "f").read_bytes() == b"new"
    with pytest.raises(RuntimeError, match="already committed"):
        prepared.commit(overwrite=True)
    assert [p.name for p in tmp_path.iterdir()] == ["f"]  # no temporary file left


def test_a_write_never_replaces_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"keep")
    link = tmp_path / "manifest.json"
    link.symlink_to(target)
    with pytest.raises(UnsafePathError, match="is a symlink"):
        atomic_write_bytes(link, b"new", overwrite=True)
    with prepare_write(link, b"new") as prepared, pytest.raises(UnsafePathError):
        prepared.commit(overwrite=True)
    assert target.read_bytes() == b"keep"
    assert link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "manifest.json"]


def test_stale_temp_files_are_removed_but_not_a_held_one_or_a_link(tmp_path: Path) -> None:
    stale = tmp_path / ".m.json.0123456789ab.tmp"
    stale.write_bytes(b"left by a crash")
    held = tmp_path / ".n.json.0123456789ac.tmp"
    held.write_bytes(b"being written")
    linked = tmp_path / ".o.json.0123456789ad.tmp"
    linked.symlink_to(tmp_path / "n.json")
    other = tmp_path / "n.json"
    other.write_bytes(b"not a temporary file")
    fd = os.open(held, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # its writer is still at work
        assert remove_stale_temp_files(tmp_path) == [stale.name]
    finally:
        os.close(fd)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([held.name, linked.name, "n.json"])
    assert remove_stale_temp_files(tmp_path / "missing") == []


def test_a_held_lock_refuses_a_non_blocking_taker(tmp_path: Path) -> None:
    lock = tmp_path / "r1.lock"
    with (
        exclusive_lock(lock, blocking=False, what="run r1"),
        pytest.raises(RunLockedError, match="run r1 is locked by another writer"),
        exclusive_lock(lock, blocking=False, what="run r1"),
    ):
        raise AssertionError("taken twice")
    with exclusive_lock(lock, blocking=False, what="run r1"):  # free again
        pass
