"""Publishing a run to an object store: staging, upload order, the chain by compare-and-swap.

A run for a store ``s3://bucket/prefix`` is written locally first, by the same crash-safe
writer as any run (checkpoints, sidecars, manifest), into a *staging* store of its own:
``$AGC_STAGING/<bucket>/<prefix>/<runId>/`` (default ``~/.local/state/agc/staging``).
When it is sealed it is uploaded, every object with ``If-None-Match: *`` (never over an
existing object), its SHA-256 sent for the service to check, and the Object Lock
retention or legal hold of the store's write policy:

1. the artifacts: each file, its sidecar, a recovered file's quarantine file;
2. the chain head, by compare-and-swap (below): this claims the run's position;
3. the link object ``audit/chain/<position>.json``;
4. the manifest ``audit/manifests/<runId>.json``, last: a reader that sees a manifest
   finds every object it names.

The chain. ``audit/chain-head.json`` is the only object ever replaced, and only with
``If-Match: <its ETag>`` (``If-None-Match: *`` for the first link). Every append reads
the head, builds the run's manifest with ``chain: {position: head + 1, prev: head's
digest}``, signs it, and swaps the head for one naming the new link *and holding the
new manifest's exact bytes*. Of two hosts that read the same head, one swap succeeds and
the other gets 412 and starts again from the new head: appends are serialised by that
one object, none is lost, and positions stay contiguous. Because the head carries the
manifest, whoever reads it next (the next writer, ``agc recover``) can write the link
object and the manifest of the previous append if its writer died after the swap. So
between two appends the invariant is: every link below the head's position has its link
object and its manifest; only the head's own may be pending (``link-pending``).

A staged run is removed once its upload is complete. One whose upload failed (the
network, a refused permission) stays staged, and ``agc recover RUN --store s3://…``
uploads it (sealing it first if the writer crashed).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agc._core.digest import Algorithm, new_hasher
from agc._core.fs import open_nofollow
from agc._core.report import SCHEMA_VERSION
from agc._core.sidecar import sidecar_name
from agc._core.storage import ChainTurn, PreconditionFailed, Retention, Store
from agc._core.store import (
    ARTIFACT_KINDS,
    StoreLayout,
    artifact_path,
    is_run_id,
    link_path,
    manifest_path,
    validate_run_id,
)
from agc.errors import (
    ArtifactSealedError,
    RecoveryRefusedError,
    RunExistsError,
    RunNotFoundError,
    StoreError,
    UnsealedRunError,
    UsageError,
)
from agc.integrity._chain import ChainEntry, ChainHead, Tip, link_run, manifest_digest
from agc.integrity._chain_objects import (
    HEAD_PATH,
    RemoteHead,
    link_bytes,
    read_remote_head,
    read_remote_manifest,
)
from agc.integrity._manifest import ArtifactSeal, RunManifest
from agc.integrity._signing import SigningKey
from agc.integrity._store_io import read_manifest, sign_manifest

__all__ = [
    "UploadResult",
    "WritePolicy",
    "heal_remote",
    "link_remote",
    "object_run_linked",
    "refuse_if_taken",
    "staged_run_ids",
    "staged_writing",
    "staging_root",
    "staging_store",
    "upload_run",
    "upload_sealed_file",
    "write_policy",
]


# -- staging --------------------------------------------------------------------------


def staging_root() -> Path:
    """``$AGC_STAGING``, else ``$XDG_STATE_HOME/agc/staging``, else
    ``~/.local/state/agc/staging`` (state that must survive a reboot: runs not uploaded)."""
    explicit = os.environ.get("AGC_STAGING")
    if explicit:
        return Path(explicit)
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state) if state else Path.home() / ".local" / "state"
    return base / "agc" / "staging"


def _staging_folder(store: Store) -> Path:
    return staging_root() / store.staging_name()


def staging_store(store: Store, run_id: str) -> Path:
    """The one-run local store in which ``run_id`` is written before its upload."""
    return _staging_folder(store) / validate_run_id(run_id)


def staged_run_ids(store: Store) -> list[str]:
    """Runs staged for ``store`` and not uploaded yet (sorted)."""
    folder = _staging_folder(store)
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StoreError(f"cannot read the staging folder {folder}: {exc.strerror}") from exc
    return [name for name in names if is_run_id(name) and (folder / name).is_dir()]


# -- the write policy -------------------------------------------------------------------


@dataclass(frozen=True)
class WritePolicy:
    """What Object Lock protection each uploaded object gets.

    Attributes:
        retention: set on every object (``None``: none set by agc).
        legal_hold: an Object Lock legal hold on every object.
        object_lock: the bucket has Object Lock enabled.
        source: ``option`` (the store's own policy), ``bucket-default`` or ``none``.
    """

    retention: Retention | None
    legal_hold: bool
    object_lock: bool
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "object_lock": self.object_lock,
            "retention": None
            if self.retention is None
            else {"mode": self.retention.mode, "days": self.retention.days},
            "legal_hold": self.legal_hold,
            "source": self.source,
        }


def write_policy(store: Store) -> WritePolicy:
    """The protection of the objects agc writes to ``store``.

    The store's own retention or legal hold (``--retention-days``, ``--legal-hold``) if
    it has one; else the bucket's default retention, set explicitly on each object;
    else none (a bucket without Object Lock, or one with no default rule).

    Raises:
        UsageError: a retention or legal hold is asked for and the bucket has no Object
            Lock (S3 would refuse every upload).
        StoreError: the bucket cannot be read.
    """
    lock = store.bucket_lock()
    if store.retention is not None or store.legal_hold:
        if not lock.enabled:
            raise UsageError(
                f"store {store.url} has no Object Lock: a retention or legal hold "
                "cannot be set on its objects",
                hint="Enable Object Lock on the bucket (docs/object-store.md), or drop "
                "--retention-days / --legal-hold.",
            )
        return WritePolicy(store.retention, store.legal_hold, True, "option")
    if lock.default is not None:
        return WritePolicy(lock.default, False, True, "bucket-default")
    return WritePolicy(None, False, lock.enabled, "none")


# -- writing ----------------------------------------------------------------------------


def _put_exact(store: Store, path: str, data: bytes, policy: WritePolicy) -> bool:
    """:meth:`~agc._core.storage.Store.put_exact` with the protection of ``policy``."""
    return store.put_exact(path, data, retention=policy.retention, legal_hold=policy.legal_hold)


def _put_file(
    store: Store,
    path: str,
    local: Path,
    digest: str,
    algorithm: Algorithm,
    policy: WritePolicy,
) -> bool:
    """Upload a local file with ``If-None-Match: *``; an existing object is accepted only
    if it holds the same bytes (a retry of an interrupted upload)."""
    fd = open_nofollow(local, os.O_RDONLY)
    with os.fdopen(fd, "rb") as handle:
        try:
            store.put_new(path, handle, retention=policy.retention, legal_hold=policy.legal_hold)
        except PreconditionFailed:
            if _object_digest(store, path, algorithm) == digest:
                return False
            raise ArtifactSealedError(
                f"{store.url_of(path)} exists with other content; a run id is used once",
                hint="Record the run under a new run id.",
            ) from None
    return True


def _object_digest(store: Store, path: str, algorithm: Algorithm) -> str | None:
    with store.open(path) as found:
        if found is None:
            return None
        chunks, _ = found
        hasher = new_hasher(algorithm)
        for chunk in chunks:
            hasher.update(chunk)
        return hasher.hexdigest()


def _file_digest(path: Path, algorithm: Algorithm) -> str:
    hasher = new_hasher(algorithm)
    fd = open_nofollow(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(1 << 20):
            hasher.update(chunk)
    return hasher.hexdigest()


def _complete(store: Store, head: RemoteHead, policy: WritePolicy) -> bool:
    """Write the link object and the manifest the head names, if a writer died first;
    whether either was written."""
    wrote = _put_exact(store, link_path(head.position), link_bytes(head.entry), policy)
    return _put_exact(store, manifest_path(head.run_id), head.manifest, policy) or wrote


def _same_run(a: RunManifest, b: RunManifest) -> bool:
    """The two manifests seal the same artifacts (their chain links may differ)."""
    return {k: (s.digest, s.bytes) for k, s in a.artifacts.items()} == {
        k: (s.digest, s.bytes) for k, s in b.artifacts.items()
    } and a.attributes == b.attributes


@dataclass(frozen=True)
class _Published:
    """The side of a store written object by object (:func:`link_run`): nothing is
    written before the head's compare-and-swap, which carries the new manifest's exact
    bytes; the manifest object is written after it. A head whose writer died after the
    swap is completed first (its link object and manifest), by whoever reads it next."""

    store: Store
    staged: RunManifest
    policy: WritePolicy

    def tip(self, turn: ChainTurn) -> Tip:  # noqa: ARG002 - a store of objects holds no lock
        store, run_id = self.store, self.staged.run_id
        head, etag = read_remote_head(store)
        if head is not None:
            _complete(store, head, self.policy)
            if head.run_id == run_id:
                claimed = RunManifest.from_bytes(head.manifest, expected_run_id=run_id)
                if not _same_run(claimed, self.staged):
                    raise ArtifactSealedError(f"run {run_id} exists in {store.url} already")
                return Tip(head.head, etag, linked=claimed)
        position = (head.position if head else 0) + 1
        if store.exists(link_path(position)):
            _, again_etag = read_remote_head(store)
            if again_etag == etag:
                raise StoreError(
                    f"the chain head of {store.url} is behind its link objects (a link "
                    f"exists at position {position}): it was rolled back; no run can be linked",
                    hint="Run `agc-verify --all` on the store to see the chain's state.",
                )
            raise PreconditionFailed(HEAD_PATH)  # another host appended meanwhile
        return Tip(head.head if head else ChainHead(0, None), etag)

    def head(self, entry: ChainEntry, manifest: RunManifest) -> bytes:
        return RemoteHead(
            entry.position, entry.manifest_digest, entry.run_id, entry.prev, manifest.to_bytes()
        ).to_bytes()

    def before(self, entry: ChainEntry, manifest: RunManifest) -> None:
        pass  # nothing precedes the swap: the head carries the manifest

    def after(self, entry: ChainEntry, manifest: RunManifest) -> None:
        _put_exact(self.store, manifest_path(entry.run_id), manifest.to_bytes(), self.policy)


def link_remote(
    store: Store,
    staged: RunManifest,
    build: Callable[[dict[str, Any]], RunManifest],
    policy: WritePolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[RunManifest, bool]:
    """Link a closed run into the store chain by compare-and-swap on the head
    (:func:`~agc.integrity._chain.link_run`); the link object gets ``policy``.

    Returns the manifest written and whether this call linked it (False: it had been
    linked before, by an earlier try of the same upload).

    Raises:
        ArtifactSealedError: the head names the run with other content.
        StoreError: the head is damaged, rolled back (a link object exists at the
            position after it), or changed on every one of many tries.
    """
    run_id = staged.run_id

    def stored(link: dict[str, Any]) -> RunManifest:
        # The manifest as a reader parses it back: its digest is of the stored document.
        return RunManifest.from_bytes(build(link).to_bytes(), expected_run_id=run_id)

    return link_run(
        store,
        _Published(store, staged, policy),
        stored,
        retention=policy.retention,
        legal_hold=policy.legal_hold,
        sleep=sleep,
    )


@dataclass(frozen=True)
class UploadResult:
    """Outcome of :func:`upload_run`.

    Attributes:
        run_id: the run.
        store: the store URL.
        position: the run's chain position; ``digest``: its manifest digest.
        uploaded: paths (inside the store) of the objects written by this call.
        linked: this call linked the run (False: an earlier try had).
        policy: the Object Lock protection applied.
    """

    run_id: str
    store: str
    position: int
    digest: str
    uploaded: tuple[str, ...]
    linked: bool
    policy: WritePolicy

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "run_id": self.run_id,
            "store": self.store,
            "position": self.position,
            "manifest_digest": self.digest,
            "uploaded": list(self.uploaded),
            "linked": self.linked,
            "object_lock": self.policy.to_dict(),
        }


def _run_files(
    layout: StoreLayout, manifest: RunManifest
) -> Iterator[tuple[str, Path, ArtifactSeal]]:
    """(path in the store, local file, seal) of each artifact object: file, sidecar,
    quarantine file, in that order."""
    for kind in ARTIFACT_KINDS:
        seal = manifest.artifacts[kind]
        local = layout.artifact_path(manifest.run_id, kind)
        remote = artifact_path(manifest.run_id, kind)
        yield remote, local, seal
        sidecar = sidecar_name(local.name, seal.algorithm)
        yield remote.rsplit("/", 1)[0] + "/" + sidecar, local.with_name(sidecar), seal
        if seal.quarantine is not None:
            name = str(seal.quarantine["file"])
            yield remote.rsplit("/", 1)[0] + "/" + name, local.with_name(name), seal


def upload_run(
    store: Store,
    run_id: str,
    *,
    signing_key: SigningKey | None = None,
    policy: WritePolicy | None = None,
    keep_staged: bool = False,
) -> UploadResult:
    """Upload a run sealed in its staging store, link it, and remove the staged copy.

    Idempotent: a retry after any failure uploads what is missing and links the run
    once.

    Raises:
        RunNotFoundError: nothing of the run is staged.
        UnsealedRunError: the staged run is not sealed (``agc recover`` seals it).
        RecoveryRefusedError: its manifest is signed and no signing key is given (the
            manifest gets the store's chain link, which must be signed again).
        ArtifactSealedError: the run id is taken in the store by other content.
        StoreError: the store cannot be read or written.
    """
    staging = staging_store(store, run_id)
    layout = StoreLayout(staging)
    staged = read_manifest(layout, run_id) if staging.is_dir() else None
    if staged is None:
        raise RunNotFoundError(f"run {run_id} is not staged for {store.url} ({staging})")
    if not staged.closed:
        raise UnsealedRunError(
            f"run {run_id} is staged for {store.url} but not sealed",
            hint=f"Run `agc recover {run_id} --store {store.url}`.",
        )
    if staged.signature is not None and signing_key is None:
        raise RecoveryRefusedError(
            f"run {run_id} is signed: its manifest gets the chain link of {store.url} and "
            "must be signed again, which needs the signing key",
            hint="Set AGC_SIGNING_KEY (or --signing-key) to the key that signed it.",
        )
    policy = policy or write_policy(store)
    existing = read_remote_manifest(store, run_id)
    uploaded: list[str] = []
    if existing is not None:
        if not _same_run(existing, staged):
            raise ArtifactSealedError(f"run {run_id} exists in {store.url} with other content")
        final, linked = existing, False
    else:
        for remote, local, seal in _run_files(layout, staged):
            digest = (
                seal.digest if remote.endswith(".jsonl") else _file_digest(local, seal.algorithm)
            )
            if _put_file(store, remote, local, digest, seal.algorithm, policy):
                uploaded.append(remote)

        def build(link: dict[str, Any]) -> RunManifest:
            return sign_manifest(replace(staged, chain=link), signing_key)

        final, linked = link_remote(store, staged, build, policy)
        if linked:
            uploaded += [
                HEAD_PATH,
                link_path(int((final.chain or {})["position"])),
                manifest_path(run_id),
            ]
    if not keep_staged:
        shutil.rmtree(staging, ignore_errors=True)
    chain = final.chain or {}
    return UploadResult(
        run_id=run_id,
        store=store.url,
        position=int(chain.get("position", 0)),
        digest=manifest_digest(final),
        uploaded=tuple(uploaded),
        linked=linked,
        policy=policy,
    )


def object_run_linked(store: Store, run_id: str) -> bool:
    """Whether the store's chain has linked ``run_id``: a manifest is written only once
    a run is linked, so any version of it (or a delete marker over one) says so.

    Raises:
        StoreError: the bucket cannot be listed.
    """
    return any(True for _ in store.list_versions(manifest_path(run_id)))


def refuse_if_taken(store: Store, run_id: str) -> None:
    """Refuse a run id the store already holds, before anything is written locally.

    Raises:
        RunExistsError: the run's manifest has a version (the chain linked the run).
        ArtifactSealedError: the store has an artifact of the run.
        UnsealedRunError: the run is staged and not uploaded yet.
        StoreError: the store cannot be read.
    """
    validate_run_id(run_id)
    if object_run_linked(store, run_id):
        raise RunExistsError(
            f"run {run_id} was linked in {store.url} already (its manifest has a version, "
            "current or deleted); a run id is recorded once",
            hint=f"Check it with `agc-verify {run_id} --store {store.url}`; record the new "
            "run under a new run id.",
        )
    for path in (manifest_path(run_id), *(artifact_path(run_id, k) for k in ARTIFACT_KINDS)):
        if store.exists(path):
            raise ArtifactSealedError(
                f"run {run_id} exists in {store.url}; a run id is used once",
                hint="Record the run under a new run id.",
            )
    staging = staging_store(store, run_id)
    if staging.exists():
        raise UnsealedRunError(
            f"run {run_id} is staged in {staging} and not uploaded yet",
            hint=f"Run `agc recover {run_id} --store {store.url}` to upload it.",
        )


def heal_remote(store: Store, policy: WritePolicy | None = None) -> str | None:
    """Complete the link the head names if its writer died after the swap; returns
    the run id whose link or manifest was written, else ``None``.

    Raises:
        StoreError: the head is damaged or names content that differs from the stored
            link or manifest.
    """
    head, _ = read_remote_head(store)
    if head is None:
        return None
    return head.run_id if _complete(store, head, policy or write_policy(store)) else None


@contextlib.contextmanager
def staged_writing(store: Store, run_id: str) -> Iterator[Path]:
    """The staging store for a new run: the run id is checked free first; on a failure
    before any record was written, the empty staging folder is removed again."""
    refuse_if_taken(store, run_id)
    staging = staging_store(store, run_id)
    try:
        staging.mkdir(parents=True, exist_ok=False, mode=0o700)
    except FileExistsError as exc:
        raise UnsealedRunError(f"run {run_id} is being staged by another writer") from exc
    except OSError as exc:
        raise StoreError(f"cannot create the staging folder {staging}: {exc.strerror}") from exc
    try:
        yield staging
    except BaseException:
        _remove_if_empty(staging)
        raise


def _remove_if_empty(staging: Path) -> None:
    """Remove a staging store that holds no record (the run id stays free)."""
    for path in staging.rglob("*.jsonl"):
        with contextlib.suppress(OSError):
            if path.stat().st_size:
                return
    shutil.rmtree(staging, ignore_errors=True)


def upload_sealed_file(store: Store, file: Path, sidecar: Path) -> dict[str, Any]:
    """Upload a file sealed with ``agc seal`` and its sidecar to ``files/<name>``
    (sidecar last, each with ``If-None-Match: *`` and the store's write policy).

    An object already there is accepted only if it holds the same bytes.

    Raises:
        ArtifactSealedError: ``files/<name>`` holds other bytes.
        StoreError: the store cannot be written.
    """
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
