"""Where a run is written, and how it reaches its store: the write side of a store.

The writers (:func:`~agc.integrity._writer.open_run`,
:func:`~agc.integrity._ingest.ingest_stream`, :func:`~agc.integrity._recover.recover_run`,
:func:`~agc.integrity._recover.recover_store`) are written once against a
:class:`RunTarget`; what differs between stores is a method of the target, never a
branch in a writer:

* a store folder is written in place (:class:`FolderTarget`): the files sealed there
  are the evidence, and each closed run is appended to the chain under the chain lock
  (:mod:`agc.integrity._chain`);
* a store written once, object by object (an ``s3://`` object store:
  :class:`StagedTarget`), has each run written and sealed by the same crash-safe writer
  in a local store folder of its own, then published: every object uploaded with
  ``If-None-Match: *`` and the store's Object Lock policy, the run appended to the
  chain by compare-and-swap on the chain head (:mod:`agc.integrity._upload`).

:func:`run_target` turns a ``--store`` value into its target.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeAlias

from agc._core.folderstore import FolderStore
from agc._core.fs import (
    remove_stale_temp_files,
)
from agc._core.report import SCHEMA_VERSION
from agc._core.storage import Store
from agc._core.store import (
    ARTIFACT_KINDS,
    ArtifactKind,
    StoreArg,
    StoreLayout,
    artifact_path,
    open_store,
)
from agc.errors import (
    AgcError,
    RecoveryRefusedError,
    RunNotFoundError,
    StoreError,
    UnsafePathError,
)
from agc.integrity._chain import ChainEntry, chain_turn, heal_chain, run_links
from agc.integrity._chain_objects import read_remote_manifest
from agc.integrity._manifest import ArtifactSeal
from agc.integrity._store_io import read_manifest
from agc.integrity._upload import (
    UploadResult,
    WritePolicy,
    heal_remote,
    object_run_linked,
    staged_run_ids,
    staged_writing,
    staging_store,
    upload_run,
    write_policy,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from agc.integrity._kept import KeptArtifact
    from agc.integrity._signing import SigningKey

__all__ = [
    "FolderTarget",
    "RecordedCopies",
    "RemoteStoreRecovery",
    "RunTarget",
    "StagedTarget",
    "StoreRecovery",
    "linked",
    "recorded_copies",
    "run_target",
]

RecordedCopies: TypeAlias = Mapping[
    ArtifactKind, tuple[ArtifactSeal, Callable[[], Iterable[bytes]]]
]
"""A run's artifacts as its store holds them, verified: for each kind its seal and a
function that returns its lines from the first (each call starts again)."""


class RunTarget(Protocol):
    """The write side of a store (see the module docstring)."""

    @property
    def where(self) -> str:
        """The store as messages name it: its folder or its URL."""

    def linked(self, run_id: str) -> bool:
        """Whether the store's chain has linked ``run_id`` (a run id is recorded once).

        Raises:
            StoreError: the chain cannot be read.
        """

    def policy(self) -> WritePolicy | None:
        """The protection each published object gets (``None``: written in place).

        Raises:
            UsageError: a protection is asked for that the store cannot give.
            StoreError: the store cannot be read.
        """

    def staging(self, run_id: str) -> AbstractContextManager[Path]:
        """The store folder a new run is written and sealed in.

        Raises:
            RunExistsError, ArtifactSealedError, UnsealedRunError: the run id is taken.
            StoreError: the store cannot be read, or the folder not created.
        """

    def publish(
        self, run_id: str, *, signing_key: SigningKey | None, policy: WritePolicy | None
    ) -> UploadResult | None:
        """Bring a run sealed in its :meth:`staging` folder into the store (``None``:
        it is there already).

        Raises:
            StoreError: the store cannot be written (the run stays sealed, staged).
        """

    def recovery_folder(self, run_id: str) -> Path:
        """The store folder in which a crashed run of ``run_id`` lies.

        Raises:
            RunNotFoundError: no crashed run of that id can be there.
            RecoveryRefusedError: the run is in the legacy store format.
            StoreError: the store cannot be read.
        """

    def publish_recovered(
        self, run_id: str, *, closed: bool, signing_key: SigningKey | None
    ) -> UploadResult | None:
        """:meth:`publish` for a run :func:`~agc.integrity._recover.recover_run` sealed
        (``closed``) or emptied.

        Raises:
            RunNotFoundError: the run was emptied and there is nothing to publish.
            as :func:`~agc.integrity._upload.upload_run`.
        """

    def recover_store(
        self, *, signing_key: SigningKey | None
    ) -> StoreRecovery | RemoteStoreRecovery:
        """Repair the store-level state a crash can leave (see ``agc recover``).

        Raises:
            StoreError: the store cannot be read or written, or its chain is damaged
                in a way no crash produces.
        """

    @property
    def store(self) -> Store:
        """The store itself, read through the store interface."""


def run_target(store: StoreArg | Store) -> RunTarget:
    """The write side of the store a ``--store`` value names
    (:func:`~agc._core.store.open_store`): a folder (``None``: ``$AGC_HOME``, else
    ``~/.agc``) is written in place, a store written object by object (``s3://…``, the
    in-memory store) staged.

    Raises:
        UsageError: an ``s3://`` URL that is not valid.
    """
    opened = open_store(store)
    folder = opened.folder
    return StagedTarget(opened) if folder is None else FolderTarget(folder)


# -- a store folder, written in place ----------------------------------------------------


def linked(layout: StoreLayout, run_id: str) -> tuple[ChainEntry, ...]:
    """The run's links in the store chain; none when the chain log is not a regular
    file (then every seal refuses to link, exit 3, as for any run).

    Raises:
        StoreError: the chain cannot be read.
    """
    try:
        return run_links(layout, run_id)
    except UnsafePathError:
        return ()


@dataclass(frozen=True)
class _StoreRepair:
    """What every store's repair reports: the store, and the run whose interrupted link
    was completed, if any."""

    store: str
    linked: str | None

    @property
    def changed(self) -> bool:
        raise NotImplementedError

    def _details(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "store": self.store,
            "changed": self.changed,
            "linked": self.linked,
            **self._details(),
        }


@dataclass(frozen=True)
class StoreRecovery(_StoreRepair):
    """Outcome of :meth:`FolderTarget.recover_store`.

    Attributes:
        store: the store folder.
        linked: a run whose interrupted link was completed, if any.
        head_repaired: the chain head was missing, stale or damaged and was rewritten.
        quarantined_bytes: bytes of a torn chain line moved to its quarantine file.
        removed_temp_files: leftover temporary files removed (paths in the store).
        newline_added: the chain's last link lacked only its newline, which was added.
    """

    # A folder stages nothing: nothing is uploaded by a repair.
    uploaded: ClassVar[tuple[str, ...]] = ()
    failed: ClassVar[tuple[tuple[str, str], ...]] = ()

    head_repaired: bool
    quarantined_bytes: int
    removed_temp_files: tuple[str, ...]
    newline_added: bool = False

    @property
    def changed(self) -> bool:
        return bool(
            self.linked
            or self.head_repaired
            or self.quarantined_bytes
            or self.removed_temp_files
            or self.newline_added
        )

    def _details(self) -> dict[str, Any]:
        return {
            "head_repaired": self.head_repaired,
            "quarantined_bytes": self.quarantined_bytes,
            "newline_added": self.newline_added,
            "removed_temp_files": list(self.removed_temp_files),
        }


@dataclass(frozen=True)
class FolderTarget:
    """A store folder: runs are written, sealed and linked in place."""

    root: Path

    @property
    def where(self) -> str:
        return str(self.root)

    @property
    def store(self) -> Store:
        return FolderStore(self.root)

    def linked(self, run_id: str) -> bool:
        return bool(linked(StoreLayout(self.root), run_id))

    def policy(self) -> None:
        return None

    def staging(self, run_id: str) -> AbstractContextManager[Path]:  # noqa: ARG002
        return contextlib.nullcontext(self.root)

    def publish(
        self,
        run_id: str,  # noqa: ARG002
        *,
        signing_key: SigningKey | None,  # noqa: ARG002
        policy: WritePolicy | None,  # noqa: ARG002
    ) -> None:
        return None  # sealed in place: linked into the chain as it was sealed

    def recovery_folder(self, run_id: str) -> Path:  # noqa: ARG002
        return self.root

    def publish_recovered(
        self,
        run_id: str,  # noqa: ARG002
        *,
        closed: bool,  # noqa: ARG002
        signing_key: SigningKey | None,  # noqa: ARG002
    ) -> None:
        return None

    def recover_store(self, *, signing_key: SigningKey | None = None) -> StoreRecovery:  # noqa: ARG002
        """Heal the chain (a torn last link, an interrupted link, a stale head: see
        :mod:`agc.integrity._chain`) and remove temporary files that a killed writer
        left in the store's folders (never one a live writer holds). Idempotent.

        Raises:
            StoreError: the store does not exist, cannot be written, or its chain is
                damaged in a way no crash produces.
        """
        layout = StoreLayout(self.root)
        if not layout.root.is_dir():
            raise StoreError(f"store {layout.root} does not exist or is not a folder")
        removed: list[str] = []
        with chain_turn(layout) as turn:
            heal = heal_chain(layout, lambda other: read_manifest(layout, other), turn)
            removed += [f"audit/{name}" for name in heal.removed_temp_files]
        for folder in (
            layout.manifests_dir,
            *(layout.artifact_dir(kind) for kind in ARTIFACT_KINDS),
        ):
            relative = folder.relative_to(layout.root)
            removed += [f"{relative}/{name}" for name in remove_stale_temp_files(folder)]
        return StoreRecovery(
            store=str(layout.root),
            linked=heal.linked,
            head_repaired=heal.head_repaired,
            quarantined_bytes=heal.quarantined_bytes,
            removed_temp_files=tuple(sorted(removed)),
            newline_added=heal.newline_added,
        )


# -- a store written once, object by object ----------------------------------------------


@dataclass(frozen=True)
class RemoteStoreRecovery(_StoreRepair):
    """Outcome of :meth:`StagedTarget.recover_store`.

    Attributes:
        store: the store URL.
        linked: the run whose interrupted link (link object or manifest) was completed.
        uploaded: staged runs uploaded now.
        failed: staged runs that could not be uploaded, with the reason.
    """

    # What a store folder's repair also reports; an object store has none of it (its
    # head is replaced only by compare-and-swap, and nothing is written in place).
    head_repaired: ClassVar[bool] = False
    quarantined_bytes: ClassVar[int] = 0
    removed_temp_files: ClassVar[tuple[str, ...]] = ()
    newline_added: ClassVar[bool] = False

    uploaded: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]

    @property
    def changed(self) -> bool:
        return bool(self.linked or self.uploaded)

    def _details(self) -> dict[str, Any]:
        return {
            "uploaded": list(self.uploaded),
            "failed": [{"run_id": run, "reason": why} for run, why in self.failed],
        }


@dataclass(frozen=True)
class StagedTarget:
    """A store written object by object (S3, the in-memory store): each run is staged
    in a local store folder of its own and published once sealed (see
    :mod:`agc.integrity._upload`)."""

    store: Store

    @property
    def where(self) -> str:
        return self.store.url

    def linked(self, run_id: str) -> bool:
        return object_run_linked(self.store, run_id)

    def policy(self) -> WritePolicy:
        return write_policy(self.store)

    def staging(self, run_id: str) -> AbstractContextManager[Path]:
        return staged_writing(self.store, run_id)

    def publish(
        self, run_id: str, *, signing_key: SigningKey | None, policy: WritePolicy | None
    ) -> UploadResult:
        store = self.store
        try:
            return upload_run(store, run_id, signing_key=signing_key, policy=policy)
        except AgcError as exc:
            raise StoreError(
                f"run {run_id} is sealed in {staging_store(store, run_id)} but its upload to "
                f"{store.url} failed: {exc.message}",
                hint=f"`agc recover {run_id} --store {store.url}` uploads it when the store "
                "can be written again.",
            ) from exc

    def recovery_folder(self, run_id: str) -> Path:
        store = self.store
        staging = staging_store(store, run_id)
        if staging.is_dir():
            return staging
        heal_remote(store)
        if read_remote_manifest(store, run_id) is not None:
            raise RunNotFoundError(
                f"run {run_id} is uploaded to {store.url} already; there is nothing to recover"
            )
        from agc.integrity._run_reader import is_legacy_store_run  # noqa: PLC0415

        if is_legacy_store_run(store, run_id):
            raise RecoveryRefusedError(
                f"run {run_id} is in the legacy store format (a digest-only SHA-256 "
                "sidecar, no manifest): it was sealed by an earlier release and there "
                "is nothing to recover; nothing was changed",
                hint=f"`agc-verify {run_id} --store {store.url}` checks it as it is.",
            )
        raise RunNotFoundError(
            f"run {run_id} is neither staged on this host ({staging}) nor in {store.url}"
        )

    def publish_recovered(
        self, run_id: str, *, closed: bool, signing_key: SigningKey | None
    ) -> UploadResult:
        if not closed:
            # Killed before its first record: recover_run removed the empty files.
            staging = staging_store(self.store, run_id)
            if not any(StoreLayout(staging).audit_dir.rglob("*.jsonl")):
                shutil.rmtree(staging, ignore_errors=True)
            raise RunNotFoundError(
                f"run {run_id} was stopped before its first record; nothing to upload"
            )
        return upload_run(self.store, run_id, signing_key=signing_key)

    def recover_store(self, *, signing_key: SigningKey | None = None) -> RemoteStoreRecovery:
        """Complete an interrupted link in the store, and upload every run staged for
        it on this host that is sealed (one that is not is left for ``agc recover RUN``).

        Raises:
            StoreError: the store cannot be read or written, or its head is damaged.
        """
        store = self.store
        healed = heal_remote(store)
        uploaded: list[str] = []
        failed: list[tuple[str, str]] = []
        for run_id in staged_run_ids(store):
            try:
                upload_run(store, run_id, signing_key=signing_key)
            except AgcError as exc:
                failed.append((run_id, exc.message))
            else:
                uploaded.append(run_id)
        return RemoteStoreRecovery(store.url, healed, tuple(uploaded), tuple(failed))


@contextlib.contextmanager
def recorded_copies(
    store: Store, run_id: str, trusted_keys: Mapping[str, Ed25519PublicKey] | None
) -> Iterator[RecordedCopies | None]:
    """The run's artifacts when the run verifies complete (with ``trusted_keys``:
    signed by one of them) and both are sealed, else ``None``: each copied from the very
    bytes (in a versioned store, the very object version) the check hashed, so what is
    compared afterwards is what was verified (:class:`~agc.integrity._kept.KeptArtifact`).

    Raises:
        StoreError: the store cannot be read.
    """
    from agc.integrity._kept import KeptArtifact  # noqa: PLC0415 - only on a retry
    from agc.integrity._run_reader import check_store_run  # noqa: PLC0415

    with contextlib.ExitStack() as stack:
        kept = {
            k: stack.enter_context(KeptArtifact(k, store.url_of(artifact_path(run_id, k))))
            for k in ARTIFACT_KINDS
        }
        report = check_store_run(store, run_id, copies=kept, trusted_keys=trusted_keys)
        if not report.complete or not all(copy.matches_seal() for copy in kept.values()):
            yield None
            return
        copies: dict[ArtifactKind, tuple[ArtifactSeal, Callable[[], Iterable[bytes]]]] = {}
        for kind, copy in kept.items():
            if copy.seal is None:
                yield None
                return
            copies[kind] = (copy.seal, _rewound(copy))
        yield copies


def _rewound(copy: KeptArtifact) -> Callable[[], Iterable[bytes]]:
    """A function returning the lines of a kept copy from its first."""

    def lines() -> Iterable[bytes]:
        copy.rewind()
        return copy.file

    return lines
