"""Writing runs to an object store: the run writers, ingest and recovery for ``s3://``.

Each entry point stages the run in its own local store (:func:`~agc.integrity._s3.staging_store`),
lets the folder-store code do the writing, sealing and crash recovery there, and
uploads the sealed run (:func:`~agc.integrity._s3.upload_run`). See
:mod:`agc.integrity._s3` for the upload order and the chain.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from agc._core.digest import DEFAULT_ALGORITHM, Algorithm
from agc._core.jsonl import FsyncPolicy
from agc._core.objstore import ObjectStore
from agc._core.report import SCHEMA_VERSION
from agc._core.store import StoreLayout
from agc.errors import AgcError, RecoveryRefusedError, RunNotFoundError, StoreError
from agc.integrity._manifest import ArtifactSeal
from agc.integrity._s3 import (
    UploadResult,
    WritePolicy,
    heal_remote,
    read_remote_manifest,
    staged_run_ids,
    staged_writing,
    staging_store,
    upload_run,
    write_policy,
)
from agc.integrity._signing import SigningKey
from agc.integrity._writer import RunWriters, ToolEventWriter, TranscriptWriter

__all__ = [
    "RemoteRunWriters",
    "RemoteStoreRecovery",
    "ingest_to_object_store",
    "open_remote_run",
    "recover_remote_run",
    "recover_remote_store",
    "upload_sealed_file",
]


class RemoteRunWriters(RunWriters):
    """The writers of a run staged for an object store; :meth:`close` seals the run in
    its staging store and uploads it (``upload`` then holds the result).

    Raises (from :meth:`close`): as :class:`RunWriters`, and ``StoreError`` when the
    upload fails: the run stays sealed in its staging store and ``agc recover RUN
    --store s3://…`` uploads it.
    """

    def __init__(
        self,
        store: ObjectStore,
        transcript: TranscriptWriter,
        tool_events: ToolEventWriter,
        *,
        signing_key: SigningKey | None,
        policy: WritePolicy,
    ) -> None:
        super().__init__(transcript, tool_events)
        self.store = store
        self.upload: UploadResult | None = None
        self._signing_key = signing_key
        self._policy = policy

    def close(self) -> tuple[ArtifactSeal, ArtifactSeal]:
        seals = super().close()
        if self.upload is None:
            run_id = self.transcript.run_id
            self.upload = _upload(self.store, run_id, self._signing_key, self._policy)
        return seals


def _upload(
    store: ObjectStore, run_id: str, signing_key: SigningKey | None, policy: WritePolicy
) -> UploadResult:
    try:
        return upload_run(store, run_id, signing_key=signing_key, policy=policy)
    except AgcError as exc:
        raise StoreError(
            f"run {run_id} is sealed in {staging_store(store, run_id)} but its upload to "
            f"{store.url} failed: {exc.message}",
            hint=f"`agc recover {run_id} --store {store.url}` uploads it when the store "
            "can be written again.",
        ) from exc


def open_remote_run(
    store: ObjectStore,
    run_id: str,
    *,
    algorithm: Algorithm = DEFAULT_ALGORITHM,
    fsync: FsyncPolicy = "close",
    clock: Callable[[], int] | None = None,
    signing_key: SigningKey | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> RemoteRunWriters:
    """Open both writers of a new run staged for ``store`` (see :func:`open_run`).

    Raises:
        ArtifactSealedError: the store holds the run id already.
        UnsealedRunError: the run is staged and not uploaded yet.
        UsageError: a retention is asked for and the bucket has no Object Lock.
        StoreError: the store cannot be read, or the staging folder not created.
    """
    from agc.integrity._writer import open_run  # noqa: PLC0415 - open_run dispatches here

    policy = write_policy(store)
    with staged_writing(store, run_id) as staging:
        run = open_run(
            run_id,
            store=staging,
            algorithm=algorithm,
            fsync=fsync,
            clock=clock,
            signing_key=signing_key,
            attributes=attributes,
        )
    return RemoteRunWriters(
        store, run.transcript, run.tool_events, signing_key=signing_key, policy=policy
    )


def ingest_to_object_store(
    stream: BinaryIO,
    run_id: str,
    store: ObjectStore,
    **options: Any,
) -> tuple[Any, UploadResult]:
    """:func:`~agc.integrity._ingest.ingest_stream` into a staging store, then upload.

    Returns the ingest summary and the upload result.

    Raises: as :func:`open_remote_run` and ``ingest_stream``; ``StoreError`` when the
    upload fails (the run stays staged, sealed).
    """
    from agc.integrity._ingest import ingest_stream  # noqa: PLC0415 - it dispatches here

    policy = write_policy(store)
    with staged_writing(store, run_id) as staging:
        summary = ingest_stream(stream, run_id, store=staging, **options)
    return summary, _upload(store, run_id, options.get("signing_key"), policy)


def recover_remote_run(
    store: ObjectStore,
    run_id: str,
    *,
    signing_key: SigningKey | None = None,
    clock: Callable[[], int] | None = None,
) -> tuple[Any, UploadResult]:
    """Seal a staged run that crashed (as ``agc recover`` does in a folder store) and
    upload it; or upload a staged run whose upload failed.

    Returns the local recovery report and the upload result.

    Raises:
        RunNotFoundError: the run is neither staged on this host nor in the store.
        RecoveryRefusedError: it is a run in the legacy store format (nothing to recover).
        as :func:`~agc.integrity._recover.recover_run` and :func:`upload_run`.
    """
    from agc.integrity._recover import recover_run  # noqa: PLC0415 - it dispatches here

    staging = staging_store(store, run_id)
    if not staging.is_dir():
        heal_remote(store)
        if read_remote_manifest(store, run_id) is None:
            from agc.integrity._s3_verify import is_legacy_object_run  # noqa: PLC0415

            if is_legacy_object_run(store, run_id):
                raise RecoveryRefusedError(
                    f"run {run_id} is in the legacy store format (a digest-only SHA-256 "
                    "sidecar, no manifest): it was sealed by an earlier release and there "
                    "is nothing to recover; nothing was changed",
                    hint=f"`agc-verify {run_id} --store {store.url}` checks it as it is.",
                )
            raise RunNotFoundError(
                f"run {run_id} is neither staged on this host ({staging}) nor in {store.url}"
            )
        raise RunNotFoundError(
            f"run {run_id} is uploaded to {store.url} already; there is nothing to recover"
        )
    report = recover_run(run_id, staging, signing_key=signing_key, clock=clock)
    if report.chain == "not-closed":
        # Killed before its first record: recover_run removed the empty files.
        _drop_if_empty(staging)
        raise RunNotFoundError(
            f"run {run_id} was stopped before its first record; nothing to upload"
        )
    return report, upload_run(store, run_id, signing_key=signing_key)


def _drop_if_empty(staging: Path) -> None:
    """Remove a staging store in which no artifact file is left."""
    if not any(StoreLayout(staging).audit_dir.rglob("*.jsonl")):
        shutil.rmtree(staging, ignore_errors=True)


@dataclass(frozen=True)
class RemoteStoreRecovery:
    """Outcome of :func:`recover_remote_store`.

    Attributes:
        store: the store URL.
        linked: the run whose interrupted link (link object or manifest) was completed.
        uploaded: staged runs uploaded now.
        failed: staged runs that could not be uploaded, with the reason.
    """

    store: str
    linked: str | None
    uploaded: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]

    @property
    def changed(self) -> bool:
        return bool(self.linked or self.uploaded)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "store": self.store,
            "changed": self.changed,
            "linked": self.linked,
            "uploaded": list(self.uploaded),
            "failed": [{"run_id": run, "reason": why} for run, why in self.failed],
        }


def recover_remote_store(
    store: ObjectStore, *, signing_key: SigningKey | None = None
) -> RemoteStoreRecovery:
    """Complete an interrupted link in the store, and upload every run staged for it on
    this host that is sealed (one that is not is left for ``agc recover RUN``).

    Raises:
        StoreError: the store cannot be read or written, or its head is damaged.
    """
    linked = heal_remote(store)
    uploaded: list[str] = []
    failed: list[tuple[str, str]] = []
    for run_id in staged_run_ids(store):
        try:
            upload_run(store, run_id, signing_key=signing_key)
        except AgcError as exc:
            failed.append((run_id, exc.message))
        else:
            uploaded.append(run_id)
    return RemoteStoreRecovery(store.url, linked, tuple(uploaded), tuple(failed))


def upload_sealed_file(store: ObjectStore, file: Path, sidecar: Path) -> dict[str, Any]:
    """Upload a file sealed with ``agc seal`` and its sidecar to ``files/<name>``
    (sidecar last, each with ``If-None-Match: *`` and the store's write policy).

    An object already there is accepted only if it holds the same bytes.

    Raises:
        ArtifactSealedError: ``files/<name>`` holds other bytes.
        StoreError: the store cannot be written.
    """
    from agc.integrity._s3 import _file_digest, _put_file  # noqa: PLC0415

    policy = write_policy(store)
    remote = f"files/{file.name}"
    uploaded = False
    for path, local in ((remote, file), (f"files/{sidecar.name}", sidecar)):
        digest = _file_digest(local, "sha256")
        uploaded = _put_file(store, path, local, digest, "sha256", policy) or uploaded
    return {
        "object": store.url_of(remote),
        "sidecar": store.url_of(f"files/{sidecar.name}"),
        "uploaded": uploaded,
        "object_lock": policy.to_dict(),
    }
