"""``agc recover``: seal a run that crashed before ``close()``, without losing a byte.

For each artifact that is not sealed: take the file's writer lock (a live writer makes
recovery refuse), check the file against its crash checkpoints (a prefix that does not
match is tampering: refuse), move a torn last line into a quarantine file beside it
(``<name>.quarantine``; its bytes and digest go into the manifest), then seal: sidecar
plus manifest entry with ``recovered: true``. A missing artifact is created empty and
sealed. The manifest entry keeps how much of the file the checkpoints (or an earlier
seal) vouched for (``verified_bytes``, ``verified_records``) and the checkpoints that
matched; the verifier fails a recovered file with unvouched bytes unless recovered runs
are allowed. Recovering a sealed run changes nothing; a run in the legacy store format
(sealed by an earlier release) is refused, never converted.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agc._core.checkpoint import (
    CHECKPOINT_SUFFIX,
    Checkpoint,
    check_prefix,
    read_checkpoints,
    remove_checkpoints,
)
from agc._core.digest import (
    DEFAULT_ALGORITHM,
    Algorithm,
    digest_fd,
    digests_equal,
    new_hasher,
)
from agc._core.folderstore import FolderStore
from agc._core.fs import (
    MACHINE_ERRNOS,
    describe_os_error,
    exclusive_lock,
    last_line_end,
    open_nofollow,
    prepare_write,
    read_small_file,
    write_error,
)
from agc._core.jsonl import unix_ms
from agc._core.report import SCHEMA_VERSION
from agc._core.sidecar import format_sidecar, read_sidecar, sidecar_path
from agc._core.storage import Store
from agc._core.store import ARTIFACT_KINDS, ArtifactKind, RunId, StoreArg, StoreLayout
from agc.errors import (
    AgcError,
    RecoveryRefusedError,
    RunLockedError,
    RunNotFoundError,
    SidecarInvalidError,
    StoreError,
)
from agc.integrity._chain import (
    chain_turn,
    heal_chain,
    link_closed_manifest,
    manifest_digest,
    read_chain,
)
from agc.integrity._manifest import (
    ArtifactSeal,
    RunManifest,
    check_attributes,
    sealed_checkpoints,
)
from agc.integrity._run_reader import is_legacy_store_run
from agc.integrity._signing import SigningKey
from agc.integrity._store_io import read_manifest, record_seal, sign_manifest
from agc.integrity._target import RemoteStoreRecovery, StoreRecovery, run_target

__all__ = [
    "ArtifactRecovery",
    "RecoveryReport",
    "RemoteStoreRecovery",
    "StoreRecovery",
    "recover_run",
    "recover_store",
]

QUARANTINE_SUFFIX = ".quarantine"


@dataclass(frozen=True)
class ArtifactRecovery:
    """What recovery did to one artifact.

    Attributes:
        action: ``already-sealed``, ``sealed``, ``created-empty`` (the other artifact
            had records) or ``removed-empty`` (the run was killed before its first
            record: its empty files were removed, nothing was sealed).
        records: records in the sealed file.
        bytes: sealed length in bytes.
        verified_bytes: prefix proven by crash checkpoints (or an earlier seal).
        quarantined_bytes: torn bytes moved to ``quarantine`` (0 if none).
        quarantine: the quarantine file's name, if one was written.
    """

    kind: ArtifactKind
    action: str
    records: int
    bytes: int
    verified_bytes: int
    quarantined_bytes: int = 0
    quarantine: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "action": self.action,
            "records": self.records,
            "bytes": self.bytes,
            "verified_bytes": self.verified_bytes,
            "unverified_bytes": self.bytes - self.verified_bytes,
            "quarantined_bytes": self.quarantined_bytes,
            "quarantine": self.quarantine,
        }


@dataclass(frozen=True)
class RecoveryReport:
    """Outcome of :func:`recover_run`; ``changed`` is False when all was sealed already."""

    run_id: str
    artifacts: tuple[ArtifactRecovery, ...]
    chain: str = "already-linked"
    """``already-linked``, ``linked`` (a crash between writing the manifest and its chain
    link was repaired), ``head-repaired``, ``relinked`` (a closed run no link named was
    linked at the end of the chain), ``not-closed`` or ``cannot-link`` (a link names
    the run with another manifest: replaced, left alone and reported by
    ``agc-verify --all``)."""
    object_store: Mapping[str, Any] | None = None
    """For a run staged for an object store: its upload (store, position, objects)."""

    @property
    def changed(self) -> bool:
        return self.chain in {"linked", "head-repaired", "relinked"} or any(
            a.action != "already-sealed" for a in self.artifacts
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "run_id": self.run_id,
            "changed": self.changed,
            "chain": self.chain,
            "artifacts": [a.to_dict() for a in self.artifacts],
            **({} if self.object_store is None else {"object_store": dict(self.object_store)}),
        }


def recover_run(
    run_id: str,
    store: StoreArg | Store = None,
    *,
    signing_key: SigningKey | None = None,
    clock: Callable[[], int] | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> RecoveryReport:
    """Seal every unsealed artifact of a crashed run (idempotent).

    For an object store (``s3://…``) the run staged on this host is sealed so and
    uploaded (also one sealed whose upload failed); the report's ``object_store``
    describes the upload.

    ``attributes``: facts about the run for its manifest (a JSON object, at most 64 KiB,
    as a writer's), stored by the first artifact this recovery seals when the run has
    none yet: what the writer stopped by the crash would have stored at its seal.

    Raises:
        RunIdInvalidError: bad run id.
        RunNotFoundError: the store has no manifest and no artifact file of the run
            (an object store: the run is neither staged on this host nor uploaded, is
            uploaded already, or was stopped before its first record).
        RunLockedError: a writer still holds a file of the run.
        RecordInvalidError: ``attributes`` cannot be stored.
        ManifestInvalidError: the run already has other ``attributes``.
        RecoveryRefusedError: a prefix does not match its checkpoint or its earlier seal;
            a signed run without ``signing_key``; a run in the legacy store format
            (nothing is changed).
        FileWriteError: the disk is full, read-only …: what was done is whole, and
            running recovery again once the disk can be written finishes it.
        StoreError: the store cannot be read or written.
    """
    run_id = RunId(run_id)
    checked = None if attributes is None else check_attributes(attributes)
    target = run_target(store)
    report = _recover_in(
        StoreLayout(target.recovery_folder(run_id)),
        run_id,
        signing_key=signing_key,
        clock=clock,
        attributes=checked,
    )
    upload = target.publish_recovered(
        run_id, closed=report.chain != "not-closed", signing_key=signing_key
    )
    return report if upload is None else replace(report, object_store=upload.to_dict())


def _recover_in(
    layout: StoreLayout,
    run_id: str,
    *,
    signing_key: SigningKey | None,
    clock: Callable[[], int] | None,
    attributes: Mapping[str, Any] | None = None,
) -> RecoveryReport:
    """:func:`recover_run` in the store folder of ``layout``."""
    if not layout.root.is_dir():
        raise StoreError(f"store {layout.root} does not exist or is not a folder")
    if read_manifest(layout, run_id) is None and not any(
        os.path.lexists(layout.artifact_path(run_id, kind)) for kind in ARTIFACT_KINDS
    ):
        # Sealing an empty run here would chain it into the store for good.
        raise RunNotFoundError(
            f"run {run_id} has nothing to recover: no manifest and no artifact file "
            f"in store {layout.root}"
        )
    if read_manifest(layout, run_id) is None and is_legacy_store_run(
        FolderStore(layout.root), run_id
    ):
        # Sealed by an earlier release: nothing crashed. Sealing it again in agc's format
        # would put a new seal, a manifest and a chain link over bytes agc never checked.
        raise RecoveryRefusedError(
            f"run {run_id} is in the legacy store format (a digest-only SHA-256 sidecar, "
            "no manifest): it was sealed by an earlier release and there is nothing to "
            "recover; nothing was changed",
            hint=f"`agc-verify {run_id}` checks it as it is (a legacy-format warning).",
        )
    now = clock or unix_ms
    results = []
    try:
        if (
            read_manifest(layout, run_id) is None
            and _only_empty_files(layout, run_id)
            and _remove_empty_files(layout, run_id)
        ):
            # Killed before its first record: there is nothing to seal, and a sealed
            # empty run would never verify. Its empty files were removed instead.
            return RecoveryReport(
                run_id=run_id,
                artifacts=tuple(
                    ArtifactRecovery(kind, "removed-empty", 0, 0, 0) for kind in ARTIFACT_KINDS
                ),
                chain="not-closed",
            )
        _refuse_to_drop_a_signature(read_manifest(layout, run_id), run_id, signing_key)
        for kind in ARTIFACT_KINDS:
            manifest = read_manifest(layout, run_id)
            seal = manifest.artifacts.get(kind) if manifest else None
            if seal is not None and seal.closed:
                # What an earlier recovery proved stays what it proved: a recovered
                # file's bytes no checkpoint vouched for are not verified now.
                unvouched = seal.unvouched
                verified = seal.bytes - (unvouched[0] if unvouched is not None else seal.bytes)
                results.append(
                    ArtifactRecovery(kind, "already-sealed", seal.records, seal.bytes, verified)
                )
                continue
            results.append(
                _recover_artifact(layout, run_id, kind, seal, signing_key, now, attributes)
            )
        chain = _repair_chain(layout, run_id, signing_key)
    except OSError as exc:
        # A folder, lock or cut that failed: name the file; a full disk is exit 3 and
        # `agc recover` is simply run again once there is space.
        where = exc.filename or layout.root
        if exc.errno in MACHINE_ERRNOS:
            raise write_error(where, exc) from exc
        raise StoreError(f"cannot recover run {run_id}: {where}: {describe_os_error(exc)}") from exc
    return RecoveryReport(run_id=run_id, artifacts=tuple(results), chain=chain)


def _refuse_to_drop_a_signature(
    manifest: RunManifest | None, run_id: str, signing_key: SigningKey | None
) -> None:
    """A signed run that still has something to seal needs the key: sealing rewrites
    the manifest, and without the key it would lose its signature for good (closed and
    chained, it then fails every check with a trusted key as ``unsigned``)."""
    if manifest is None or manifest.signature is None or signing_key is not None:
        return
    if all(
        kind in manifest.artifacts and manifest.artifacts[kind].closed for kind in ARTIFACT_KINDS
    ):
        return  # nothing to seal: only the chain may need repair (refused there likewise)
    raise RecoveryRefusedError(
        f"run {run_id} is signed (key id {manifest.signature.get('key_id')}); sealing "
        "it rewrites its manifest, which needs the signing key",
        hint="Set AGC_SIGNING_KEY (or --signing-key) to the key that signed it.",
    )


def _only_empty_files(layout: StoreLayout, run_id: str) -> bool:
    """Whether the run's artifact files are all empty regular files with no checkpoint."""
    for kind in ARTIFACT_KINDS:
        path = layout.artifact_path(run_id, kind)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size:
            return False
        if os.path.lexists(path.with_name(path.name + CHECKPOINT_SUFFIX)):
            return False
    return True


def _remove_empty_files(layout: StoreLayout, run_id: str) -> bool:
    """Remove the run's empty artifact files, each under its writer lock.

    A live writer holds its files' ``flock`` from open to seal and may hold up to its
    buffer of records not yet written, so an empty file is not proof of a dead run:
    every file is locked first (``RunLockedError`` while a writer has it), then looked
    at again (still the same empty file, no checkpoint, no manifest). Returns False,
    removing nothing, when that second look no longer shows an empty run.

    Raises:
        RunLockedError: a writer still holds a file of the run.
        OSError: a file cannot be opened, locked or removed.
    """
    held: list[tuple[Path, int]] = []
    try:
        for kind in ARTIFACT_KINDS:
            path = layout.artifact_path(run_id, kind)
            try:
                fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
            except FileNotFoundError:
                continue
            held.append((path, fd))
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise RunLockedError(f"{kind} of run {run_id} is still open in a writer") from exc
        for path, fd in held:
            opened, named = os.fstat(fd), os.lstat(path)
            if (
                not stat.S_ISREG(opened.st_mode)
                or opened.st_size
                or (opened.st_dev, opened.st_ino) != (named.st_dev, named.st_ino)
                or os.path.lexists(path.with_name(path.name + CHECKPOINT_SUFFIX))
            ):
                return False
        if read_manifest(layout, run_id) is not None:
            return False
        for path, _ in held:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        return True
    finally:
        for _, fd in held:
            os.close(fd)


def _repair_chain(layout: StoreLayout, run_id: str, signing_key: SigningKey | None) -> str:
    """Heal the store chain, then make sure the run, if closed, is linked.

    A closed manifest that no link names (a store damaged before links were written
    with an intent, or by hand) is linked at the end of the chain: its ``chain`` member
    is rewritten and, when it was signed, signed again with ``signing_key``. A run that
    some link already names is never re-linked: its manifest was replaced, which
    ``agc-verify --all`` reports.
    """

    def reader(other: str) -> RunManifest | None:
        return read_manifest(layout, other)

    with exclusive_lock(
        layout.manifest_lock_path(run_id), blocking=True, what=f"manifest of run {run_id}"
    ):
        with chain_turn(layout) as turn:
            heal = heal_chain(layout, reader, turn)
            manifest = read_manifest(layout, run_id)
            if manifest is None or not manifest.closed:
                return "not-closed"
            entries, _ = read_chain(layout)
            digest = manifest_digest(manifest)
            if any(entry.manifest_digest == digest for entry in entries):
                if heal.linked == run_id:
                    return "linked"
                return "head-repaired" if heal.head_repaired else "already-linked"
            if any(entry.run_id == run_id for entry in entries):
                return "cannot-link"  # replaced after it was linked: evidence, not a crash
        if manifest.signature is not None and signing_key is None:
            raise RecoveryRefusedError(
                f"run {run_id} is closed but not in the store chain, and its manifest is "
                "signed: linking it rewrites the manifest, which needs the signing key",
                hint="Set AGC_SIGNING_KEY (or --signing-key) to the key that signed it.",
            )
        closed = manifest

        def sign(link: dict[str, Any]) -> RunManifest:
            return sign_manifest(replace(closed, chain=link), signing_key)

        link_closed_manifest(layout, run_id, sign, reader)
    return "relinked"


def recover_store(
    store: StoreArg | Store = None, *, signing_key: SigningKey | None = None
) -> StoreRecovery | RemoteStoreRecovery:
    """Repair the store-level state a crash can leave, whatever run it came from.

    A store folder: heals the chain (a torn last link, an interrupted link, a stale
    head: see :mod:`agc.integrity._chain`) and removes temporary files that a killed
    writer left in the store's folders (never one a live writer holds). An object store:
    completes the link the chain head names if its writer died after the swap, and
    uploads every run staged for it on this host that is sealed (``signing_key`` signs
    a signed run's manifest again with its link). Idempotent.

    Raises:
        StoreError: the store does not exist, cannot be read or written, or its chain
            is damaged in a way no crash produces.
    """
    return run_target(store).recover_store(signing_key=signing_key)


def _recover_artifact(
    layout: StoreLayout,
    run_id: str,
    kind: ArtifactKind,
    reopened: ArtifactSeal | None,
    signing_key: SigningKey | None,
    now: Callable[[], int],
    attributes: Mapping[str, Any] | None = None,
) -> ArtifactRecovery:
    """Seal one artifact. Everything is computed and the new files are written in full
    under temporary names before the first change, so a full disk changes nothing; the
    steps after that (quarantine, cut the torn tail, sidecar, manifest) are each
    atomic, and a retry finishes what an interrupted run of them began."""
    path = layout.artifact_path(run_id, kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    layout.manifests_dir.mkdir(parents=True, exist_ok=True)
    created = not os.path.lexists(path)
    fd = open_nofollow(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise RunLockedError(f"{kind} of run {run_id} is still open in a writer") from exc
        size = os.fstat(fd).st_size
        algorithm = reopened.algorithm if reopened else DEFAULT_ALGORITHM
        verified, verified_records, matched = _verified_prefix(fd, path, size, reopened)
        boundary = last_line_end(fd, size)
        tail = os.pread(fd, size - boundary, boundary) if boundary < size else b""
        os.lseek(fd, 0, os.SEEK_SET)
        digest, length = digest_fd(fd, algorithm, limit=boundary)
        records = _count_records(fd, length)
        listed = (reopened.quarantine or {}).get("file") if reopened else None
        target, keep = _quarantine_target(path, tail, listed)
        quarantine: Mapping[str, Any] | None = (
            None if target is None else _quarantine_facts(target, keep, algorithm)
        )
        if quarantine is None and reopened is not None:
            quarantine = reopened.quarantine  # an earlier recovery's, still beside the file
        previous_segments: tuple[Any, ...] = ()
        if reopened is not None:
            previous_segments = (
                *reopened.segments,
                {
                    "records": reopened.records,
                    "bytes": reopened.bytes,
                    "digest": reopened.digest,
                    "sealed_at_ms": reopened.sealed_at_ms,
                },
            )
        seal = ArtifactSeal(
            kind=kind,
            file=path.name,
            algorithm=algorithm,
            digest=digest,
            bytes=length,
            records=records,
            last_seq=records - 1 if records else None,
            sealed_at_ms=now(),
            segments=previous_segments,
            recovered=True,
            quarantine=quarantine,
            checkpoints=sealed_checkpoints(
                reopened.checkpoints if reopened is not None else (),
                [c for c in matched if c.bytes <= length],
            ),
            # Bytes past the proven prefix, and what an earlier recovery left unvouched.
            unverified_bytes=max(0, length - verified) + _earlier(reopened, "bytes"),
            unverified_records=max(0, records - verified_records) + _earlier(reopened, "records"),
        )
        sidecar = sidecar_path(path, seal.algorithm)
        replace_sidecar = reopened is not None
        sidecar_ok = not replace_sidecar and _existing_sidecar_agrees(sidecar, path, seal)
        with contextlib.ExitStack() as stack:
            new_tail = None
            if tail and target is not None and not os.path.lexists(target):
                new_tail = stack.enter_context(prepare_write(target, tail))
            new_sidecar = None
            if not sidecar_ok:
                new_sidecar = stack.enter_context(
                    prepare_write(sidecar, format_sidecar(seal.digest, seal.file))
                )
            # Space for both is taken: from here on, each step is one rename or a cut.
            if new_tail is not None:
                new_tail.commit(overwrite=False)
            if tail:
                os.ftruncate(fd, boundary)
                os.fsync(fd)
            if new_sidecar is not None:
                new_sidecar.commit(overwrite=replace_sidecar)
        record_seal(layout, run_id, seal, signer=signing_key, attributes=attributes)
        remove_checkpoints(path)
    finally:
        os.close(fd)
    return ArtifactRecovery(
        kind=kind,
        action="created-empty" if created else "sealed",
        records=seal.records,
        bytes=seal.bytes,
        verified_bytes=min(verified, seal.bytes),
        quarantined_bytes=len(keep) if target is not None else 0,
        quarantine=target.name if target is not None else None,
    )


def _quarantine_target(path: Path, tail: bytes, listed: object) -> tuple[Path | None, bytes]:
    """Where the torn tail goes, and the bytes the quarantine file holds.

    An earlier recovery that was stopped after it moved the tail (a full disk while
    sealing) left the tail in the last quarantine file and none in the artifact: that
    file is adopted. A tail equal to the last quarantine file's bytes (stopped before
    the tail was cut) reuses it; otherwise the tail gets the next free name.
    """
    names = [path.name + QUARANTINE_SUFFIX]
    while os.path.lexists(path.with_name(names[-1])):
        names.append(f"{path.name}{QUARANTINE_SUFFIX}-{len(names) + 1}")
    last = path.with_name(names[-2]) if len(names) > 1 else None
    if last is not None and last.name != listed:
        try:
            held = read_small_file(last, max_bytes=max(len(tail), 1 << 20))
        except (OSError, AgcError):
            held = None
        if held is not None and (not tail or held == tail):
            return last, held
    if not tail:
        return None, b""
    return path.with_name(names[-1]), tail


def _quarantine_facts(target: Path, data: bytes, algorithm: Algorithm) -> dict[str, Any]:
    hasher = new_hasher(algorithm)
    hasher.update(data)
    return {"file": target.name, "bytes": len(data), "digest": hasher.hexdigest()}


def _existing_sidecar_agrees(sidecar: Path, path: Path, seal: ArtifactSeal) -> bool:
    """A sidecar left by a crash between writing it and the manifest: kept if it agrees."""
    try:
        parsed = read_sidecar(path, seal.algorithm)
    except SidecarInvalidError as exc:
        raise RecoveryRefusedError(
            f"{sidecar} exists and is not a valid sidecar ({exc.message})"
        ) from exc
    if parsed is None:
        return False
    if not digests_equal(parsed.digest, seal.digest):
        raise RecoveryRefusedError(f"{sidecar} exists and does not match {path.name}")
    return True


def _verified_prefix(
    fd: int, path: Path, size: int, reopened: ArtifactSeal | None
) -> tuple[int, int, list[Checkpoint]]:
    """``(bytes, records, checkpoints)`` of the prefix proven by the earlier seal and the
    crash checkpoints (those that matched, in order); refuse on a mismatch."""
    proven = (0, 0)
    if reopened is not None:
        os.lseek(fd, 0, os.SEEK_SET)
        digest, got = digest_fd(fd, reopened.algorithm, limit=reopened.bytes)
        if got != reopened.bytes or not digests_equal(reopened.digest, digest):
            raise RecoveryRefusedError(f"{path} no longer matches its earlier seal")
        proven = (reopened.bytes, reopened.records)
    checkpoints = read_checkpoints(path)[0]
    prefix = check_prefix(fd, checkpoints, size=size)
    if prefix.mismatch is not None:
        raise RecoveryRefusedError(
            f"{path} does not match its checkpoint at {prefix.mismatch.bytes} bytes"
        )
    if prefix.beyond_end is not None:
        raise RecoveryRefusedError(
            f"{path} is shorter than its checkpoint at {prefix.beyond_end.bytes} bytes"
        )
    matched = sorted(
        (c for c in checkpoints if c.bytes <= prefix.verified_bytes), key=lambda c: c.bytes
    )
    if prefix.verified_bytes > proven[0]:
        proven = (prefix.verified_bytes, prefix.verified_records)
    return proven[0], proven[1], matched


def _earlier(reopened: ArtifactSeal | None, unit: str) -> int:
    """What an earlier recovery of a re-opened file left unvouched (an unknown count,
    from a manifest recorded before counts were kept, as all of that seal)."""
    if reopened is None or not reopened.recovered:
        return 0
    unvouched = reopened.unvouched
    if unvouched is None:
        return reopened.bytes if unit == "bytes" else reopened.records
    return unvouched[0] if unit == "bytes" else unvouched[1]


def _count_records(fd: int, length: int) -> int:
    count = position = 0
    while position < length:
        chunk = os.pread(fd, min(8 << 20, length - position), position)
        if not chunk:
            break
        count += chunk.count(b"\n")
        position += len(chunk)
    return count
