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

import contextlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from agc._core.digest import (
    DEFAULT_ALGORITHM,
    Algorithm,
    check_algorithm,
    digests_equal,
    new_hasher,
)
from agc._core.fs import atomic_write_bytes
from agc._core.jsonl import (
    DEFAULT_BUFFER_BYTES,
    DEFAULT_CHECKPOINT_INTERVAL_MS,
    DEFAULT_CHECKPOINT_RECORDS,
    FileSeal,
    FsyncPolicy,
    JsonlFileWriter,
    SealsOnExit,
)
from agc._core.sidecar import format_sidecar
from agc._core.store import ArtifactKind, StoreLayout, validate_new_run_id, validate_run_id
from agc.errors import (
    AgcError,
    ArtifactSealedError,
    RecordInvalidError,
    RunLockedError,
    TornTailError,
    UnsealedRunError,
    VerificationError,
)
from agc.integrity._manifest import ArtifactSeal
from agc.integrity._signing import SigningKey
from agc.integrity._store_io import read_manifest, record_reopen, record_seal

__all__ = [
    "JsonlWriter",
    "RunWriters",
    "ToolEventWriter",
    "TranscriptWriter",
    "open_run",
]


class JsonlWriter(JsonlFileWriter):
    """Append-only, hash-while-writing JSONL writer for one artifact of one run.

    Use :class:`TranscriptWriter` or :class:`ToolEventWriter`. Each record gets ``seq``
    and ``ts``. As a context manager it seals on a clean exit; if the ``with`` body
    raises, it flushes and releases the file *without* sealing, so the run reads as
    unsealed rather than falsely complete.

    Args:
        run_id: the run id (validated before the disk is touched).
        store: the store folder (``--store`` / ``$AGC_HOME`` / ``~/.agc``).
        algorithm, fsync, buffer_bytes, checkpoint_records, checkpoint_interval_ms:
            as :class:`JsonlFileWriter`.
        clock: returns Unix time in ms for ``ts``; defaults to the system clock.
        signing_key: when given, the run manifest is signed (Ed25519) at each seal.
        reopen: continue a *sealed* file as a new segment: its sealed content is
            verified first (``VerificationError`` if it does not match its seal).

    Raises:
        RunIdInvalidError: bad run id, or (unless ``reopen``) one that begins with ``-``
            (nothing is created).
        ArtifactSealedError: the file is already sealed.
        TornTailError: the existing file ends in an unterminated line.
        UnsealedRunError: the file exists, is not empty and was never sealed (a crash);
            ``agc recover`` seals it first.
        RunLockedError: another writer holds the file.
        UnsafePathError: the file is a symlink.
        StoreError: the store cannot be created or written.
    """

    kind: ClassVar[ArtifactKind]
    _reserved: ClassVar[tuple[str, ...]] = ("seq", "ts")
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
        checkpoint_records: int = DEFAULT_CHECKPOINT_RECORDS,
        checkpoint_interval_ms: int = DEFAULT_CHECKPOINT_INTERVAL_MS,
        signing_key: SigningKey | None = None,
        reopen: bool = False,
    ) -> None:
        self.run_id = validate_run_id(run_id) if reopen else validate_new_run_id(run_id)
        check_algorithm(algorithm)
        self.layout = StoreLayout.at(store)
        self.seal: ArtifactSeal | None = None
        self._signing_key = signing_key
        self._reopen = reopen
        self._previous_seal: ArtifactSeal | None = None
        super().__init__(
            self.layout.artifact_path(run_id, self.kind),
            algorithm=algorithm,
            fsync=fsync,
            buffer_bytes=buffer_bytes,
            checkpoint_records=checkpoint_records,
            checkpoint_interval_ms=checkpoint_interval_ms,
            clock=clock,
        )

    def close(self) -> ArtifactSeal:
        """Flush, fsync (unless policy ``none``), write the sidecar and the manifest entry.

        Returns the seal. Closing twice returns the same seal.

        Raises:
            WriteFailedError: the final write or fsync failed; nothing is sealed.
            WriterClosedError: the writer failed earlier and cannot be sealed.
            StoreError: the sidecar or manifest could not be written.
        """
        if self.seal is None:
            self.finish()
        assert self.seal is not None
        return self.seal

    def _seal_on_exit(self) -> object:
        return self.close()

    def _publish_seal(self, seal: FileSeal) -> None:
        previous = self._previous_seal
        artifact_seal = ArtifactSeal(
            kind=self.kind,
            file=self.path.name,
            algorithm=seal.algorithm,
            digest=seal.digest,
            bytes=seal.bytes,
            records=seal.records,
            last_seq=seal.records - 1 if seal.records else None,
            sealed_at_ms=self._clock(),
            segments=() if previous is None else (*previous.segments, _segment(previous)),
        )
        atomic_write_bytes(
            seal.sidecar,
            format_sidecar(seal.digest, self.path.name),
            overwrite=previous is not None,
        )
        record_seal(self.layout, self.run_id, artifact_seal, signer=self._signing_key)
        self.seal = artifact_seal

    def _body(self, record: Mapping[str, Any], seq: int) -> dict[str, Any]:
        return {"seq": seq, "ts": self._clock(), **self._stamp_fields, **record}

    def _extra_dirs(self) -> tuple[Path, ...]:
        return (self.layout.manifests_dir,)

    def _describe(self) -> str:
        return f"{self.kind} of run {self.run_id}"

    def _refuse_before_open(self) -> None:
        if not self._reopen:
            self._refuse_if_sealed()

    def _open_existing(self) -> None:
        if self._reopen:
            self._continue_sealed()
            return
        self._refuse_if_sealed()
        size = os.fstat(self._fd).st_size
        if size == 0:
            return
        if os.pread(self._fd, 1, size - 1) != b"\n":
            raise TornTailError(
                f"{self.path} ends in an unterminated line (a crash mid-write?); "
                "agc does not append after it"
            )
        raise UnsealedRunError(
            f"{self.path} holds {size} bytes but was never sealed (a crash?); "
            "a writer does not continue an unsealed file"
        )

    def _lock(self) -> None:
        try:
            super()._lock()
        except RunLockedError:
            # The other writer may have sealed it meanwhile: then say that, since waiting
            # for it would not help.
            if not self._reopen:
                self._refuse_if_sealed()
            raise

    def _refuse_if_sealed(self) -> None:
        super()._refuse_if_sealed()
        manifest = read_manifest(self.layout, self.run_id)
        if manifest is not None and self.kind in manifest.artifacts:
            raise ArtifactSealedError(
                f"{self.kind} of run {self.run_id} is sealed in its manifest; "
                "it is never appended to"
            )

    def _continue_sealed(self) -> None:
        """Verify the sealed content in one pass, then continue its hash (new segment)."""
        manifest = read_manifest(self.layout, self.run_id)
        seal = manifest.artifacts.get(self.kind) if manifest else None
        if seal is None or not seal.closed:
            raise UnsealedRunError(
                f"{self.kind} of run {self.run_id} is not sealed; there is nothing to re-open",
                hint="Open it without reopen=True, or run `agc recover` after a crash.",
            )
        if seal.algorithm != self.algorithm:
            self.algorithm = seal.algorithm
            self._hasher = new_hasher(self.algorithm)
        size, records, _ = self._read_existing()
        if size != seal.bytes or not digests_equal(seal.digest, self._hasher.hexdigest()):
            raise VerificationError(
                f"{self.path} does not match its seal; it cannot be re-opened", report=None
            )
        self.bytes_written, self.records_written = size, records
        self._previous_seal = seal
        record_reopen(self.layout, self.run_id, self.kind, self._clock(), signer=self._signing_key)


class TranscriptWriter(JsonlWriter):
    """Writer for ``audit/transcripts/<runId>.jsonl`` (seed 004's transcript writer)."""

    kind = "transcript"


class ToolEventWriter(JsonlWriter):
    """Writer for ``audit/tool-events/<runId>.jsonl``; every record also gets ``run_id``.

    A record may carry ``run_id`` only if it equals the writer's run id.
    """

    kind = "tool-events"
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


class RunWriters(SealsOnExit):
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

    def _seal_on_exit(self) -> object:
        return self.close()


def open_run(
    run_id: str,
    *,
    store: str | os.PathLike[str] | None = None,
    algorithm: Algorithm = DEFAULT_ALGORITHM,
    fsync: FsyncPolicy = "close",
    clock: Callable[[], int] | None = None,
    signing_key: SigningKey | None = None,
) -> RunWriters:
    """Open the transcript and tool-event writers of a run together.

    Raises: as :class:`JsonlWriter`; if the second writer cannot open, the first is
    released unsealed (and its file removed again if this call created it empty).
    """
    validate_new_run_id(run_id)
    existed = os.path.lexists(StoreLayout.at(store).artifact_path(run_id, "transcript"))
    transcript = TranscriptWriter(
        run_id,
        store=store,
        algorithm=algorithm,
        fsync=fsync,
        clock=clock,
        signing_key=signing_key,
    )
    try:
        tool_events = ToolEventWriter(
            run_id,
            store=store,
            algorithm=algorithm,
            fsync=fsync,
            clock=clock,
            signing_key=signing_key,
        )
    except BaseException:
        if not existed and transcript.next_seq == 0:
            # Leave the disk as it was: remove the empty file we just created (still locked).
            with contextlib.suppress(OSError):
                os.unlink(transcript.path)
        transcript.abort()
        raise
    return RunWriters(transcript, tool_events)


def _segment(seal: ArtifactSeal) -> dict[str, Any]:
    return {
        "records": seal.records,
        "bytes": seal.bytes,
        "digest": seal.digest,
        "sealed_at_ms": seal.sealed_at_ms,
    }
