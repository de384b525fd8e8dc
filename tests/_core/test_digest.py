"""Tests for agc._core.digest: algorithms, streaming and mapped digests, compare."""

from __future__ import annotations

import hashlib
import mmap
import os
import random
from pathlib import Path
from unittest import mock

import blake3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core import digest as hashing
from agc._core.digest import (
    Algorithm,
    check_algorithm,
    digest_fd,
    digests_equal,
    new_hasher,
)
from agc.errors import UsageError
from agc.exitcodes import ExitCode
from tests.conftest import examples


def _reference(data: bytes, algorithm: str) -> str:
    if algorithm == "blake3":
        return str(blake3.blake3(data).hexdigest())
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("algorithm", ["blake3", "sha256"])
def test_new_hasher_matches_reference(algorithm: hashing.Algorithm) -> None:
    hasher = new_hasher(algorithm)
    hasher.update(b"abc")
    hasher.update(b"def")
    assert hasher.hexdigest() == _reference(b"abcdef", algorithm)


def test_unknown_algorithm_is_rejected() -> None:
    with pytest.raises(UsageError, match="md5") as caught:
        check_algorithm("md5")
    assert caught.value.exit_code == ExitCode.USAGE
    assert "blake3, sha256" in caught.value.hint


@pytest.mark.parametrize("algorithm", ["blake3", "sha256"])
def test_digest_fd_streams_in_bounded_chunks(
    algorithm: hashing.Algorithm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = os.urandom(10_000)
    path = tmp_path / "f"
    path.write_bytes(data)
    monkeypatch.setattr(hashing, "_CHUNK_BYTES", 1024)
    sizes: list[int] = []
    real_readv = os.readv

    def readv(fd: int, buffers: list[memoryview]) -> int:
        sizes.append(sum(len(b) for b in buffers))
        return real_readv(fd, buffers)

    monkeypatch.setattr(os, "readv", readv)
    with path.open("rb") as handle:
        digest, total = digest_fd(handle, algorithm)
    assert (digest, total) == (_reference(data, algorithm), len(data))
    assert max(sizes) <= 1024


def test_digest_fd_limit_and_position(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDONLY)
    try:
        os.lseek(fd, 2, os.SEEK_SET)
        assert digest_fd(fd, "sha256", limit=5) == (_reference(b"23456", "sha256"), 5)
    finally:
        os.close(fd)


def test_digest_fd_of_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"")
    with path.open("rb") as handle:
        assert digest_fd(handle, "blake3") == (_reference(b"", "blake3"), 0)


def test_digests_equal() -> None:
    digest = "ab" * 32
    assert digests_equal(digest, digest)
    assert not digests_equal(digest, "ac" * 32)
    assert not digests_equal("", "")
    assert not digests_equal(digest, "")


@pytest.fixture
def data_file(tmp_path: Path) -> tuple[Path, bytes]:
    data = random.Random(5).randbytes(300_000)
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    return path, data


@pytest.mark.parametrize("algorithm", ["blake3", "sha256"])
@pytest.mark.parametrize("mmap_min", [1, 10**9], ids=["mapped", "buffered"])
@pytest.mark.parametrize(
    ("start", "limit"),
    [(0, None), (7, None), (0, 1000), (4099, 123_457), (299_990, 50), (300_000, None)],
)
@pytest.mark.parametrize("threads", [1, 0])
def test_digest_fd_matches_reference_from_position_and_limit(
    monkeypatch: pytest.MonkeyPatch,
    data_file: tuple[Path, bytes],
    algorithm: Algorithm,
    mmap_min: int,
    start: int,
    limit: int | None,
    threads: int,
) -> None:
    monkeypatch.setattr(hashing, "_MMAP_MIN_BYTES", mmap_min)
    path, data = data_file
    expected = data[start:] if limit is None else data[start : start + limit]
    fd = os.open(path, os.O_RDONLY)
    try:
        os.lseek(fd, start, os.SEEK_SET)
        digest, count = digest_fd(fd, algorithm, limit=limit, threads=threads)
        assert os.lseek(fd, 0, os.SEEK_CUR) == start + len(expected)
    finally:
        os.close(fd)
    assert count == len(expected)
    assert digest == _reference(expected, algorithm)


def test_digest_fd_maps_a_large_regular_file(
    monkeypatch: pytest.MonkeyPatch, data_file: tuple[Path, bytes]
) -> None:
    monkeypatch.setattr(hashing, "_MMAP_MIN_BYTES", 1)
    path, data = data_file
    seen: list[int] = []
    real_mmap = mmap.mmap

    def spy(fd: int, length: int, *, access: int) -> mmap.mmap:
        seen.append(length)
        return real_mmap(fd, length, access=access)

    monkeypatch.setattr(mmap, "mmap", spy)
    with path.open("rb") as handle:
        digest, _ = digest_fd(handle, "blake3")
    assert seen == [len(data)]
    assert digest == _reference(data, "blake3")


def test_digest_fd_reads_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hashing, "_MMAP_MIN_BYTES", 1)
    data = b"x" * 50_000  # fits in a pipe buffer (64 KiB on Linux)
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)
        os.close(write_end)
        digest, count = digest_fd(read_end, "sha256")
    finally:
        os.close(read_end)
    assert (digest, count) == (_reference(data, "sha256"), len(data))


def test_empty_file_digest_is_the_empty_input_digest(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert digest_fd(fd, "blake3") == (_reference(b"", "blake3"), 0)
    finally:
        os.close(fd)


def _readv_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    real_readv = os.readv

    def readv(fd: int, buffers: list[memoryview]) -> int:
        sizes.append(sum(len(b) for b in buffers))
        return real_readv(fd, buffers)

    monkeypatch.setattr(os, "readv", readv)
    return sizes


def test_a_small_file_is_read_with_a_buffer_sized_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Zero-filling an 8 MiB buffer costs more than hashing a small file.
    data = os.urandom(3000)
    path = tmp_path / "f"
    path.write_bytes(data)
    sizes = _readv_sizes(monkeypatch)
    with path.open("rb") as handle:
        assert digest_fd(handle, "blake3") == (_reference(data, "blake3"), len(data))
    assert sizes
    assert max(sizes) <= len(data) + hashing._MIN_BUFFER


@pytest.mark.parametrize("algorithm", ["blake3", "sha256"])
def test_a_file_that_grew_after_fstat_is_still_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, algorithm: Algorithm
) -> None:
    # fstat reports the length before a writer appended: the bytes after it are read
    # (and hashed) as before the buffer was sized to the file.
    data = random.Random(3).randbytes(200_000)
    path = tmp_path / "f"
    path.write_bytes(data)
    real_fstat = os.fstat

    def stale_fstat(fd: int) -> os.stat_result:
        info = list(real_fstat(fd))
        info[6] = 10  # st_size
        return os.stat_result(info)

    monkeypatch.setattr(os, "fstat", stale_fstat)
    with path.open("rb") as handle:
        assert digest_fd(handle, algorithm) == (_reference(data, algorithm), len(data))
    with path.open("rb") as handle:
        limited = digest_fd(handle, algorithm, limit=150_000)
    assert limited == (_reference(data[:150_000], algorithm), 150_000)


@settings(max_examples=examples(60), deadline=None)
@given(
    data=st.binary(max_size=200_000) | st.integers(0, 300_000).map(lambda n: b"\x5a" * n),
    start=st.integers(0, 300_000),
    limit=st.none() | st.integers(0, 300_000),
    mapped=st.booleans(),
)
def test_digest_fd_is_the_digest_of_the_bytes_from_position_to_limit(
    tmp_path_factory: pytest.TempPathFactory,
    data: bytes,
    start: int,
    limit: int | None,
    mapped: bool,
) -> None:
    path = tmp_path_factory.mktemp("digest") / "f"
    path.write_bytes(data)
    start = min(start, len(data))
    expected = data[start:] if limit is None else data[start : start + limit]
    with mock.patch.object(hashing, "_MMAP_MIN_BYTES", 1 if mapped else 10**12):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.lseek(fd, start, os.SEEK_SET)
            result = digest_fd(fd, "blake3", limit=limit)
            assert os.lseek(fd, 0, os.SEEK_CUR) == start + len(expected)
        finally:
            os.close(fd)
    assert result == (_reference(expected, "blake3"), len(expected))
