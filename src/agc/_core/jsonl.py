"""Append-only JSONL writers that hash as they write and seal on close.

Seed 004's ``createTranscriptWriter`` / ``createToolEventWriter`` appended
``{...entry, ts}`` lines and re-read the whole file at close to write a checksum. Here:

* each record gets ``seq`` (0, 1, 2 … per file) and ``ts`` (Unix ms); tool events also
  ``run_id``. One JSON object per line, UTF-8, ``\\n``-terminated; U+2028/U+2029 are
  written raw and round-trip because lines split only on ``\\n``;
* records are serialized with orjson (compact, raw UTF-8); a record that orjson does
  not take natively or whose bytes hold ``null`` (NaN/Infinity become ``null`` in
  orjson, so they could hide there) goes through the standard library's stricter path,
  which rejects NaN/Infinity, lone surrogates and unsupported types;
* the digest is updated with exactly the bytes that reached the file, so sealing never
  re-reads it: closing costs the same for 1 KB and 1 GB;
* while open, crash checkpoints (prefix digests) go to ``<name>.ckpt``
  (:mod:`agc._core.checkpoint`); sealing writes the checksum sidecar
  (``<name>.b3`` / ``<name>.sha256``) and, for run artifacts, the run manifest entry;
* one writer per file across processes (``flock``), no symlinks followed, never an
  append to a sealed file or to a file whose last line is unterminated, and records are
  validated before a byte is written.

The machinery lives in :class:`JsonlFileWriter`, which writes one JSONL file at any
path (records as given, no ``seq``/``ts``) and seals it with a sidecar only; the run
writers (:class:`TranscriptWriter`, :class:`ToolEventWriter`) add the store layout,
``seq``/``ts``, the run manifest, signatures and re-opening as segments. Files outside a
store, such as the turn ledger (:mod:`agc.ledger`), use :class:`JsonlFileWriter`.
"""

from __future__ import annotations

import abc
import contextlib
import fcntl
import json
import os
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Final, Literal, Self

import orjson

from agc._core.checkpoint import (
    CHECKPOINT_SUFFIX,
    Checkpoint,
    format_checkpoint,
    remove_checkpoints,
)
from agc._core.digest import (
    DEFAULT_ALGORITHM,
    SIDECAR_SUFFIXES,
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
from agc._core.sidecar import format_sidecar, sidecar_name
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
    "DEFAULT_BUFFER_BYTES",
    "DEFAULT_CHECKPOINT_INTERVAL_MS",
    "DEFAULT_CHECKPOINT_RECORDS",
    "FSYNC_POLICIES",
    "FileSeal",
    "FsyncPolicy",
    "JsonlFileWriter",
    "SealsOnExit",
    "describe_os_error",
    "make_dirs",
    "unix_ms",
]

FsyncPolicy = Literal["none", "close", "always"]
FSYNC_POLICIES: Final[tuple[FsyncPolicy, ...]] = ("none", "close", "always")
DEFAULT_BUFFER_BYTES: Final = 64 * 1024
DEFAULT_CHECKPOINT_RECORDS: Final = 1000
DEFAULT_CHECKPOINT_INTERVAL_MS: Final = 1000
_PREFIX_CHUNK: Final = 8 * 1024 * 1024


def unix_ms() -> int:
    """Current Unix time in whole milliseconds."""
    return time.time_ns() // 1_000_000


# Types orjson would serialize where the standard library refuses (datetime,
# dataclasses, subclasses of builtins) are passed to ``_not_native`` instead, which
# sends the record to the standard-library path: the same verdict as before orjson.
_ORJSON_OPTIONS: Final = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _not_native(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is left to the standard library")


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
    """

    path: Path
    sidecar: Path
    algorithm: Algorithm
    digest: str
    bytes: int
    records: int


class JsonlFileWriter(SealsOnExit):
    """Append-only, hash-while-writing JSONL writer for one file at any path.

    Records are written as given (one compact JSON object per line); an existing
    unsealed file is continued after its content is hashed once at open. :meth:`finish`
    seals the file with its checksum sidecar. As a context manager it seals on a clean
    exit and releases the file unsealed if the ``with`` body raises.

    Args:
        path: the file; its folder is created, the file itself is never a symlink.
        algorithm: ``"blake3"`` (default) or ``"sha256"``.
        fsync: ``"none"``, ``"close"`` (default: fsync once when sealing) or
            ``"always"`` (fsync after every record).
        buffer_bytes: records are written once this many bytes are buffered (and on
            :meth:`flush` / :meth:`finish`); ``0`` writes every record at once.
        checkpoint_records: write a crash checkpoint (``<name>.ckpt``) at least every
            this many records (``0`` disables the count trigger).
        checkpoint_interval_ms: and at the first write after this many ms since the
            last checkpoint (``0`` disables the time trigger).
        clock: returns Unix time in ms (checkpoint ``ts``); defaults to the system clock.

    Raises:
        ArtifactSealedError: the file already has a sidecar (subclasses may allow it).
        TornTailError: the existing file ends in an unterminated line.
        RunLockedError: another writer holds the file.
        UnsafePathError: the file is a symlink or not a regular file (a FIFO, a device).
        StoreError: the folder cannot be created or the file cannot be written.
    """

    _reserved: ClassVar[tuple[str, ...]] = ()
    # Keys whose presence sends a record through _check_reserved (the common record
    # has none of them and skips the call).
    _checked_keys: ClassVar[frozenset[str]] = frozenset()
    _replace_sidecar: ClassVar[bool] = False
    """Whether sealing may replace an existing sidecar (only after verifying it)."""

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
    ) -> None:
        self.algorithm = check_algorithm(algorithm)
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy {fsync!r} is not one of {FSYNC_POLICIES}")
        self.fsync_policy: FsyncPolicy = fsync
        self.path: Path = Path(path)
        self._clock = clock or unix_ms
        self._stamp_fields = self._stamp()
        self._buffer_limit = max(0, buffer_bytes)
        self._buffer = bytearray()
        self._buffered_records = 0
        self._closed = True  # until the file is open and locked
        self._failed = False
        self.file_seal: FileSeal | None = None
        self._checkpoint_records = max(0, checkpoint_records)
        self._checkpoint_interval_ns = max(0, checkpoint_interval_ms) * 1_000_000
        self._checkpoint_fd: int | None = None
        self._refuse_before_open()
        make_dirs(self.path.parent, *self._extra_dirs())
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
            self._hasher: Hasher = new_hasher(self.algorithm)
            self.bytes_written = self.records_written = 0
            self._open_existing()
        except BaseException:
            os.close(self._fd)
            self._closed = True  # so that __del__ does not close a reused descriptor
            raise
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

        Raises:
            RecordInvalidError: not a mapping with string keys, holds NaN/Infinity, a
                lone surrogate, a value JSON cannot encode, or a reserved key.
            WriterClosedError: the writer is closed or failed earlier.
            WriteFailedError: the write failed (disk full …); complete records stay.
        """
        if self._closed or self._failed:
            self._check_usable()
        seq = self.records_written + self._buffered_records
        self._buffer += self._encode(record, seq)
        self._buffered_records += 1
        if len(self._buffer) >= self._buffer_limit or self.fsync_policy == "always":
            self._write_buffer()
            if self.fsync_policy == "always":
                self._fsync()
        # Inline on purpose: this runs for every record (see benchmarks/, writer).
        if seq >= self._checkpoint_at_seq or time.monotonic_ns() >= self._checkpoint_deadline_ns:
            self._write_buffer()
            self._checkpoint()
        return seq

    def flush(self) -> None:
        """Write buffered records to the file (and fsync under the ``always`` policy)."""
        self._check_usable()
        self._write_buffer()
        if self.fsync_policy == "always":
            self._fsync()

    def current_digest(self) -> str:
        """Write buffered records and return the hex digest of the file's bytes so far.

        Raises:
            WriterClosedError, WriteFailedError: as :meth:`flush`.
        """
        self.flush()
        return self._hasher.hexdigest()

    def finish(self) -> FileSeal:
        """Flush, fsync (unless policy ``none``), seal, and release the file.

        Sealing writes the sidecar (and, in subclasses, the seal record); the crash
        checkpoints are then removed, since the seal covers every byte. Returns the
        seal; finishing twice returns the same seal.

        Raises:
            WriteFailedError: the final write or fsync failed; nothing is sealed.
            WriterClosedError: the writer failed earlier and cannot be sealed.
            StoreError: the sidecar (or a subclass's seal record) could not be written.
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
                sidecar=self.path.with_name(sidecar_name(self.path.name, self.algorithm)),
                algorithm=self.algorithm,
                digest=self._hasher.hexdigest(),
                bytes=self.bytes_written,
                records=self.records_written,
            )
            self._publish_seal(seal)
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
                if self.records_written:
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

    # -- hooks for subclasses -----------------------------------------------------------

    def _body(self, record: Mapping[str, Any], seq: int) -> dict[str, Any]:  # noqa: ARG002
        """The object written for ``record`` (the run writers add ``seq`` and ``ts``)."""
        return {**self._stamp_fields, **record}

    def _stamp(self) -> dict[str, Any]:
        return {}

    def _extra_dirs(self) -> tuple[Path, ...]:
        """Folders created with the file's own folder before it is opened."""
        return ()

    def _describe(self) -> str:
        return str(self.path)

    def _refuse_before_open(self) -> None:
        self._refuse_if_sealed()

    def _open_existing(self) -> None:
        """Decide what to do with existing content, under the lock (default: continue)."""
        self._refuse_if_sealed()
        self.bytes_written, self.records_written = self._adopt_existing_prefix()

    def _publish_seal(self, seal: FileSeal) -> None:
        """Write the checksum sidecar; subclasses also record the seal elsewhere."""
        atomic_write_bytes(
            seal.sidecar,
            format_sidecar(seal.digest, self.path.name),
            overwrite=self._replace_sidecar,
        )

    def _refuse_if_sealed(self) -> None:
        for suffix in SIDECAR_SUFFIXES.values():
            sidecar = self.path.with_name(self.path.name + suffix)
            if os.path.lexists(sidecar):
                raise ArtifactSealedError(
                    f"{self.path} is sealed ({sidecar.name} exists); it is never appended to"
                )

    # -- internals --------------------------------------------------------------------

    def _encode(self, record: Mapping[str, Any], seq: int) -> bytes:
        if type(record) is not dict and not isinstance(record, Mapping):
            raise RecordInvalidError(
                f"record must be a JSON object (a mapping), not {type(record).__name__}"
            )
        body = self._body(record, seq)
        # Fast path: orjson. It refuses non-string keys, integers beyond 64 bits, lone
        # surrogates, nesting deeper than 254 and (via _not_native) types the standard
        # library refuses; it writes NaN/Infinity as null, so bytes holding "null" go
        # to the standard library's path too, which rejects them.
        try:
            data: bytes | None = orjson.dumps(body, default=_not_native, option=_ORJSON_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            data = None
        if data is not None and b"null" not in data:  # every key is a string
            if not self._checked_keys.isdisjoint(record):
                self._check_reserved(record)
            return data + b"\n"
        if any(not isinstance(key, str) for key in record):
            raise RecordInvalidError("record keys must be strings")
        self._check_reserved(record)
        try:
            text = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
            return text.encode("utf-8") + b"\n"
        except (ValueError, TypeError, RecursionError) as exc:
            raise RecordInvalidError(f"record cannot be written as JSON: {exc}") from exc
        except UnicodeEncodeError as exc:
            raise RecordInvalidError(f"record holds a lone surrogate: {exc.reason}") from exc

    def _check_reserved(self, record: Mapping[str, Any]) -> None:
        clash = [key for key in self._reserved if key in record]
        if clash:
            raise RecordInvalidError(
                f"record uses the reserved key(s) {', '.join(clash)}; the writer sets them"
            )

    def _check_usable(self) -> None:
        if self._closed:
            raise WriterClosedError(f"writer for {self.path} is closed")
        if self._failed:
            raise WriterClosedError(f"writer for {self.path} failed earlier")

    def _write_buffer(self) -> None:
        if not self._buffer:
            return
        data = bytes(self._buffer)
        count = self._buffered_records
        self._buffer.clear()
        self._buffered_records = 0
        done = 0
        view = memoryview(data)
        try:
            while done < len(data):
                done += os.write(self._fd, view[done:])
        except OSError as exc:
            self._failed = True
            kept = data.rfind(b"\n", 0, done) + 1
            note = self._undo_partial_line(kept, done)
            self._account(data[:kept], data[:kept].count(b"\n"))
            lost = count - data[:kept].count(b"\n")
            raise WriteFailedError(
                f"writing {self.path} failed ({describe_os_error(exc)}): "
                f"{self.records_written} records are complete on disk, "
                f"{lost} buffered records were not written{note}",
                records_written=self.records_written,
                hint=machine_hint(exc),
            ) from exc
        self._account(data, count)

    def _undo_partial_line(self, kept: int, done: int) -> str:
        """Cut a partly written line so the file ends on a record boundary again."""
        if kept == done:
            return ""
        try:
            os.ftruncate(self._fd, self.bytes_written + kept)
        except OSError:
            return f"; a partial line of {done - kept} bytes remains (a torn tail)"
        return ""

    def _account(self, data: bytes, records: int) -> None:
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
            raise RunLockedError(f"{self._describe()} is already open in another writer") from exc

    def _read_existing(self) -> tuple[int, int, bytes]:
        """Hash the file's existing content once: ``(bytes, records, last byte)``."""
        size = records = 0
        last = b""
        while chunk := os.pread(self._fd, _PREFIX_CHUNK, size):
            self._hasher.update(chunk)
            records += chunk.count(b"\n")
            size += len(chunk)
            last = chunk[-1:]
        return size, records, last

    def _adopt_existing_prefix(self) -> tuple[int, int]:
        """Hash an unsealed file's existing content once, at open, to continue it."""
        size, records, last = self._read_existing()
        if size and last != b"\n":
            raise TornTailError(
                f"{self.path} ends in an unterminated line (a crash mid-write?); "
                "agc does not append after it"
            )
        return size, records

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
