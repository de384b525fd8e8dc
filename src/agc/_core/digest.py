"""Digest algorithms and streaming file digests.

BLAKE3 is the default (fast, parallel, checkable with ``b3sum``); SHA-256 is selectable
for environments that only trust FIPS algorithms (checkable with ``sha256sum``). Digests
are always computed over raw bytes, never over decoded text: hashing decoded UTF-8 would hide
changes to invalid byte sequences.
"""

from __future__ import annotations

import hashlib
import hmac
import mmap
import os
import stat
from typing import BinaryIO, Final, Literal, Protocol

import blake3

from agc.errors import UsageError

__all__ = [
    "ALGORITHMS",
    "DEFAULT_ALGORITHM",
    "SIDECAR_SUFFIXES",
    "Algorithm",
    "Hasher",
    "digest_bytes",
    "digest_fd",
    "digests_equal",
    "new_hasher",
]

Algorithm = Literal["blake3", "sha256"]
ALGORITHMS: Final[tuple[Algorithm, ...]] = ("blake3", "sha256")
DEFAULT_ALGORITHM: Final[Algorithm] = "blake3"
SIDECAR_SUFFIXES: Final[dict[Algorithm, str]] = {"blake3": ".b3", "sha256": ".sha256"}
HEX_LENGTH: Final[dict[Algorithm, int]] = {"blake3": 64, "sha256": 64}

# Large enough that BLAKE3's multi-threaded update has work to split, small enough that
# memory stays flat however large the file is.
_CHUNK_BYTES: Final = 8 * 1024 * 1024
# From this size on a regular file is hashed through a read-only memory map, as b3sum
# does: no copy into a buffer, and BLAKE3 can split the whole file across cores at once.
_MMAP_MIN_BYTES: Final = 16 * 1024 * 1024
# The smallest read buffer: room to see end of file (or a few appended lines) at once.
_MIN_BUFFER: Final = 64 * 1024


class Hasher(Protocol):
    """The incremental-hash interface shared by ``blake3.blake3`` and ``hashlib``."""

    def update(self, data: bytes | bytearray | memoryview, /) -> object: ...

    def hexdigest(self) -> str: ...

    def copy(self) -> Hasher: ...


def check_algorithm(algorithm: str) -> Algorithm:
    """Return ``algorithm`` if it is supported.

    Raises:
        UsageError: another name (the message names the choices).
    """
    if algorithm == "blake3":
        return "blake3"
    if algorithm == "sha256":
        return "sha256"
    raise UsageError(
        f"unknown digest algorithm {algorithm!r}", hint=f"Choose one of {', '.join(ALGORITHMS)}."
    )


def new_hasher(algorithm: Algorithm, *, threads: int = 1) -> Hasher:
    """Return a fresh incremental hasher.

    Args:
        algorithm: ``"blake3"`` or ``"sha256"``.
        threads: BLAKE3 worker threads; ``0`` means all cores. Ignored for SHA-256.
    """
    if check_algorithm(algorithm) == "blake3":
        max_threads = blake3.blake3.AUTO if threads == 0 else max(1, threads)
        hasher: Hasher = blake3.blake3(max_threads=max_threads)
        return hasher
    return hashlib.sha256()


def digest_bytes(data: bytes | bytearray | memoryview, algorithm: Algorithm) -> str:
    """The hex ``algorithm`` digest of ``data`` (one thread), pure.

    Raises:
        UsageError: ``algorithm`` is not one of :data:`ALGORITHMS`.
    """
    hasher = new_hasher(algorithm)
    hasher.update(data)
    return hasher.hexdigest()


def digest_fd(
    fd: int | BinaryIO,
    algorithm: Algorithm,
    *,
    limit: int | None = None,
    threads: int = 0,
) -> tuple[str, int]:
    """Stream an open file from its current position and return ``(hex digest, bytes read)``.

    Memory stays flat whatever the file size: a regular file of 16 MiB or more is hashed
    through a read-only memory map (the method of ``b3sum``; its pages come from the page
    cache, no copy), anything else through one buffer of 8 MiB at most (sized to the
    file when it is a regular file). The map covers the length seen by ``fstat`` when
    hashing starts. As with ``b3sum``, another process that
    truncates the file while it is mapped makes the kernel end this process (SIGBUS):
    a crash, never a verdict. The file position ends after the bytes hashed.

    Args:
        fd: an OS file descriptor or a binary file object, positioned where hashing starts.
        algorithm: digest algorithm.
        limit: hash at most this many bytes (``None``: to end of file).
        threads: BLAKE3 threads, ``0`` for all cores.

    Raises:
        OSError: reading failed.
    """
    hasher = new_hasher(algorithm, threads=threads)
    raw_fd = fd if isinstance(fd, int) else fd.fileno()
    remaining = _regular_remaining(raw_fd, limit)
    if remaining is not None and remaining >= _MMAP_MIN_BYTES:
        mapped = _digest_mapped(raw_fd, hasher, remaining)
        if mapped is not None:
            return hasher.hexdigest(), mapped
    # The buffer is sized to what a regular file holds (a small sidecar'd file is most
    # of what agc-verify reads: zero-filling 8 MiB for it costs more than hashing it);
    # reading still goes on to end of file, so a file that grew is read in full.
    size = _CHUNK_BYTES if remaining is None else min(_CHUNK_BYTES, remaining + _MIN_BUFFER)
    view = memoryview(bytearray(size))
    total = 0
    while limit is None or total < limit:
        want = size if limit is None else min(size, limit - total)
        got = os.readv(raw_fd, [view[:want]])
        if got == 0:
            break
        hasher.update(view[:got])
        total += got
    return hasher.hexdigest(), total


def _regular_remaining(raw_fd: int, limit: int | None) -> int | None:
    """Bytes from the position to end of file (at most ``limit``) for a regular file;
    ``None`` for anything else (a pipe, a device: its length is not known)."""
    info = os.fstat(raw_fd)
    if not stat.S_ISREG(info.st_mode):
        return None
    remaining = max(0, info.st_size - os.lseek(raw_fd, 0, os.SEEK_CUR))
    return remaining if limit is None else min(remaining, limit)


def _digest_mapped(raw_fd: int, hasher: Hasher, length: int) -> int | None:
    """Hash ``length`` bytes from the position through mmap; ``None`` if not mappable."""
    start = os.lseek(raw_fd, 0, os.SEEK_CUR)
    try:
        region = mmap.mmap(raw_fd, start + length, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None  # not mappable (some file systems): fall back to reading
    with region, memoryview(region) as whole, whole[start : start + length] as part:
        hasher.update(part)
    os.lseek(raw_fd, start + length, os.SEEK_SET)
    return length


def digests_equal(expected: str, actual: str) -> bool:
    """Constant-time comparison of two hex digests (``hmac.compare_digest``).

    An empty digest never matches, so an empty input can never count as verified.
    """
    if not expected or not actual:
        return False
    return hmac.compare_digest(expected.encode("utf-8"), actual.encode("utf-8"))
