"""``agc recover``: seal a run that crashed before ``close()``, without losing a byte.

For each artifact that is not sealed: take the file's writer lock (a live writer makes
recovery refuse), check the file against its crash checkpoints (a prefix that does not
match is tampering: refuse), move a torn last line into a quarantine file beside it
(``<name>.quarantine``; its bytes and digest go into the manifest), then seal: sidecar
plus manifest entry with ``recovered: true``. A missing artifact is created empty and
sealed. Recovering a sealed run changes nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agc._core.checkpoint import (
    CHECKPOINT_SUFFIX,
    check_prefix,
    parse_checkpoints,
    remove_checkpoints,
)
from agc._core.digest import (
    DEFAULT_ALGORITHM,
    Algorithm,
    digest_fd,
    digests_equal,
    new_hasher,
)
from agc._core.fs import (
    MACHINE_ERRNOS,
    describe_os_error,
    exclusive_lock,
    open_nofollow,
    prepare_write,
    read_small_file,
    write_error,
)
from agc._core.jsonl import unix_ms
from agc._core.sidecar import format_sidecar, parse_sidecar, sidecar_name
from agc._core.store import ARTIFACT_KINDS, ArtifactKind, StoreLayout, validate_run_id
from agc.errors import (
    AgcError,
    RecoveryRefusedError,
    RunLockedError,
    RunNotFoundError,
    StoreError,
)
from agc.integrity._chain import (
    append_link,
    chain_lock_path,
    manifest_digest,
    read_chain,
    read_head,
    write_head,
)
from agc.integrity._manifest import ArtifactSeal
from agc.integrity._signing import SigningKey
from agc.integrity._store_io import read_manifest, record_seal

__all__ = ["ArtifactRecovery", "RecoveryReport", "recover_run"]

QUARANTINE_SUFFIX = ".quarantine"


@dataclass(frozen=True)
class ArtifactRecovery:
    """What recovery did to one artifact.

    Attributes:
        action: ``already-sealed``, ``sealed`` or ``created-empty``.
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
    link was repaired), ``head-repaired``, ``not-closed`` or ``cannot-link`` (another
    run took the position; left alone and reported by ``agc-verify --all``)."""

    @property
    def changed(self) -> bool:
        return self.chain in {"linked", "head-repaired"} or any(
            a.action != "already-sealed" for a in self.artifacts
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": 1,
            "run_id": self.run_id,
            "changed": self.changed,
            "chain": self.chain,
            "artifacts": [a.to_dict() for a in self.artifacts],
        }


def recover_run(
    run_id: str,
    store: str | os.PathLike[str] | None = None,
    *,
    signing_key: SigningKey | None = None,
    clock: Callable[[], int] | None = None,
) -> RecoveryReport:
    """Seal every unsealed artifact of a crashed run (idempotent).

    Raises:
        RunIdInvalidError: bad run id.
        RunNotFoundError: the store has no manifest and no artifact file of the run.
        RunLockedError: a writer still holds a file of the run.
        RecoveryRefusedError: a prefix does not match its checkpoint or its earlier seal.
        FileWriteError: the disk is full, read-only …: what was done is whole, and
            running recovery again once the disk can be written finishes it.
        StoreError: the store cannot be read or written.
    """
    validate_run_id(run_id)
    layout = StoreLayout.at(store)
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
    now = clock or unix_ms
    results = []
    try:
        for kind in ARTIFACT_KINDS:
            manifest = read_manifest(layout, run_id)
            seal = manifest.artifacts.get(kind) if manifest else None
            if seal is not None and seal.closed:
                results.append(
                    ArtifactRecovery(kind, "already-sealed", seal.records, seal.bytes, seal.bytes)
                )
                continue
            results.append(_recover_artifact(layout, run_id, kind, seal, signing_key, now))
        chain = _repair_chain(layout, run_id)
    except OSError as exc:
        # A folder, lock or cut that failed: name the file; a full disk is exit 3 and
        # `agc recover` is simply run again once there is space.
        where = exc.filename or layout.root
        if exc.errno in MACHINE_ERRNOS:
            raise write_error(where, exc) from exc
        raise StoreError(f"cannot recover run {run_id}: {where}: {describe_os_error(exc)}") from exc
    return RecoveryReport(run_id=run_id, artifacts=tuple(results), chain=chain)


def _repair_chain(layout: StoreLayout, run_id: str) -> str:
    """Finish a chain link that a crash interrupted (the manifest is never rewritten)."""
    with exclusive_lock(chain_lock_path(layout), blocking=True, what="store chain"):
        manifest = read_manifest(layout, run_id)
        if manifest is None or not manifest.closed or manifest.chain is None:
            return "not-closed"
        entries, _ = read_chain(layout)
        digest = manifest_digest(manifest)
        if any(entry.manifest_digest == digest for entry in entries):
            head = read_head(layout)
            last = entries[-1]
            if head is not None and head.digest == last.manifest_digest:
                return "already-linked"
            write_head(layout, last)
            return "head-repaired"
        last_position = entries[-1].position if entries else 0
        last_digest = entries[-1].manifest_digest if entries else None
        if (
            manifest.chain.get("position") == last_position + 1
            and manifest.chain.get("prev") == last_digest
        ):
            append_link(layout, manifest)
            return "linked"
        return "cannot-link"


def _recover_artifact(
    layout: StoreLayout,
    run_id: str,
    kind: ArtifactKind,
    reopened: ArtifactSeal | None,
    signing_key: SigningKey | None,
    now: Callable[[], int],
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
        verified = _verified_prefix(fd, path, size, reopened)
        boundary = _last_boundary(fd, size)
        tail = os.pread(fd, size - boundary, boundary) if boundary < size else b""
        os.lseek(fd, 0, os.SEEK_SET)
        digest, length = digest_fd(fd, algorithm, limit=boundary)
        records = _count_records(fd, length)
        listed = (reopened.quarantine or {}).get("file") if reopened else None
        target, keep = _quarantine_target(path, tail, listed)
        quarantine = None if target is None else _quarantine_facts(target, keep, algorithm)
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
        )
        sidecar = path.with_name(sidecar_name(path.name, seal.algorithm))
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
        record_seal(layout, run_id, seal, signer=signing_key)
        remove_checkpoints(path)
    finally:
        os.close(fd)
    return ArtifactRecovery(
        kind=kind,
        action="created-empty" if created else "sealed",
        records=seal.records,
        bytes=seal.bytes,
        verified_bytes=min(verified, seal.bytes),
        quarantined_bytes=int(quarantine["bytes"]) if quarantine else 0,
        quarantine=str(quarantine["file"]) if quarantine else None,
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
    if not os.path.lexists(sidecar):
        return False
    parsed = parse_sidecar(read_small_file(sidecar, max_bytes=4096), algorithm=seal.algorithm)
    if not digests_equal(parsed.digest, seal.digest):
        raise RecoveryRefusedError(f"{sidecar} exists and does not match {path.name}")
    return True


def _verified_prefix(fd: int, path: Path, size: int, reopened: ArtifactSeal | None) -> int:
    """Bytes proven by the earlier seal or the checkpoints; refuse on a mismatch."""
    if reopened is not None:
        os.lseek(fd, 0, os.SEEK_SET)
        digest, got = digest_fd(fd, reopened.algorithm, limit=reopened.bytes)
        if got != reopened.bytes or not digests_equal(reopened.digest, digest):
            raise RecoveryRefusedError(f"{path} no longer matches its earlier seal")
        return reopened.bytes
    try:
        data = read_small_file(path.with_name(path.name + CHECKPOINT_SUFFIX), max_bytes=1 << 30)
    except FileNotFoundError:
        return 0
    prefix = check_prefix(fd, parse_checkpoints(data)[0], size=size)
    if prefix.mismatch is not None:
        raise RecoveryRefusedError(
            f"{path} does not match its checkpoint at {prefix.mismatch.bytes} bytes"
        )
    if prefix.beyond_end is not None:
        raise RecoveryRefusedError(
            f"{path} is shorter than its checkpoint at {prefix.beyond_end.bytes} bytes"
        )
    return prefix.verified_bytes


def _last_boundary(fd: int, size: int) -> int:
    """Offset just after the last ``\\n`` (0 if none)."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        chunk = os.pread(fd, end - start, start)
        index = chunk.rfind(b"\n")
        if index >= 0:
            return start + index + 1
        end = start
    return 0


def _count_records(fd: int, length: int) -> int:
    count = position = 0
    while position < length:
        chunk = os.pread(fd, min(8 << 20, length - position), position)
        if not chunk:
            break
        count += chunk.count(b"\n")
        position += len(chunk)
    return count
