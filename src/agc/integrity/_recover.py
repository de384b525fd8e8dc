"""``agc recover``: seal a run that crashed before ``close()``, without losing a byte.

For each artifact that is not sealed: take the file's writer lock (a live writer makes
recovery refuse), check the file against its crash checkpoints (a prefix that does not
match is tampering: refuse), move a torn last line into a quarantine file beside it
(``<name>.quarantine``; its bytes and digest go into the manifest), then seal: sidecar
plus manifest entry with ``recovered: true``. A missing artifact is created empty and
sealed. Recovering a sealed run changes nothing.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agc._core.checkpoint import (
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
from agc._core.fs import (
    atomic_write_bytes,
    exclusive_lock,
    fsync_dir,
    open_nofollow,
)
from agc._core.jsonl import unix_ms
from agc._core.sidecar import format_sidecar, read_sidecar, sidecar_path
from agc._core.store import ARTIFACT_KINDS, ArtifactKind, StoreLayout, validate_run_id
from agc.errors import (
    RecoveryRefusedError,
    RunLockedError,
    RunNotFoundError,
    SidecarInvalidError,
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
    for kind in ARTIFACT_KINDS:
        manifest = read_manifest(layout, run_id)
        seal = manifest.artifacts.get(kind) if manifest else None
        if seal is not None and seal.closed:
            results.append(
                ArtifactRecovery(kind, "already-sealed", seal.records, seal.bytes, seal.bytes)
            )
            continue
        results.append(_recover_artifact(layout, run_id, kind, seal, signing_key, now))
    return RecoveryReport(
        run_id=run_id, artifacts=tuple(results), chain=_repair_chain(layout, run_id)
    )


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
        quarantine: dict[str, Any] | None = None
        if boundary < size:
            quarantine = _quarantine_tail(fd, path, boundary, size, algorithm)
            os.ftruncate(fd, boundary)
            os.fsync(fd)
        os.lseek(fd, 0, os.SEEK_SET)
        digest, length = digest_fd(fd, algorithm)
        records = _count_records(fd, length)
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
        _write_sidecar(path, seal, replace_existing=reopened is not None)
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


def _verified_prefix(fd: int, path: Path, size: int, reopened: ArtifactSeal | None) -> int:
    """Bytes proven by the earlier seal or the checkpoints; refuse on a mismatch."""
    if reopened is not None:
        os.lseek(fd, 0, os.SEEK_SET)
        digest, got = digest_fd(fd, reopened.algorithm, limit=reopened.bytes)
        if got != reopened.bytes or not digests_equal(reopened.digest, digest):
            raise RecoveryRefusedError(f"{path} no longer matches its earlier seal")
        return reopened.bytes
    prefix = check_prefix(fd, read_checkpoints(path)[0], size=size)
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


def _quarantine_tail(
    fd: int, path: Path, boundary: int, size: int, algorithm: Algorithm
) -> dict[str, Any]:
    tail = os.pread(fd, size - boundary, boundary)
    number = 1
    while True:
        suffix = QUARANTINE_SUFFIX if number == 1 else f"{QUARANTINE_SUFFIX}-{number}"
        target = path.with_name(path.name + suffix)
        if not os.path.lexists(target):
            break
        number += 1
    atomic_write_bytes(target, tail, overwrite=False)
    hasher = new_hasher(algorithm)
    hasher.update(tail)
    fsync_dir(path.parent)
    return {"file": target.name, "bytes": len(tail), "digest": hasher.hexdigest()}


def _count_records(fd: int, length: int) -> int:
    count = position = 0
    while position < length:
        chunk = os.pread(fd, min(8 << 20, length - position), position)
        if not chunk:
            break
        count += chunk.count(b"\n")
        position += len(chunk)
    return count


def _write_sidecar(path: Path, seal: ArtifactSeal, *, replace_existing: bool) -> None:
    sidecar = sidecar_path(path, seal.algorithm)
    if not replace_existing:
        # A crash between writing the sidecar and the manifest: keep it only if it agrees.
        try:
            parsed = read_sidecar(path, seal.algorithm)
        except SidecarInvalidError as exc:
            raise RecoveryRefusedError(
                f"{sidecar} exists and is not a valid sidecar ({exc.message})"
            ) from exc
        if parsed is not None:
            if not digests_equal(parsed.digest, seal.digest):
                raise RecoveryRefusedError(f"{sidecar} exists and does not match {path.name}")
            return
    atomic_write_bytes(sidecar, format_sidecar(seal.digest, seal.file), overwrite=replace_existing)
