"""The run writers: a run's transcript and tool events, sealed into the run manifest.

A naive audit writer appends ``{...entry, ts}`` lines and re-reads the whole file at
close to write a checksum. Here
the JSONL machinery of :class:`~agc._core.jsonl.JsonlFileWriter` (hash while writing,
checkpoints, one writer per file, records validated first) is given two objects:

* a :class:`~agc._core.jsonl.SeqStamp`: each record gets ``seq`` (0, 1, 2 … per file)
  and ``ts`` (Unix ms); tool events also ``run_id``;
* a :class:`RunArtifactSeal`: the file lives in the store layout; a file already sealed
  (sidecar or manifest entry) or left unsealed by a crash is refused; with
  ``reopen=True`` a sealed file is verified and continued as a new segment; sealing
  writes the sidecar and the run manifest entry (signed when a key is given), and the
  closed manifest is linked into the store chain.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from agc._core.checkpoint import read_checkpoints
from agc._core.digest import (
    DEFAULT_ALGORITHM,
    Algorithm,
    check_algorithm,
    digest_fd,
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
    Prefix,
    SealsOnExit,
    SeqStamp,
    make_dirs,
    read_prefix,
    refuse_if_sidecar,
    refuse_torn_tail,
    unix_ms,
)
from agc._core.sidecar import format_sidecar
from agc._core.storage import Store
from agc._core.store import (
    ArtifactKind,
    RunId,
    StoreArg,
    StoreLayout,
    validate_new_run_id,
)
from agc.errors import (
    AgcError,
    ArtifactSealedError,
    RunExistsError,
    UnsealedRunError,
    VerificationError,
)
from agc.integrity._manifest import ArtifactSeal, check_attributes, sealed_checkpoints
from agc.integrity._store_io import read_manifest, record_reopen, record_seal

if TYPE_CHECKING:
    from agc.integrity._signing import SigningKey
    from agc.integrity._upload import UploadResult

__all__ = [
    "JsonlWriter",
    "RunArtifactSeal",
    "RunWriters",
    "ToolEventWriter",
    "TranscriptWriter",
    "open_run",
    "refuse_if_linked",
]


def refuse_if_linked(layout: StoreLayout, run_id: str) -> None:
    """Refuse a new run under a run id that the store chain already links.

    A run id is linked once (a re-opened run is continued with ``reopen=True``, which
    keeps its earlier link checkable): a second run under the same id would replace
    the evidence the chain vouches for.

    Raises:
        RunExistsError: the chain links ``run_id`` (exit 2; nothing was written).
        StoreError: the chain cannot be read.
    """
    # Loaded here, not at import: a writer continuing a file (one hook event) never
    # needs the chain reader nor the object-store side (nor cryptography with them).
    from agc.integrity._target import linked  # noqa: PLC0415

    links = linked(layout, run_id)
    if links:
        positions = ", ".join(str(entry.position) for entry in links)
        raise RunExistsError(
            f"run {run_id} is already linked in the store chain of {layout.root} "
            f"(link {positions}); a run id is recorded once",
            hint=f"Check it with `agc-verify {run_id} --store {layout.root}` (chain link "
            f"{positions}); record the new run under a new run id.",
        )


class RunArtifactSeal:
    """The seal policy of one artifact of a run (see the module docstring).

    Args:
        layout: the store.
        run_id: the run (validated).
        kind: ``"transcript"`` or ``"tool-events"``.
        clock: Unix time in ms (``sealed_at_ms``, ``reopened_at_ms``).
        signing_key: sign the manifest at each seal.
        reopen: continue a sealed file as a new segment.
        resume: continue the file as it is: a sealed one as a new segment (as
            ``reopen``), an unsealed one when its last crash checkpoint vouches for
            every byte it holds (a writer of another process released it unsealed).
        attributes: facts about the run stored in its manifest (checked already).

    Attributes:
        seal: the artifact's seal once :meth:`publish` ran, else ``None``.
    """

    def __init__(
        self,
        layout: StoreLayout,
        run_id: str,
        kind: ArtifactKind,
        *,
        clock: Callable[[], int],
        signing_key: SigningKey | None,
        reopen: bool,
        resume: bool = False,
        attributes: Mapping[str, Any] | None = None,
    ) -> None:
        self.layout = layout
        self.run_id = run_id
        self.kind = kind
        self.seal: ArtifactSeal | None = None
        self._clock = clock
        self._signing_key = signing_key
        self._reopen = reopen
        self._resume = resume
        self._attributes = attributes
        self._previous: ArtifactSeal | None = None

    def describe(self, path: Path) -> str:  # noqa: ARG002 - named by run, not path
        return f"{self.kind} of run {self.run_id}"

    def before_open(self, path: Path) -> None:
        if not self._reopen and not self._resume:
            refuse_if_linked(self.layout, self.run_id)
            self._refuse_if_sealed(path)
        make_dirs(self.layout.manifests_dir)

    def adopt(self, fd: int, path: Path, algorithm: Algorithm) -> Prefix:
        if self._reopen:
            return self._continue_sealed(fd, path)
        if self._resume:
            return self._resume_file(fd, path, algorithm)
        self._refuse_if_sealed(path)
        size = os.fstat(fd).st_size
        if size == 0:
            return Prefix(algorithm, new_hasher(algorithm))
        refuse_torn_tail(path, ends_with_newline=os.pread(fd, 1, size - 1) == b"\n")
        raise UnsealedRunError(
            f"{path} holds {size} bytes but was never sealed (a crash?); "
            "a writer does not continue an unsealed file"
        )

    def publish(self, seal: FileSeal) -> None:
        previous = self._previous
        artifact_seal = ArtifactSeal(
            kind=self.kind,
            file=seal.path.name,
            algorithm=seal.algorithm,
            digest=seal.digest,
            bytes=seal.bytes,
            records=seal.records,
            last_seq=seal.records - 1 if seal.records else None,
            sealed_at_ms=self._clock(),
            segments=() if previous is None else (*previous.segments, _segment(previous)),
            # The torn bytes an earlier recovery moved aside stay listed (and checked):
            # the quarantine file is still beside the file.
            quarantine=None if previous is None else previous.quarantine,
            checkpoints=sealed_checkpoints(
                () if previous is None else previous.checkpoints, seal.checkpoints
            ),
            # What a recovery could not vouch for stays unvouched under later segments.
            recovered=previous is not None and previous.recovered,
            unverified_bytes=None if previous is None else previous.unverified_bytes,
            unverified_records=None if previous is None else previous.unverified_records,
        )
        atomic_write_bytes(
            seal.sidecar,
            format_sidecar(seal.digest, seal.path.name),
            overwrite=previous is not None,
        )
        record_seal(
            self.layout,
            self.run_id,
            artifact_seal,
            signer=self._signing_key,
            attributes=self._attributes,
        )
        self.seal = artifact_seal

    def _refuse_if_sealed(self, path: Path) -> None:
        refuse_if_sidecar(path)
        manifest = read_manifest(self.layout, self.run_id)
        if manifest is not None and self.kind in manifest.artifacts:
            raise ArtifactSealedError(
                f"{self.kind} of run {self.run_id} is sealed in its manifest; "
                "it is never appended to"
            )

    def _continue_sealed(self, fd: int, path: Path) -> Prefix:
        """Verify the sealed content in one pass, then continue its hash (new segment)."""
        manifest = read_manifest(self.layout, self.run_id)
        seal = manifest.artifacts.get(self.kind) if manifest else None
        if seal is None or not seal.closed:
            raise UnsealedRunError(
                f"{self.kind} of run {self.run_id} is not sealed; there is nothing to re-open",
                hint="Open it without reopen=True, or run `agc recover` after a crash.",
            )
        prefix = read_prefix(fd, seal.algorithm)
        if prefix.bytes != seal.bytes or not digests_equal(seal.digest, prefix.hasher.hexdigest()):
            raise VerificationError(
                f"{path} does not match its seal; it cannot be re-opened", report=None
            )
        self._previous = seal
        record_reopen(self.layout, self.run_id, self.kind, self._clock(), signer=self._signing_key)
        return prefix

    def _resume_file(self, fd: int, path: Path, algorithm: Algorithm) -> Prefix:
        """Continue the file as it is (see ``resume`` in the class docstring): a sealed
        file as a new segment; a file re-opened for a segment when its sealed part
        still matches its seal; and what no seal covers only when the last crash
        checkpoint covers exactly the file's length and its digest (a prefix digest of
        the whole file vouches for every byte)."""
        manifest = read_manifest(self.layout, self.run_id)
        seal = manifest.artifacts.get(self.kind) if manifest else None
        if seal is not None and seal.closed:
            return self._continue_sealed(fd, path)
        if seal is None:
            refuse_if_sidecar(path)
        else:
            algorithm = seal.algorithm
        prefix = read_prefix(fd, algorithm)
        refuse_torn_tail(path, ends_with_newline=prefix.ends_with_newline)
        sealed_bytes = 0
        if seal is not None:
            os.lseek(fd, 0, os.SEEK_SET)
            head, length = digest_fd(fd, algorithm, limit=seal.bytes)
            if length != seal.bytes or not digests_equal(seal.digest, head):
                raise VerificationError(
                    f"{path} does not match its seal; it cannot be continued", report=None
                )
            sealed_bytes = seal.bytes
            self._previous = seal
        if prefix.bytes == sealed_bytes:
            return prefix
        checkpoints = [c for c in read_checkpoints(path)[0] if c.algorithm == algorithm]
        last = max(checkpoints, key=lambda c: c.bytes, default=None)
        if (
            last is None
            or last.bytes != prefix.bytes
            or last.records != prefix.records
            or not digests_equal(last.digest, prefix.hasher.hexdigest())
        ):
            vouched = 0 if last is None else min(last.bytes, prefix.bytes)
            raise UnsealedRunError(
                f"{path} holds {prefix.bytes - max(vouched, sealed_bytes):,} bytes that no "
                "crash checkpoint vouches for (a writer stopped between a write and its "
                "checkpoint, or the file was changed); it is not continued",
                hint=f"`agc recover {self.run_id}` seals it as recovered.",
            )
        return prefix


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
        attributes: facts about the run stored in its manifest (a JSON object, at most
            64 KiB; see :func:`~agc.integrity._manifest.check_attributes`), signed with it.
        reopen: continue a *sealed* file as a new segment: its sealed content is
            verified first (``VerificationError`` if it does not match its seal).
        resume: continue the file as it is, sealed or not, so that short-lived
            processes (one per client hook event) append to one file in turn: a sealed
            file as with ``reopen``; an unsealed one (or the new segment of a re-opened
            one) only when its last crash checkpoint (:meth:`checkpoint`) vouches for
            every byte after the seal, else ``UnsealedRunError`` (``agc recover``).

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
    stamps_run_id: ClassVar[bool] = False
    """Whether every record also gets ``run_id`` (tool events)."""

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
        resume: bool = False,
        attributes: Mapping[str, Any] | None = None,
    ) -> None:
        valid = RunId(run_id) if reopen or resume else validate_new_run_id(run_id)
        # Records, the manifest and reports carry the run id's text as a plain str: the
        # JSON writers leave a str subclass to the standard library (agc._core.json),
        # which would write every tool event on the slow path.
        self.run_id = str(valid)
        check_algorithm(algorithm)
        checked = None if attributes is None else check_attributes(attributes)
        self.layout = StoreLayout.at(store)
        clock = clock or unix_ms
        self._artifact = RunArtifactSeal(
            self.layout,
            self.run_id,
            self.kind,
            clock=clock,
            signing_key=signing_key,
            reopen=reopen,
            resume=resume,
            attributes=checked,
        )
        super().__init__(
            self.layout.artifact_path(self.run_id, self.kind),
            algorithm=algorithm,
            fsync=fsync,
            buffer_bytes=buffer_bytes,
            checkpoint_records=checkpoint_records,
            checkpoint_interval_ms=checkpoint_interval_ms,
            clock=clock,
            stamp=SeqStamp(clock, {"run_id": self.run_id} if self.stamps_run_id else None),
            seal_policy=self._artifact,
        )

    @property
    def seal(self) -> ArtifactSeal | None:
        """The artifact's seal once closed, else ``None``."""
        return self._artifact.seal

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        """Give the run's manifest ``attributes`` learnt while writing (before the seal):
        checked as at open (:func:`~agc.integrity._manifest.check_attributes`).

        Raises:
            RecordInvalidError: the attributes cannot be stored.
        """
        self._artifact._attributes = check_attributes(attributes)

    def close(self) -> ArtifactSeal:
        """Flush, fsync (unless policy ``none``), write the sidecar and the manifest entry.

        Returns the seal. Closing twice returns the same seal.

        Raises:
            WriteFailedError: the final write or fsync failed; nothing is sealed.
            WriterClosedError: the writer failed earlier and cannot be sealed.
            StoreError: the sidecar or manifest could not be written.
        """
        self.finish()
        assert self._artifact.seal is not None
        return self._artifact.seal


class TranscriptWriter(JsonlWriter):
    """Writer for ``audit/transcripts/<runId>.jsonl``."""

    kind = "transcript"


class ToolEventWriter(JsonlWriter):
    """Writer for ``audit/tool-events/<runId>.jsonl``; every record also gets ``run_id``.

    A record may carry ``run_id`` only if it equals the writer's run id.
    """

    kind = "tool-events"
    stamps_run_id = True


class RunWriters(SealsOnExit):
    """Both writers of one run, opened together.

    As a context manager: seals both on a clean exit, releases both unsealed on error.

    Args:
        publish: called once both are sealed, to bring the run into its store when it
            was written in a staging folder (see :func:`open_run`).

    Attributes:
        upload: what :meth:`close` published (an object store: the upload), else ``None``.
    """

    def __init__(
        self,
        transcript: TranscriptWriter,
        tool_events: ToolEventWriter,
        *,
        publish: Callable[[], UploadResult | None] | None = None,
    ) -> None:
        self.transcript = transcript
        self.tool_events = tool_events
        self.upload: UploadResult | None = None
        self._publish = publish

    def close(self) -> tuple[ArtifactSeal, ArtifactSeal]:
        """Seal the transcript, then the tool events, then publish the run; returns
        both seals.

        Raises:
            as :meth:`JsonlWriter.close`; ``StoreError`` when the upload of a staged
            run fails: it stays sealed in its staging folder and
            ``agc recover RUN --store s3://…`` uploads it.
        """
        try:
            first = self.transcript.close()
        except AgcError:
            self.tool_events.abort()
            raise
        seals = first, self.tool_events.close()
        if self.upload is None and self._publish is not None:
            self.upload = self._publish()
        return seals

    def abort(self) -> None:
        self.transcript.abort()
        self.tool_events.abort()

    def _seal_on_exit(self) -> object:
        return self.close()


def open_run(
    run_id: str,
    *,
    store: StoreArg | Store = None,
    algorithm: Algorithm = DEFAULT_ALGORITHM,
    fsync: FsyncPolicy = "close",
    clock: Callable[[], int] | None = None,
    signing_key: SigningKey | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> RunWriters:
    """Open the transcript and tool-event writers of a run together.

    ``attributes``: facts about the run for its manifest (a JSON object, at most 64 KiB),
    stored with the first seal and covered by the signature; a run re-opened later keeps
    them. Checked before the disk is touched.

    ``store`` may be an object store (``s3://bucket/prefix`` or an
    :class:`~agc._core.objstore.ObjectStore`): the run is then written in a local
    staging store and uploaded when closed (:mod:`agc.integrity._target`).

    Raises: as :class:`JsonlWriter` (``RecordInvalidError`` for bad attributes); if the
    second writer cannot open, the first is released unsealed (and its file removed
    again if this call created it empty). For an object store also
    ``RunExistsError``/``ArtifactSealedError`` (the store holds the run id already),
    ``UnsealedRunError`` (the run is staged, not uploaded yet) and ``UsageError`` (a
    retention is asked for and the bucket has no Object Lock).
    """
    if attributes is not None:
        attributes = check_attributes(attributes)
    run_id = validate_new_run_id(run_id)
    from agc.integrity._target import run_target  # noqa: PLC0415 - see refuse_if_linked

    target = run_target(store)
    policy = target.policy()
    with target.staging(run_id) as folder:
        transcript, tool_events = _open_writers(
            run_id,
            folder,
            algorithm=algorithm,
            fsync=fsync,
            clock=clock,
            signing_key=signing_key,
            attributes=attributes,
        )
    publish = functools.partial(target.publish, run_id, signing_key=signing_key, policy=policy)
    return RunWriters(transcript, tool_events, publish=publish)


def _open_writers(
    run_id: RunId,
    folder: Path,
    *,
    algorithm: Algorithm,
    fsync: FsyncPolicy,
    clock: Callable[[], int] | None,
    signing_key: SigningKey | None,
    attributes: Mapping[str, Any] | None,
) -> tuple[TranscriptWriter, ToolEventWriter]:
    """Both writers of a run in the store folder ``folder`` (see :func:`open_run`)."""
    existed = os.path.lexists(StoreLayout(folder).artifact_path(run_id, "transcript"))
    transcript = TranscriptWriter(
        run_id,
        store=folder,
        algorithm=algorithm,
        fsync=fsync,
        clock=clock,
        signing_key=signing_key,
        attributes=attributes,
    )
    try:
        tool_events = ToolEventWriter(
            run_id,
            store=folder,
            algorithm=algorithm,
            fsync=fsync,
            clock=clock,
            signing_key=signing_key,
            attributes=attributes,
        )
    except BaseException:
        if not existed and transcript.next_seq == 0:
            # Leave the disk as it was: remove the empty file we just created (still locked).
            with contextlib.suppress(OSError):
                os.unlink(transcript.path)
        transcript.abort()
        raise
    return transcript, tool_events


def _segment(seal: ArtifactSeal) -> dict[str, Any]:
    return {
        "records": seal.records,
        "bytes": seal.bytes,
        "digest": seal.digest,
        "sealed_at_ms": seal.sealed_at_ms,
    }
