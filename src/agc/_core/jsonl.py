"""Append-only JSONL writers that hash as they write and seal on close.

* one JSON object per line, UTF-8, ``\\n``-terminated; U+2028/U+2029 are written raw and
  round-trip because lines split only on ``\\n``;
* records are serialized with orjson (compact, raw UTF-8); a record that orjson does
  not take natively or whose bytes hold ``null`` (NaN/Infinity become ``null`` in
  orjson, so they could hide there) goes through the standard library's stricter path
  (:func:`agc._core.json.dumps_stdlib`), which rejects NaN/Infinity, lone surrogates,
  unsupported types and nesting beyond :data:`agc._core.json.MAX_DEPTH`;
* a top-level member may be a :class:`agc._core.json.Canonical` (JSON text proven to
  be the writer's spelling of its value): its bytes are copied, and the line is the one
  its value would give (ingest keeps an agent's compact lines this way);
* :meth:`JsonlFileWriter.write_many` is a loop of :meth:`~JsonlFileWriter.write` at a
  lower cost per record (same bytes, seq numbers, checkpoints and seal);
* the digest is updated with exactly the bytes that reached the file, so sealing never
  re-reads it: closing costs the same for 1 KB and 1 GB;
* while open, crash checkpoints (prefix digests) go to ``<name>.ckpt``
  (:mod:`agc._core.checkpoint`); sealing writes the checksum sidecar
  (``<name>.b3`` / ``<name>.sha256``);
* one writer per file across processes (``flock``), no symlinks followed, never an
  append to a file whose last line is unterminated, and records are validated before a
  byte is written.

:class:`JsonlFileWriter` is this machinery for one file at any path. What differs
between files is passed in, as two objects:

* a :class:`Stamp` builds the object written for a record: :data:`AS_GIVEN` (the
  default) writes it as given; :class:`SeqStamp` puts ``seq`` (0, 1, 2 … per file),
  ``ts`` (Unix ms) and fixed fields (a tool event's ``run_id``) first;
* a :class:`SealPolicy` decides what an existing file means (continue it, refuse it,
  verify it first) and what sealing writes: :class:`SidecarSeal` (the default) writes
  the sidecar only; the run writers (:mod:`agc.integrity`) also write the run manifest,
  its signature and segments; the turn ledger (:mod:`agc.ledger`) re-seals a file after
  verifying its sealed prefix.

The writer calls its policy at three points: :meth:`SealPolicy.before_open` (before a
folder or file is created), :meth:`SealPolicy.adopt` (the file is open and locked: the
policy hashes what it holds and returns the :class:`Prefix` to continue after) and
:meth:`SealPolicy.publish` (at :meth:`JsonlFileWriter.finish`).
"""

from __future__ import annotations

import abc
import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, Protocol, Self

from agc._core.checkpoint import (
    CHECKPOINT_SUFFIX,
    MAX_SEALED_CHECKPOINTS,
    Checkpoint,
    format_checkpoint,
    remove_checkpoints,
    thin_checkpoints,
)
from agc._core.digest import (
    DEFAULT_ALGORITHM,
    Algorithm,
    Hasher,
    check_algorithm,
    new_hasher,
)
from agc._core.fs import (
    MACHINE_ERRNOS,
    atomic_write_bytes,
    ensure_dirs,
    machine_hint,
    open_nofollow,
    write_error,
)
from agc._core.fs import (
    describe_os_error as fs_describe_os_error,
)
from agc._core.json import (
    Canonical,
    JsonInvalidError,
    dumps_stdlib,
    orjson_options,
)
from agc._core.orjson_loader import orjson
from agc._core.sidecar import format_sidecar, sidecar_path, sidecar_paths
from agc._core.words import counted
from agc.errors import (
    ArtifactSealedError,
    RecordInvalidError,
    RunLockedError,
    StoreError,
    TornTailError,
    UnsafePathError,
    WriteFailedError,
    WriterClosedError,
)

__all__ = [
    "AS_GIVEN",
    "DEFAULT_BUFFER_BYTES",
    "DEFAULT_CHECKPOINT_INTERVAL_MS",
    "DEFAULT_CHECKPOINT_RECORDS",
    "FSYNC_POLICIES",
    "FileSeal",
    "FsyncPolicy",
    "JsonlFileWriter",
    "Prefix",
    "SealPolicy",
    "SealsOnExit",
    "SeqStamp",
    "SidecarSeal",
    "Stamp",
    "describe_os_error",
    "make_dirs",
    "read_prefix",
    "refuse_if_sidecar",
    "refuse_torn_tail",
    "unix_ms",
]

FsyncPolicy = Literal["none", "close", "always"]
FSYNC_POLICIES: Final[tuple[FsyncPolicy, ...]] = ("none", "close", "always")
DEFAULT_BUFFER_BYTES: Final = 64 * 1024
DEFAULT_CHECKPOINT_RECORDS: Final = 1000
DEFAULT_CHECKPOINT_INTERVAL_MS: Final = 1000
_PREFIX_CHUNK: Final = 8 * 1024 * 1024
# The writer's options, and orjson ends each line with its newline (no copy to add it).
_LINE_OPTIONS: Final = orjson_options() | orjson.OPT_APPEND_NEWLINE


# Member values that orjson and the standard library spell alike and that cannot be
# NaN or Infinity: when every top-level value of a line has one of these types, orjson's
# bytes are the line, "null" or not (scanning 2 KB for "null" costs more than orjson's
# whole encoding). Integers beyond 64 bits and str subclasses never get here: orjson
# refuses them. A Canonical is spelled alike by both, by construction.
_PLAIN_TYPES: Final = frozenset({str, int, bool, type(None), Canonical})


def _fragment_of(value: Any) -> Any:
    """orjson ``default=``: a :class:`~agc._core.json.Canonical` is copied as its bytes;
    every other type orjson does not take natively is left to the standard library
    (``TypeError``, as :func:`agc._core.json.not_native`)."""
    if type(value) is Canonical:
        return value.fragment
    raise TypeError(f"{type(value).__name__} is left to the standard library")


def unix_ms() -> int:
    """Current Unix time in whole milliseconds."""
    return time.time_ns() // 1_000_000


# -- stamping ---------------------------------------------------------------------------


class Stamp(Protocol):
    """Builds the object written for each record.

    Attributes:
        reserved: keys the writer sets; a record holding one of them is passed to
            :meth:`check` (the common record holds none and skips the call).
    """

    reserved: frozenset[str]

    def body(self, record: Mapping[str, Any], seq: int) -> dict[str, Any]:
        """The object written for ``record``, the ``seq``-th record of the file."""
        ...

    def check(self, record: Mapping[str, Any]) -> None:
        """Raise ``RecordInvalidError`` if ``record`` sets a key the stamp owns."""
        ...


class _AsGiven:
    """Records are written as given: nothing is added, nothing reserved."""

    reserved: frozenset[str] = frozenset()

    def body(self, record: Mapping[str, Any], seq: int) -> dict[str, Any]:  # noqa: ARG002
        return {**record}

    def check(self, record: Mapping[str, Any]) -> None:  # noqa: ARG002
        return None


AS_GIVEN: Final[Stamp] = _AsGiven()
"""The default :class:`Stamp`: records as given."""


class SeqStamp:
    """``{"seq": n, "ts": <Unix ms>, **fixed, **record}``.

    Args:
        clock: returns Unix time in ms for ``ts``.
        fixed: fields every record gets after ``seq``/``ts`` (a tool event's
            ``run_id``); a record may carry one only with the same value (it then keeps
            this position and value).

    ``seq`` and ``ts`` are reserved: a record that sets them is refused.
    """

    def __init__(self, clock: Callable[[], int], fixed: Mapping[str, Any] | None = None) -> None:
        self._clock = clock
        self._fixed = dict(fixed or {})
        self.reserved: frozenset[str] = frozenset({"seq", "ts", *self._fixed})

    def body(self, record: Mapping[str, Any], seq: int) -> dict[str, Any]:
        return {"seq": seq, "ts": self._clock(), **self._fixed, **record}

    def check(self, record: Mapping[str, Any]) -> None:
        clash = [key for key in ("seq", "ts") if key in record]
        if clash:
            raise RecordInvalidError(
                f"record uses the reserved key(s) {', '.join(clash)}; the writer sets them"
            )
        for key, value in self._fixed.items():
            if key in record and record[key] != value:
                raise RecordInvalidError(
                    f"record has {key} {record[key]!r} but the writer is for {value!r}"
                )


# -- sealing ------------------------------------------------------------------------------


@dataclass
class Prefix:
    """What a writer continues after: the file's existing content, hashed once.

    Attributes:
        algorithm: the digest algorithm the file is (or will be) sealed with.
        hasher: the hasher over the existing bytes (updated as records are written).
        bytes: existing length in bytes.
        records: existing records (lines).
        ends_with_newline: the existing content is empty or ends with ``\\n``.
    """

    algorithm: Algorithm
    hasher: Hasher
    bytes: int = 0
    records: int = 0
    ends_with_newline: bool = True


def read_prefix(fd: int, algorithm: Algorithm) -> Prefix:
    """Hash everything ``fd`` holds, once, from offset 0 (``pread``: the offset of an
    ``O_APPEND`` descriptor does not matter).

    Raises:
        OSError: reading failed.
    """
    hasher = new_hasher(algorithm)
    size = records = 0
    last = b""
    while chunk := os.pread(fd, _PREFIX_CHUNK, size):
        hasher.update(chunk)
        records += chunk.count(b"\n")
        size += len(chunk)
        last = chunk[-1:]
    return Prefix(algorithm, hasher, size, records, ends_with_newline=last in {b"", b"\n"})


def refuse_torn_tail(path: Path, *, ends_with_newline: bool) -> None:
    """Raise ``TornTailError`` unless the file ends on a record boundary."""
    if not ends_with_newline:
        raise TornTailError(
            f"{path} ends in an unterminated line (a crash mid-write?); "
            "agc does not append after it"
        )


def refuse_if_sidecar(path: Path) -> None:
    """Raise ``ArtifactSealedError`` when ``path`` has a sidecar (of any algorithm)."""
    for sidecar in sidecar_paths(path).values():
        if os.path.lexists(sidecar):
            raise ArtifactSealedError(
                f"{path} is sealed ({sidecar.name} exists); it is never appended to"
            )


class SealPolicy(Protocol):
    """What an existing file means and what sealing writes (see the module docstring)."""

    def describe(self, path: Path) -> str:
        """How messages name the file (``"transcript of run r1"``)."""
        ...

    def before_open(self, path: Path) -> None:
        """Refuse early (nothing created yet) and create folders beside the file's own.

        Raises:
            AgcError: the file may not be written (``ArtifactSealedError`` …).
        """
        ...

    def adopt(self, fd: int, path: Path, algorithm: Algorithm) -> Prefix:
        """Decide about the existing content, under the writer's lock.

        Args:
            fd: the open, locked, regular file (``O_RDWR | O_APPEND``).
            path: its path.
            algorithm: the algorithm the writer was given.

        Returns:
            The prefix to continue after (its algorithm may differ from the given one).

        Raises:
            AgcError: the existing content may not be continued.
            OSError: reading failed.
        """
        ...

    def publish(self, seal: FileSeal) -> None:
        """Record the seal (the sidecar, and whatever else the policy keeps).

        Raises:
            OSError, StoreError: it could not be written.
        """
        ...


class SidecarSeal:
    """Seal with the checksum sidecar only.

    Args:
        reseal: continue a file that is already sealed and replace its sidecar when
            sealing again (the caller verifies the sealed prefix first, as the turn
            ledger does); by default a sealed file is refused.

    An existing unsealed file is continued after its content is hashed once; one that
    ends in an unterminated line is refused (``TornTailError``).
    """

    def __init__(self, *, reseal: bool = False) -> None:
        self.reseal = reseal

    def describe(self, path: Path) -> str:
        return str(path)

    def before_open(self, path: Path) -> None:
        if not self.reseal:
            refuse_if_sidecar(path)

    def adopt(self, fd: int, path: Path, algorithm: Algorithm) -> Prefix:
        if not self.reseal:
            refuse_if_sidecar(path)  # again, under the lock
        prefix = read_prefix(fd, algorithm)
        refuse_torn_tail(path, ends_with_newline=prefix.ends_with_newline)
        return prefix

    def publish(self, seal: FileSeal) -> None:
        atomic_write_bytes(
            seal.sidecar, format_sidecar(seal.digest, seal.path.name), overwrite=self.reseal
        )


class SealsOnExit(abc.ABC):
    """Context-manager protocol shared by writers: seal on a clean exit, abort on error."""

    @abc.abstractmethod
    def _seal_on_exit(self) -> object:
        """Seal (called on a clean exit of the ``with`` body)."""

    @abc.abstractmethod
    def abort(self) -> None:
        """Release without sealing."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self._seal_on_exit()
        else:
            self.abort()


@dataclass(frozen=True)
class FileSeal:
    """The sealed state of one file written by a :class:`JsonlFileWriter`.

    Attributes:
        path: the sealed file.
        sidecar: its checksum sidecar (``<name>.b3`` / ``<name>.sha256``).
        algorithm: ``"blake3"`` or ``"sha256"``.
        digest: lower-case hex digest of the whole file's bytes.
        bytes: file length in bytes.
        records: number of records (lines) in the whole file.
        checkpoints: the crash checkpoints this writer took (prefix digests of the
            whole file, in order; at most :data:`~agc._core.checkpoint.MAX_SEALED_CHECKPOINTS`,
            thinned evenly), kept so that a verifier can say where a later change is.
    """

    path: Path
    sidecar: Path
    algorithm: Algorithm
    digest: str
    bytes: int
    records: int
    checkpoints: tuple[Checkpoint, ...] = ()


class JsonlFileWriter(SealsOnExit):
    """Append-only, hash-while-writing JSONL writer for one file at any path.

    By default records are written as given (one compact JSON object per line), an
    existing unsealed file is continued after its content is hashed once at open, and
    :meth:`finish` seals the file with its checksum sidecar. As a context manager it
    seals on a clean exit and releases the file unsealed if the ``with`` body raises.

    Args:
        path: the file; its folder is created, the file itself is never a symlink.
        algorithm: ``"blake3"`` (default) or ``"sha256"`` (the seal policy may keep the
            algorithm an existing file was sealed with).
        fsync: ``"none"``, ``"close"`` (default: fsync once when sealing) or
            ``"always"`` (fsync after every record).
        buffer_bytes: records are written once this many bytes are buffered (and on
            :meth:`flush` / :meth:`finish`); ``0`` writes every record at once.
        checkpoint_records: write a crash checkpoint (``<name>.ckpt``) at least every
            this many records (``0`` disables the count trigger).
        checkpoint_interval_ms: and at the first write after this many ms since the
            last checkpoint (``0`` disables the time trigger).
        clock: returns Unix time in ms (checkpoint ``ts``); defaults to the system clock.
        stamp: builds the object written for each record (default :data:`AS_GIVEN`).
        seal_policy: what an existing file means and what sealing writes (default
            :class:`SidecarSeal`: refuse a sealed file, write the sidecar).

    Raises:
        ArtifactSealedError: the file already has a sidecar (the default policy).
        TornTailError: the existing file ends in an unterminated line.
        RunLockedError: another writer holds the file.
        UnsafePathError: the file is a symlink or not a regular file (a FIFO, a device).
        StoreError: the folder cannot be created or the file cannot be written.
        AgcError: whatever else the seal policy refuses.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        algorithm: Algorithm = DEFAULT_ALGORITHM,
        fsync: FsyncPolicy = "close",
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
        checkpoint_records: int = DEFAULT_CHECKPOINT_RECORDS,
        checkpoint_interval_ms: int = DEFAULT_CHECKPOINT_INTERVAL_MS,
        clock: Callable[[], int] | None = None,
        stamp: Stamp = AS_GIVEN,
        seal_policy: SealPolicy | None = None,
    ) -> None:
        self.algorithm = check_algorithm(algorithm)
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy {fsync!r} is not one of {FSYNC_POLICIES}")
        self.fsync_policy: FsyncPolicy = fsync
        self.path: Path = Path(path)
        self._clock = clock or unix_ms
        self._stamp = stamp
        # Looked up once: both run for every record.
        self._stamp_body = stamp.body
        self._reserved = stamp.reserved
        # A SeqStamp's body is built inline (one call less a record). It adds exactly
        # its reserved keys, so a record sets one of them exactly when the body has
        # fewer keys than the two together.
        self._seq_fields = (stamp._clock, stamp._fixed) if type(stamp) is SeqStamp else None
        self._width = len(stamp.reserved)
        self._seal_policy: SealPolicy = seal_policy if seal_policy is not None else SidecarSeal()
        self._buffer_limit = max(0, buffer_bytes)
        # Under "always" every record is written (and fsynced) at once.
        self._flush_at = 0 if fsync == "always" else self._buffer_limit
        self._fsync_each = fsync == "always"
        self._buffer = bytearray()
        self._buffered_records = 0
        self._closed = True  # until the file is open and locked
        self._failed = False
        self.file_seal: FileSeal | None = None
        self._checkpoint_records = max(0, checkpoint_records)
        self._checkpoint_interval_ns = max(0, checkpoint_interval_ms) * 1_000_000
        self._checkpoint_fd: int | None = None
        self._taken: list[Checkpoint] = []
        self._taken_stride = 0  # records between kept checkpoints, once thinned
        self._checkpointed_bytes = -1  # the length the last checkpoint vouched for
        self._seal_policy.before_open(self.path)
        make_dirs(self.path.parent)
        try:
            self._fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            if exc.errno in MACHINE_ERRNOS:
                raise write_error(self.path, exc, doing="open") from exc
            raise StoreError(
                f"cannot open {self.path} for writing: {exc.strerror}",
                hint=f"Check that {self.path.parent} exists and that you may write it.",
            ) from exc
        try:
            if not stat.S_ISREG(os.fstat(self._fd).st_mode):
                raise UnsafePathError(f"{self.path} is not a regular file; agc writes only files")
            self._lock()
            prefix = self._seal_policy.adopt(self._fd, self.path, self.algorithm)
        except BaseException:
            os.close(self._fd)
            self._closed = True  # so that __del__ does not close a reused descriptor
            raise
        self.algorithm = prefix.algorithm
        self._hasher: Hasher = prefix.hasher
        self.bytes_written = prefix.bytes
        self.records_written = prefix.records
        self._closed = False
        self._schedule_checkpoint()

    # -- public API -------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def next_seq(self) -> int:
        """The ``seq`` the next record will get (records in the file + buffered)."""
        return self.records_written + self._buffered_records

    def write(self, record: Mapping[str, Any]) -> int:
        """Append one record and return its ``seq`` (its 0-based line number).

        The record is validated and serialized before any byte is written.

        A top-level member value may be a :class:`~agc._core.json.Canonical` (JSON text
        proven to be the writer's own spelling of its value): its bytes are copied, and
        the line is the one the value itself would give.

        Raises:
            RecordInvalidError: not a mapping with string keys, holds NaN/Infinity, a
                lone surrogate, a value JSON cannot encode, nesting deeper than
                :data:`agc._core.json.MAX_DEPTH`, or a key the stamp reserves.
            WriterClosedError: the writer is closed or failed earlier.
            WriteFailedError: the write failed (disk full …); complete records stay.
        """
        if self._closed or self._failed:
            self._check_usable()
        seq = self.records_written + self._buffered_records
        self._buffer += self._encode(record, seq)
        self._buffered_records += 1
        if len(self._buffer) >= self._flush_at:
            self._write_buffer()
            if self._fsync_each:
                self._fsync()
        # Inline on purpose: this runs for every record (see benchmarks/, writer).
        if seq >= self._checkpoint_at_seq or time.monotonic_ns() >= self._checkpoint_deadline_ns:
            self._write_buffer()
            self._checkpoint()
        return seq

    def write_many(self, records: Iterable[Mapping[str, Any]]) -> range:
        """Append records in order; return their ``seq`` numbers (a ``range``).

        The same as ``for record in records: self.write(record)``, at a lower cost per
        record: the same bytes, seq numbers, buffering, fsyncs and checkpoints (at the
        same record counts and deadlines), hence the same seal. Records are read from
        ``records`` one at a time (a generator is never held whole).

        A record that :meth:`write` would refuse stops the batch there: the records
        before it are written (buffered like any record: in the file by the next
        flush, checkpoint or seal, and counted in :attr:`next_seq`), nothing from it on
        is, and the error is the one :meth:`write` raises for it, with a note naming
        its place in the batch. The writer stays usable, as after a refused
        :meth:`write`. A failed write (``WriteFailedError``) fails the writer, as it
        does in :meth:`write`.

        Raises:
            RecordInvalidError, WriterClosedError, WriteFailedError: as :meth:`write`.
        """
        if self._closed or self._failed:
            self._check_usable()
        first = seq = self.records_written + self._buffered_records
        index = 0
        # Looked up once for the whole batch: the loop below runs for every record.
        stamp_body, reserved, finish = self._stamp_body, self._reserved, self._finish_encode
        seq_stamp = self._seq_fields is not None
        clock, fixed = self._seq_fields or (unix_ms, {})
        width = self._width
        buffer, dumps, plain = self._buffer, orjson.dumps, _PLAIN_TYPES
        flush_at, monotonic = self._flush_at, time.monotonic_ns
        try:
            for index, record in enumerate(records):  # noqa: B007 - index: the note below
                # Read back each time: the iterable may be a generator that uses the writer
                # (and may even finish or abort it, after which write() would refuse).
                if self._closed or self._failed:
                    self._check_usable()
                seq = self.records_written + self._buffered_records
                # write()'s _encode, inline.
                if type(record) is not dict and not isinstance(record, Mapping):
                    finish(record, None, None)  # raises RecordInvalidError
                if seq_stamp:
                    body = {"seq": seq, "ts": clock(), **fixed, **record}
                    clash = len(body) != len(record) + width
                else:
                    body = stamp_body(record, seq)
                    clash = bool(reserved) and not reserved.isdisjoint(record)
                try:
                    line: bytes | None = dumps(body, default=_fragment_of, option=_LINE_OPTIONS)
                except TypeError:
                    line = None
                if (
                    line is None
                    or clash
                    or not (plain.issuperset(map(type, body.values())) or b"null" not in line)
                ):
                    line = finish(record, body, line)
                buffer += line
                self._buffered_records += 1
                if len(buffer) >= flush_at:
                    self._write_buffer()
                    if self._fsync_each:
                        self._fsync()
                if seq >= self._checkpoint_at_seq or monotonic() >= self._checkpoint_deadline_ns:
                    self._write_buffer()
                    self._checkpoint()
                seq += 1
        except RecordInvalidError as exc:
            exc.add_note(
                f"record {index} of the batch (seq {seq}) was refused: the {index} "
                "records before it are written, none from it on"
            )
            raise
        return range(first, seq)

    def flush(self) -> None:
        """Write buffered records to the file (and fsync under the ``always`` policy)."""
        self._check_usable()
        self._write_buffer()
        if self.fsync_policy == "always":
            self._fsync()

    def checkpoint(self) -> None:
        """Write buffered records, then a crash checkpoint that vouches for every record
        written so far (a writer released unsealed after it can be continued, or
        recovered, with nothing unvouched).

        Raises:
            WriterClosedError: the writer is closed or failed earlier.
            WriteFailedError: the records or the checkpoint could not be written.
        """
        self.flush()
        self._checkpoint()

    def current_digest(self) -> str:
        """Write buffered records and return the hex digest of the file's bytes so far.

        Raises:
            WriterClosedError, WriteFailedError: as :meth:`flush`.
        """
        self.flush()
        return self._hasher.hexdigest()

    def finish(self) -> FileSeal:
        """Flush, fsync (unless policy ``none``), seal, and release the file.

        Sealing is the seal policy's :meth:`~SealPolicy.publish` (the sidecar, and for
        run artifacts the manifest); the crash checkpoints are then removed, since the
        seal covers every byte. Returns the seal; finishing twice returns the same seal.

        Raises:
            WriteFailedError: the final write or fsync failed; nothing is sealed.
            WriterClosedError: the writer failed earlier and cannot be sealed.
            StoreError: the seal could not be written.
        """
        if self.file_seal is not None:
            return self.file_seal
        self._check_usable()
        try:
            self._write_buffer()
            if self.fsync_policy != "none":
                self._fsync()
            seal = FileSeal(
                path=self.path,
                sidecar=sidecar_path(self.path, self.algorithm),
                algorithm=self.algorithm,
                digest=self._hasher.hexdigest(),
                bytes=self.bytes_written,
                records=self.records_written,
                checkpoints=tuple(self._taken),
            )
            self._seal_policy.publish(seal)
            remove_checkpoints(self.path)
        except OSError as exc:
            self._failed = True
            raise StoreError(
                f"sealing {self.path} failed: {describe_os_error(exc)}",
                hint=f"Check that you may write {self.path.parent}; the file is unsealed.",
            ) from exc
        finally:
            self._release()
        self.file_seal = seal
        return seal

    def abort(self) -> None:
        """Write what is buffered and release the file without sealing it.

        A last crash checkpoint covers every record written, so that the verifier shows
        the whole unsealed file as verified and ``agc recover`` can seal it.
        """
        if self._closed:
            return
        try:
            if not self._failed:
                self._write_buffer()
                if self.fsync_policy != "none":
                    self._fsync()
                if self.records_written and self._checkpointed_bytes != self.bytes_written:
                    with contextlib.suppress(WriteFailedError):  # a help, not a must
                        self._checkpoint()
        finally:
            self._release()

    def _seal_on_exit(self) -> object:
        return self.finish()

    def __del__(self) -> None:
        # A writer dropped without finish() must not leak its descriptor or lock.
        if not getattr(self, "_closed", True):
            self._release()

    # -- internals --------------------------------------------------------------------

    def _encode(self, record: Mapping[str, Any], seq: int) -> bytes:
        """The line (ending in ``\\n``) written for ``record``; raises ``RecordInvalidError``."""
        if type(record) is not dict and not isinstance(record, Mapping):
            self._finish_encode(record, None, None)  # raises
        seq_fields = self._seq_fields
        if seq_fields is not None:
            body = {"seq": seq, "ts": seq_fields[0](), **seq_fields[1], **record}
            clash = len(body) != len(record) + self._width
        else:
            body = self._stamp_body(record, seq)
            clash = not self._reserved.isdisjoint(record)
        # Fast path: orjson, inline (agc._core.json.dumps is the same rule as a call).
        # It refuses non-string keys, integers beyond 64 bits, lone surrogates, nesting
        # deeper than 254 and (via _fragment_of) types the standard library refuses; it
        # writes NaN/Infinity as null, so a line that may hold a float and holds "null"
        # goes to the standard library's path too, which rejects them (and spells
        # floats its own way, as this writer always has).
        try:
            data: bytes | None = orjson.dumps(body, default=_fragment_of, option=_LINE_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            data = None
        if (
            data is not None
            and not clash
            and (_PLAIN_TYPES.issuperset(map(type, body.values())) or b"null" not in data)
        ):
            return data
        return self._finish_encode(record, body, data)

    def _finish_encode(
        self, record: Mapping[str, Any], body: dict[str, Any] | None, data: bytes | None
    ) -> bytes:
        """What :meth:`_encode` does after orjson's attempt (``data``, ``None`` if it
        refused) when the line may hold NaN, orjson refused, or a key is reserved.
        ``body`` is ``None`` when ``record`` is not a mapping."""
        if body is None:
            raise RecordInvalidError(
                f"record must be a JSON object (a mapping), not {type(record).__name__}"
            )
        if data is not None and (
            _PLAIN_TYPES.issuperset(map(type, body.values())) or b"null" not in data
        ):  # every key is a string; a reserved key is checked here
            self._stamp.check(record)
            return data
        if any(not isinstance(key, str) for key in record):
            raise RecordInvalidError("record keys must be strings")
        self._stamp.check(record)
        try:
            # orjson took it (data is not None): keys are strings, nesting is shallow
            # (a Canonical's own depth is at most 254 too: within MAX_DEPTH together).
            return dumps_stdlib(body, checked=data is not None) + b"\n"
        except JsonInvalidError as exc:
            if exc.problem == "surrogate":
                raise RecordInvalidError(f"record holds a lone surrogate: {exc.message}") from exc
            raise RecordInvalidError(f"record cannot be written as JSON: {exc.message}") from exc

    def _check_usable(self) -> None:
        if self._closed:
            raise WriterClosedError(f"writer for {self.path} is closed")
        if self._failed:
            raise WriterClosedError(f"writer for {self.path} failed earlier")

    def _write_buffer(self) -> None:
        buffer = self._buffer
        if not buffer:
            return
        count = self._buffered_records
        self._buffered_records = 0
        done = 0
        try:
            # No memoryview: the buffer must stay resizable whatever is raised here. A
            # short write (rare: a signal, a nearly full disk) copies the rest.
            done = os.write(self._fd, buffer)
            while done < len(buffer):
                done += os.write(self._fd, buffer[done:])
        except OSError as exc:
            self._failed = True
            data = bytes(buffer)
            buffer.clear()
            kept = data.rfind(b"\n", 0, done) + 1
            note = self._undo_partial_line(kept, done)
            self._account(data[:kept], data[:kept].count(b"\n"))
            lost = count - data[:kept].count(b"\n")
            raise WriteFailedError(
                f"writing {self.path} failed ({describe_os_error(exc)}): "
                f"{counted(self.records_written, 'record')} "
                f"{'is' if self.records_written == 1 else 'are'} complete on disk, "
                f"{counted(lost, 'buffered record')} {'was' if lost == 1 else 'were'} not "
                f"written{note}",
                records_written=self.records_written,
                hint=machine_hint(exc),
            ) from exc
        except BaseException:
            buffer.clear()  # as if written: a KeyboardInterrupt between two writes
            raise
        self._account(buffer, count)
        buffer.clear()

    def _undo_partial_line(self, kept: int, done: int) -> str:
        """Cut a partly written line so the file ends on a record boundary again."""
        if kept == done:
            return ""
        try:
            os.ftruncate(self._fd, self.bytes_written + kept)
        except OSError:
            return f"; a partial line of {done - kept} bytes remains (a torn tail)"
        return ""

    def _account(self, data: bytes | bytearray, records: int) -> None:
        self._hasher.update(data)
        self.bytes_written += len(data)
        self.records_written += records

    def _fsync(self) -> None:
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self._failed = True
            raise WriteFailedError(
                f"fsync of {self.path} failed ({describe_os_error(exc)})",
                records_written=self.records_written,
                hint=machine_hint(exc),
            ) from exc

    def _release(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._fd)
            if self._checkpoint_fd is not None:
                os.close(self._checkpoint_fd)
                self._checkpoint_fd = None

    def _lock(self) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            # The other writer may have sealed the file meanwhile: then the policy says
            # so (ArtifactSealedError), since "wait for the other writer" would not help.
            self._seal_policy.before_open(self.path)
            raise RunLockedError(
                f"{self._seal_policy.describe(self.path)} is already open in another writer"
            ) from exc

    def _schedule_checkpoint(self) -> None:
        """Set when the next checkpoint is due: after N more records or T more ns."""
        never = 1 << 62
        self._checkpoint_at_seq = (
            self.records_written + self._checkpoint_records - 1
            if self._checkpoint_records
            else never
        )
        self._checkpoint_deadline_ns = (
            time.monotonic_ns() + self._checkpoint_interval_ns
            if self._checkpoint_interval_ns
            else never
        )

    def _keep(self, checkpoint: Checkpoint) -> None:
        """Keep the checkpoint for the seal: at most ``MAX_SEALED_CHECKPOINTS``, spaced
        about evenly (once thinned, one at most every ``_taken_stride`` records)."""
        taken = self._taken
        if taken and checkpoint.records - taken[-1].records < self._taken_stride:
            return
        taken.append(checkpoint)
        if len(taken) > MAX_SEALED_CHECKPOINTS:
            self._taken = thin_checkpoints(taken)
            self._taken_stride = self._taken[-1].records // len(self._taken)

    def _checkpoint(self) -> None:
        """Append ``{records, bytes, digest}`` of the written prefix to ``<name>.ckpt``."""
        checkpoint = Checkpoint(
            records=self.records_written,
            bytes=self.bytes_written,
            algorithm=self.algorithm,
            digest=self._hasher.copy().hexdigest(),
            ts=self._clock(),
        )
        try:
            if self._checkpoint_fd is None:
                self._checkpoint_fd = open_nofollow(
                    self.path.with_name(self.path.name + CHECKPOINT_SUFFIX),
                    os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                    0o644,
                )
            os.write(self._checkpoint_fd, format_checkpoint(checkpoint))
            if self.fsync_policy == "always":
                os.fsync(self._checkpoint_fd)
            self._keep(checkpoint)
            self._checkpointed_bytes = checkpoint.bytes
        except OSError as exc:
            self._failed = True
            raise WriteFailedError(
                f"writing the checkpoint of {self.path} failed ({describe_os_error(exc)})",
                records_written=self.records_written,
                hint=machine_hint(exc),
            ) from exc
        self._schedule_checkpoint()


def make_dirs(*folders: Path) -> None:
    """Create folders: :func:`agc._core.fs.ensure_dirs` (``FileWriteError``, ``StoreError``)."""
    ensure_dirs(*folders)


def describe_os_error(exc: OSError) -> str:
    """The cause of ``exc`` in words: :func:`agc._core.fs.describe_os_error`."""
    return fs_describe_os_error(exc)
