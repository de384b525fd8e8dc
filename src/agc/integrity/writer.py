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
* the digest is updated with exactly the bytes that reached the file, so :meth:`close`
  never re-reads it: closing costs the same for 1 KB and 1 GB;
* :meth:`close` writes the checksum sidecar (``<name>.b3`` / ``<name>.sha256``) and
  records the seal in the run manifest;
* one writer per file across processes (``flock``), no symlinks followed, never an
  append to a sealed file or to a file whose last line is unterminated, and records are
  validated before a byte is written.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Final, Literal, Self

import orjson

from agc.errors import (
    AgcError,
    ArtifactSealedError,
    RecordInvalidError,
    RunLockedError,
    StoreError,
    TornTailError,
    WriteFailedError,
    WriterClosedError,
)
from agc.integrity.fsio import atomic_write_bytes, open_nofollow
from agc.integrity.hashing import (
    DEFAULT_ALGORITHM,
    SIDECAR_SUFFIXES,
    Algorithm,
    Hasher,
    check_algorithm,
    new_hasher,
)
from agc.integrity.manifest import ArtifactSeal
from agc.integrity.sidecar import format_sidecar, sidecar_name
from agc.integrity.store_io import read_manifest, record_seal
from agc.store import ArtifactKind, StoreLayout, validate_run_id

__all__ = [
    "FSYNC_POLICIES",
    "FsyncPolicy",
    "JsonlWriter",
    "RunWriters",
    "ToolEventWriter",
    "TranscriptWriter",
    "open_run",
    "unix_ms",
]

FsyncPolicy = Literal["none", "close", "always"]
FSYNC_POLICIES: Final[tuple[FsyncPolicy, ...]] = ("none", "close", "always")
DEFAULT_BUFFER_BYTES: Final = 64 * 1024
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


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class JsonlWriter:
    """Append-only, hash-while-writing JSONL writer for one artifact of one run.

    Use :class:`TranscriptWriter` or :class:`ToolEventWriter`. As a context manager it
    seals on a clean exit; if the ``with`` body raises, it flushes and releases the file
    *without* sealing, so the run reads as unsealed rather than falsely complete.

    Args:
        run_id: the run id (validated before the disk is touched).
        store: the store folder (``--store`` / ``$AGC_HOME`` / ``~/.agc``).
        algorithm: ``"blake3"`` (default) or ``"sha256"``.
        fsync: ``"none"``, ``"close"`` (default: fsync once when sealing) or
            ``"always"`` (fsync after every record).
        clock: returns Unix time in ms for ``ts``; defaults to the system clock.
        buffer_bytes: records are written once this many bytes are buffered (and on
            :meth:`flush` / :meth:`close`).

    Raises:
        RunIdInvalidError: bad run id (nothing is created).
        ArtifactSealedError: the file is already sealed.
        TornTailError: the existing file ends in an unterminated line.
        RunLockedError: another writer holds the file.
        UnsafePathError: the file is a symlink.
        StoreError: the store cannot be created or written.
    """

    kind: ClassVar[ArtifactKind]
    _reserved: ClassVar[tuple[str, ...]] = ("seq", "ts")
    # Keys whose presence sends a record through _check_reserved (the common record
    # has none of them and skips the call).
    _checked_keys: ClassVar[frozenset[str]] = frozenset({"seq", "ts"})

    def __init__(
        self,
        run_id: str,
        *,
        store: str | os.PathLike[str] | None = None,
        algorithm: Algorithm = DEFAULT_ALGORITHM,
        fsync: FsyncPolicy = "close",
        clock: Callable[[], int] | None = None,
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
    ) -> None:
        self.run_id = validate_run_id(run_id)
        self.algorithm = check_algorithm(algorithm)
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy {fsync!r} is not one of {FSYNC_POLICIES}")
        self.fsync_policy: FsyncPolicy = fsync
        self.layout = StoreLayout.at(store)
        self.path: Path = self.layout.artifact_path(run_id, self.kind)
        self._clock = clock or unix_ms
        self._stamp_fields = self._stamp()
        self._buffer_limit = max(0, buffer_bytes)
        self._buffer = bytearray()
        self._buffered_records = 0
        self._closed = False
        self._failed = False
        self.seal: ArtifactSeal | None = None
        self._refuse_if_sealed()
        _make_dirs(self.path.parent, self.layout.manifests_dir)
        try:
            self._fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        except PermissionError as exc:
            raise StoreError(f"cannot open {self.path} for writing: {exc.strerror}") from exc
        try:
            self._lock()
            self._refuse_if_sealed()
            self._hasher: Hasher = new_hasher(self.algorithm)
            self.bytes_written, self.records_written = self._adopt_existing_prefix()
        except BaseException:
            os.close(self._fd)
            raise

    # -- public API -------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def next_seq(self) -> int:
        """The ``seq`` the next record will get."""
        return self.records_written + self._buffered_records

    def write(self, record: Mapping[str, Any]) -> int:
        """Append one record and return its ``seq``.

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
        return seq

    def flush(self) -> None:
        """Write buffered records to the file (and fsync under the ``always`` policy)."""
        self._check_usable()
        self._write_buffer()
        if self.fsync_policy == "always":
            self._fsync()

    def close(self) -> ArtifactSeal:
        """Flush, fsync (unless policy ``none``), write the sidecar and the manifest entry.

        Returns the seal. Closing twice returns the same seal.

        Raises:
            WriteFailedError: the final write or fsync failed; nothing is sealed.
            WriterClosedError: the writer failed earlier and cannot be sealed.
        """
        if self.seal is not None:
            return self.seal
        self._check_usable()
        try:
            self._write_buffer()
            if self.fsync_policy != "none":
                self._fsync()
            seal = ArtifactSeal(
                kind=self.kind,
                file=self.path.name,
                algorithm=self.algorithm,
                digest=self._hasher.hexdigest(),
                bytes=self.bytes_written,
                records=self.records_written,
                last_seq=self.records_written - 1 if self.records_written else None,
                sealed_at_ms=self._clock(),
            )
            sidecar = self.path.with_name(sidecar_name(self.path.name, self.algorithm))
            atomic_write_bytes(sidecar, format_sidecar(seal.digest, seal.file), overwrite=False)
            record_seal(self.layout, self.run_id, seal)
        except OSError as exc:
            self._failed = True
            raise StoreError(f"sealing {self.path} failed: {exc}") from exc
        finally:
            self._release()
        self.seal = seal
        return seal

    def abort(self) -> None:
        """Write what is buffered and release the file without sealing it."""
        if self._closed:
            return
        try:
            if not self._failed:
                self._write_buffer()
                if self.fsync_policy != "none":
                    self._fsync()
        finally:
            self._release()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:
        # A writer dropped without close() must not leak its descriptor or lock.
        if not getattr(self, "_closed", True):
            os.close(self._fd)
            self._closed = True

    # -- internals --------------------------------------------------------------------

    def _encode(self, record: Mapping[str, Any], seq: int) -> bytes:
        if type(record) is not dict and not isinstance(record, Mapping):
            raise RecordInvalidError(
                f"record must be a JSON object (a mapping), not {type(record).__name__}"
            )
        body = {"seq": seq, "ts": self._clock(), **self._stamp_fields, **record}
        # Fast path: orjson. It refuses non-string keys, integers beyond 64 bits, lone
        # surrogates, nesting deeper than 254 and (via _not_native) types the standard
        # library refuses; it writes NaN/Infinity as null, so bytes holding "null" go
        # to the standard library's path too, which rejects them.
        try:
            data = orjson.dumps(body, default=_not_native, option=_ORJSON_OPTIONS)
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

    def _stamp(self) -> dict[str, Any]:
        return {}

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
                f"writing {self.path} failed ({_describe_os_error(exc)}): "
                f"{self.records_written} records are complete on disk, "
                f"{lost} buffered records were not written{note}",
                records_written=self.records_written,
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
                f"fsync of {self.path} failed ({_describe_os_error(exc)})",
                records_written=self.records_written,
            ) from exc

    def _release(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._fd)

    def _lock(self) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise RunLockedError(
                f"{self.kind} of run {self.run_id} is already open in another writer"
            ) from exc

    def _refuse_if_sealed(self) -> None:
        for suffix in SIDECAR_SUFFIXES.values():
            sidecar = self.path.with_name(self.path.name + suffix)
            if os.path.lexists(sidecar):
                raise ArtifactSealedError(
                    f"{self.path} is sealed ({sidecar.name} exists); it is never appended to"
                )
        manifest = read_manifest(self.layout, self.run_id)
        if manifest is not None and self.kind in manifest.artifacts:
            raise ArtifactSealedError(
                f"{self.kind} of run {self.run_id} is sealed in its manifest; "
                "it is never appended to"
            )

    def _adopt_existing_prefix(self) -> tuple[int, int]:
        """Hash an unsealed file's existing content once, at open, to continue it."""
        size = os.fstat(self._fd).st_size
        if size == 0:
            return 0, 0
        os.lseek(self._fd, 0, os.SEEK_SET)
        records = 0
        last = b""
        remaining = size
        while remaining:
            chunk = os.read(self._fd, min(_PREFIX_CHUNK, remaining))
            if not chunk:
                break
            self._hasher.update(chunk)
            records += chunk.count(b"\n")
            remaining -= len(chunk)
            last = chunk[-1:]
        if last != b"\n":
            raise TornTailError(
                f"{self.path} ends in an unterminated line (a crash mid-write?); "
                "agc does not append after it"
            )
        return size, records


class TranscriptWriter(JsonlWriter):
    """Writer for ``audit/transcripts/<runId>.jsonl`` (seed 004's transcript writer)."""

    kind = "transcript"


class ToolEventWriter(JsonlWriter):
    """Writer for ``audit/tool-events/<runId>.jsonl``; every record also gets ``run_id``.

    A record may carry ``run_id`` only if it equals the writer's run id.
    """

    kind = "tool-events"
    _reserved = ("seq", "ts")
    _checked_keys = frozenset({"seq", "ts", "run_id"})

    def _check_reserved(self, record: Mapping[str, Any]) -> None:
        super()._check_reserved(record)
        if "run_id" in record and record["run_id"] != self.run_id:
            raise RecordInvalidError(
                f"record has run_id {record['run_id']!r} but the writer is for {self.run_id!r}"
            )

    def _stamp(self) -> dict[str, Any]:
        # A record's own (equal) run_id then keeps this position and value.
        return {"run_id": self.run_id}


class RunWriters:
    """Both writers of one run, opened together as seed 004's ``createAuditWriters`` does.

    As a context manager: seals both on a clean exit, releases both unsealed on error.
    """

    def __init__(self, transcript: TranscriptWriter, tool_events: ToolEventWriter) -> None:
        self.transcript = transcript
        self.tool_events = tool_events

    def close(self) -> tuple[ArtifactSeal, ArtifactSeal]:
        """Seal the transcript, then the tool events; returns both seals."""
        try:
            first = self.transcript.close()
        except AgcError:
            self.tool_events.abort()
            raise
        return first, self.tool_events.close()

    def abort(self) -> None:
        self.transcript.abort()
        self.tool_events.abort()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def open_run(
    run_id: str,
    *,
    store: str | os.PathLike[str] | None = None,
    algorithm: Algorithm = DEFAULT_ALGORITHM,
    fsync: FsyncPolicy = "close",
    clock: Callable[[], int] | None = None,
) -> RunWriters:
    """Open the transcript and tool-event writers of a run together.

    Raises: as :class:`JsonlWriter`; if the second writer cannot open, the first is
    released unsealed.
    """
    transcript = TranscriptWriter(
        run_id, store=store, algorithm=algorithm, fsync=fsync, clock=clock
    )
    try:
        tool_events = ToolEventWriter(
            run_id, store=store, algorithm=algorithm, fsync=fsync, clock=clock
        )
    except BaseException:
        transcript.abort()
        raise
    return RunWriters(transcript, tool_events)


def _make_dirs(*folders: Path) -> None:
    for folder in folders:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create {folder}: {_describe_os_error(exc)}") from exc


def _describe_os_error(exc: OSError) -> str:
    if exc.errno == errno.EFBIG:
        return "file-size limit reached"
    if exc.errno == errno.ENOSPC:
        return "no space left on device"
    return exc.strerror or str(exc)
