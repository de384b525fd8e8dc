"""Crash checkpoints: the digest of a file's prefix, recorded while it is still open.

While a writer is open it appends a checkpoint line to ``<name>.ckpt`` beside the file
every N records and every T seconds (defaults 1000 records / 1 s). A checkpoint is
cheap: the incremental hasher already holds the prefix digest, so writing one costs a
hasher copy and one short ``write``. After a crash (kill -9) the verifier checks the
file against its checkpoints in one streaming pass: the prefix up to the last matching
checkpoint is verified, the rest is an unverified tail, and a prefix that does not match
its checkpoint is *modified*, not merely unsealed.

Checkpoint line (JSON, one per line)::

    {"records": 1000, "bytes": 523412, "algorithm": "blake3", "digest": "<hex>", "ts": 1796…}
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeAlias, TypeVar

from agc._core.digest import ALGORITHMS, Algorithm, digests_equal, new_hasher
from agc._core.fs import read_small_file
from agc._core.json import loads_lines
from agc.errors import StoreError

__all__ = [
    "CHECKPOINT_SUFFIX",
    "MAX_SEALED_CHECKPOINTS",
    "Checkpoint",
    "PrefixCheck",
    "ReadAt",
    "check_prefix",
    "check_prefix_read",
    "chunk_reader",
    "format_checkpoint",
    "parse_checkpoints",
    "read_checkpoints",
    "remove_checkpoints",
    "thin_checkpoints",
]

CHECKPOINT_SUFFIX: Final = ".ckpt"
MAX_CHECKPOINT_BYTES: Final = 1 << 30
"""The largest checkpoint file read (a checkpoint line is about 150 bytes)."""
_T = TypeVar("_T")
ReadAt: TypeAlias = Callable[[int, int], "bytes | memoryview"]
"""``read(length, offset)``: at most ``length`` bytes of a file at ``offset``, empty at
its end."""
MAX_SEALED_CHECKPOINTS: Final = 256
"""The most checkpoints a seal keeps per file: past it every second one is dropped,
which doubles the spacing and halves how precisely a change is located. At about 170
bytes each in a manifest this keeps two artifacts far below the manifest's 1 MiB limit,
and parsing them adds about a millisecond to ``agc-verify`` of a 1 GiB file (a file
of fewer than 1,000 records written within a second has none)."""
_CHUNK: Final = 8 * 1024 * 1024


@dataclass(frozen=True)
class Checkpoint:
    """The state of a file after ``records`` records / ``bytes`` bytes.

    Attributes:
        records: complete records in the prefix.
        bytes: prefix length in bytes.
        algorithm: digest algorithm.
        digest: hex digest of the prefix.
        ts: Unix time in ms when the checkpoint was taken.
    """

    records: int
    bytes: int
    algorithm: Algorithm
    digest: str
    ts: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "bytes": self.bytes,
            "algorithm": self.algorithm,
            "digest": self.digest,
            "ts": self.ts,
        }


def format_checkpoint(checkpoint: Checkpoint) -> bytes:
    """One checkpoint line, ``\\n``-terminated."""
    return json.dumps(checkpoint.to_dict(), separators=(",", ":")).encode() + b"\n"


def parse_checkpoints(data: bytes) -> tuple[list[Checkpoint], int]:
    """Parse a checkpoint file. Returns ``(checkpoints, unusable lines)``.

    A torn last line (crash while writing a checkpoint) or a damaged line (not strict
    JSON, see :mod:`agc._core.json`, or a field of the wrong type) is counted as
    unusable and skipped; it never makes an earlier checkpoint invalid.
    """
    return loads_lines(data, _checkpoint)


def _checkpoint(raw: Any) -> Checkpoint:
    algorithm = raw["algorithm"]
    if algorithm not in ALGORITHMS:
        raise ValueError(algorithm)
    return Checkpoint(
        records=_count(raw["records"]),
        bytes=_count(raw["bytes"]),
        algorithm=algorithm,
        digest=str(raw["digest"]),
        ts=_count(raw["ts"]),
    )


def read_checkpoints(path: Path) -> tuple[list[Checkpoint], int]:
    """The checkpoints of the file ``path`` (from ``<name>.ckpt``) and the number of
    unusable lines; ``([], 0)`` when it has none.

    Raises:
        UnsafePathError: a symlink or a non-regular file is in the checkpoint file's place.
        StoreError: it is larger than :data:`MAX_CHECKPOINT_BYTES` or cannot be read.
    """
    where = path.with_name(path.name + CHECKPOINT_SUFFIX)
    try:
        data = read_small_file(where, max_bytes=MAX_CHECKPOINT_BYTES)
    except FileNotFoundError:
        return [], 0
    except OSError as exc:
        raise StoreError(f"cannot read the checkpoints of {path}: {exc.strerror or exc}") from exc
    return parse_checkpoints(data)


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{value!r} is not a count")
    return value


@dataclass(frozen=True)
class PrefixCheck:
    """Outcome of checking a file against its checkpoints.

    Attributes:
        checkpoints: how many checkpoints were considered.
        verified_bytes: length of the prefix proven by the last matching checkpoint.
        verified_records: records in that prefix.
        mismatch: the first checkpoint whose prefix digest differs (tampering).
        beyond_end: the first checkpoint that lies past the end of the file (truncation).
    """

    checkpoints: int
    verified_bytes: int
    verified_records: int
    mismatch: Checkpoint | None = None
    beyond_end: Checkpoint | None = None


def check_prefix(fd: int, checkpoints: Sequence[Checkpoint], *, size: int) -> PrefixCheck:
    """Stream the file once and compare its prefix digest at every checkpoint offset.

    Args:
        fd: open descriptor of the data file (read from offset 0).
        checkpoints: as parsed; checked in order of their byte offset.
        size: the file's current length in bytes.

    Raises:
        OSError: reading failed.
    """
    return check_prefix_read(lambda length, at: os.pread(fd, length, at), checkpoints, size=size)


def check_prefix_read(read: ReadAt, checkpoints: Sequence[Checkpoint], *, size: int) -> PrefixCheck:
    """:func:`check_prefix` over ``read(length, offset)`` (at most ``length`` bytes at
    ``offset``; ``b""`` at the end). Offsets are read in increasing order, once each, so
    a :func:`chunk_reader` over a stream serves it.

    The rule: checkpoints are taken in order of their byte offset; the first whose
    offset lies past ``size`` is ``beyond_end``, the first whose prefix digest differs
    is ``mismatch``, and everything before it is verified.
    """
    ordered = sorted(checkpoints, key=lambda c: c.bytes)
    verified_bytes = verified_records = 0
    by_algorithm: dict[Algorithm, tuple[Any, int]] = {}
    for checkpoint in ordered:
        if checkpoint.bytes > size:
            return PrefixCheck(
                len(ordered), verified_bytes, verified_records, beyond_end=checkpoint
            )
        hasher, position = by_algorithm.get(checkpoint.algorithm, (None, 0))
        if hasher is None:
            hasher = new_hasher(checkpoint.algorithm)
        while position < checkpoint.bytes:
            chunk = read(min(_CHUNK, checkpoint.bytes - position), position)
            if not chunk:
                break
            hasher.update(chunk)
            position += len(chunk)
        by_algorithm[checkpoint.algorithm] = (hasher, position)
        if not digests_equal(checkpoint.digest, hasher.copy().hexdigest()):
            return PrefixCheck(len(ordered), verified_bytes, verified_records, mismatch=checkpoint)
        verified_bytes, verified_records = checkpoint.bytes, checkpoint.records
    return PrefixCheck(len(ordered), verified_bytes, verified_records)


def chunk_reader(chunks: Iterable[bytes]) -> ReadAt:
    """A ``read(length, offset)`` for :func:`check_prefix_read` over a stream of chunks
    (an object being downloaded). It returns at most the rest of the current chunk, and
    an offset before the current chunk raises ``ValueError`` (a stream does not go back).
    """
    source = iter(chunks)
    current = b""
    start = 0  # stream offset of current[0]

    def read(length: int, offset: int) -> bytes:
        nonlocal current, start
        while True:
            if offset < start:
                raise ValueError(f"offset {offset} was already read")
            end = start + len(current)
            if offset < end:
                return current[offset - start : offset - start + length]
            chunk = next(source, None)
            if chunk is None:
                return b""
            current, start = chunk, end

    return read


def thin_checkpoints(checkpoints: Sequence[_T], limit: int = MAX_SEALED_CHECKPOINTS) -> list[_T]:
    """At most ``limit`` checkpoints: while there are more, every second one is dropped
    (the odd-numbered ones, so the spacing doubles and the last one is kept when the
    count is even)."""
    kept = list(checkpoints)
    while len(kept) > max(1, limit):
        kept = kept[1::2]
    return kept


def remove_checkpoints(path: Path) -> None:
    """Delete ``<path>.ckpt`` once the file is sealed (the seal covers every byte)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path.with_name(path.name + CHECKPOINT_SUFFIX))
