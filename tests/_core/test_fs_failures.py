"""The write primitives under failures of the machine: exit 3, the file named, nothing
half-written, and the same call works once the disk is healthy again."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from agc._core.fs import (
    MACHINE_ERRNOS,
    append_whole,
    atomic_write_bytes,
    ensure_dirs,
    exclusive_lock,
    prepare_write,
)
from agc.errors import FileExistsRefusedError, FileWriteError
from agc.exitcodes import ExitCode
from tests.faults import failing_disk, fill, temp_files, tmpfs

# Kills and disk faults: os.fsync stays real here (tests/conftest.py, _fsync_off).
pytestmark = pytest.mark.real_fsync

ERRNOS = [errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO]
CAUSES = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EIO: "input/output error",
}


def test_the_machine_errnos_are_the_issue_s_and_the_file_size_limit() -> None:
    assert {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG} == MACHINE_ERRNOS


@pytest.mark.parametrize("err", ERRNOS, ids=errno.errorcode.get)
@pytest.mark.parametrize("existing", [False, True], ids=["new", "replace"])
def test_atomic_write_fails_whole_and_a_retry_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int, existing: bool
) -> None:
    target = tmp_path / "manifest.json"
    if existing:
        target.write_bytes(b"old content\n")
    with failing_disk(monkeypatch, tmp_path, err, budget=3) as fault:
        with pytest.raises(FileWriteError) as caught:
            atomic_write_bytes(target, b"new content that does not fit\n", overwrite=True)
        assert fault.hits >= 1
    error = caught.value
    assert error.exit_code == ExitCode.UNREADABLE
    assert str(target) in error.message
    assert CAUSES[err] in error.message
    assert error.errno == err
    assert error.hint
    assert (target.read_bytes() if target.exists() else None) == (
        b"old content\n" if existing else None
    )
    assert temp_files(tmp_path) == []
    atomic_write_bytes(target, b"new content that does not fit\n", overwrite=True)
    assert target.read_bytes() == b"new content that does not fit\n"


def test_prepared_writes_take_the_space_before_any_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_bytes(b"A0")
    second.write_bytes(b"B0")

    def replace_both() -> None:
        with (
            prepare_write(first, b"A1") as new_first,
            prepare_write(second, b"B1 is too long for the disk") as new_second,
        ):
            new_first.commit(overwrite=True)  # never reached
            new_second.commit(overwrite=True)

    with failing_disk(monkeypatch, tmp_path, errno.ENOSPC, budget=4), pytest.raises(FileWriteError):
        replace_both()
    assert (first.read_bytes(), second.read_bytes()) == (b"A0", b"B0")
    assert temp_files(tmp_path) == []


def test_a_refused_commit_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "key.pem"
    target.write_bytes(b"mine")
    with pytest.raises(FileExistsRefusedError), prepare_write(target, b"other") as new:
        new.commit(overwrite=False)
    assert target.read_bytes() == b"mine"
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO], ids=errno.errorcode.get)
def test_append_whole_cuts_a_short_write_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    log = tmp_path / "chain.jsonl"
    log.write_bytes(b'{"position":1}\n')
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        with (
            failing_disk(monkeypatch, tmp_path, err, budget=5),
            pytest.raises(FileWriteError, match=r"chain\.jsonl"),
        ):
            append_whole(fd, b'{"position":2,"more":"bytes"}\n', path=log)
    finally:
        os.close(fd)
    assert log.read_bytes() == b'{"position":1}\n'  # never half a line


def test_folders_and_lock_files_on_a_read_only_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with failing_disk(monkeypatch, tmp_path, errno.EROFS):
        with pytest.raises(FileWriteError, match="read-only file system"):
            ensure_dirs(tmp_path / "audit" / "manifests")
        with (
            pytest.raises(FileWriteError, match=r"\.chain\.lock"),
            exclusive_lock(tmp_path / ".chain.lock", blocking=True, what="store chain"),
        ):
            pass


def test_on_a_real_full_tmpfs(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", size="64k") as disk:
        filler = fill(disk)
        with pytest.raises(FileWriteError, match="no space left on device"):
            atomic_write_bytes(disk / "sidecar.b3", b"x" * 8192, overwrite=False)
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]
        filler.unlink()
        atomic_write_bytes(disk / "sidecar.b3", b"x" * 8192, overwrite=False)
        assert (disk / "sidecar.b3").stat().st_size == 8192
