"""Tests for agc.integrity.hashing: algorithms, streaming digests, constant-time compare."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import blake3
import pytest

from agc.integrity import hashing
from agc.integrity.hashing import check_algorithm, digest_fd, digests_equal, new_hasher


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
    with pytest.raises(ValueError, match="md5"):
        check_algorithm("md5")


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
