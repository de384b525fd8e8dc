"""Reading and updating run manifests on disk (the manifest's only I/O).

Lock order, everywhere: the run's manifest lock, then the store's chain lock.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from agc._core.fs import atomic_write_bytes, ensure_dirs, exclusive_lock, read_small_file
from agc._core.store import ArtifactKind, StoreLayout, validate_run_id
from agc.errors import ManifestInvalidError, StoreError
from agc.integrity._chain import append_link, chain_lock_path, read_head
from agc.integrity._manifest import MAX_MANIFEST_BYTES, ArtifactSeal, RunManifest

if TYPE_CHECKING:
    from agc.integrity._signing import SigningKey

__all__ = ["archived_manifest_path", "read_manifest", "record_reopen", "record_seal"]


def archived_manifest_path(layout: StoreLayout, run_id: str, position: int) -> Path:
    """``audit/manifests/<runId>@<position>.json``: a closed manifest kept when its run
    was re-opened, so the chain link at ``position`` can still be checked."""
    return layout.manifests_dir / f"{validate_run_id(run_id)}@{position}.json"


def read_manifest(layout: StoreLayout, run_id: str) -> RunManifest | None:
    """Return the run's manifest, or ``None`` if it has none.

    Raises:
        ManifestInvalidError: the manifest exists but is damaged or of another run.
        UnsafePathError: the manifest is a symlink.
        StoreError: it cannot be read.
        ManifestInvalidError: also when it is larger than ``MAX_MANIFEST_BYTES``.
    """
    path = layout.manifest_path(run_id)
    try:
        data = read_small_file(path, max_bytes=MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    except StoreError as exc:  # read_small_file: larger than MAX_MANIFEST_BYTES
        raise ManifestInvalidError(
            f"manifest is larger than {MAX_MANIFEST_BYTES} bytes (damaged)"
        ) from exc
    return RunManifest.from_bytes(data, expected_run_id=run_id)


def _signed(manifest: RunManifest, signer: SigningKey | None) -> RunManifest:
    unsigned = replace(manifest, signature=None, raw=None)
    if signer is None:
        return unsigned
    from agc.integrity._signing import sign_document  # noqa: PLC0415 - only when signing

    signed = sign_document(unsigned.to_dict(), signer)
    return replace(unsigned, signature=signed["signature"])


def record_seal(
    layout: StoreLayout,
    run_id: str,
    seal: ArtifactSeal,
    *,
    signer: SigningKey | None = None,
) -> RunManifest:
    """Add ``seal`` to the run's manifest atomically and return the new manifest.

    The read-modify-write runs under the run's manifest lock, so the transcript and
    tool-event writers of one run may close concurrently in different processes. When
    the manifest becomes closed, it is linked into the store chain under the chain lock
    (see :mod:`agc.integrity._chain`); it is signed last, so the signature covers the link.

    Raises:
        ManifestInvalidError: the artifact is already sealed, or the manifest is damaged.
        FileWriteError: disk full, read-only … (the old manifest stays).
        OSError: the manifest could not be written (the old one stays).
    """
    ensure_dirs(layout.manifests_dir)
    lock = layout.manifest_lock_path(run_id)
    with exclusive_lock(lock, blocking=True, what=f"manifest of run {run_id}"):
        current = read_manifest(layout, run_id) or RunManifest(run_id=run_id)
        updated = current.with_seal(seal)
        if not updated.closed:
            updated = _signed(replace(updated, chain=None), signer)
            atomic_write_bytes(layout.manifest_path(run_id), updated.to_bytes(), overwrite=True)
            return updated
        with exclusive_lock(chain_lock_path(layout), blocking=True, what="store chain"):
            head = read_head(layout)
            if head is None:
                raise StoreError(
                    f"chain head of store {layout.root} is damaged; no run can be linked",
                    hint="Run `agc-verify --all` to see the chain's state.",
                )
            link = {"position": head.position + 1, "prev": head.digest}
            updated = _signed(replace(updated, chain=link), signer)
            atomic_write_bytes(layout.manifest_path(run_id), updated.to_bytes(), overwrite=True)
            append_link(layout, updated)
    return updated


def record_reopen(
    layout: StoreLayout,
    run_id: str,
    kind: ArtifactKind,
    at_ms: int,
    *,
    signer: SigningKey | None = None,
) -> RunManifest:
    """Mark a sealed artifact re-opened for a new segment (the run is then not closed)."""
    with exclusive_lock(
        layout.manifest_lock_path(run_id), blocking=True, what=f"manifest of run {run_id}"
    ):
        current = read_manifest(layout, run_id)
        if current is None:
            raise StoreError(f"run {run_id} has no manifest; nothing to re-open")
        if current.chain is not None:
            # Keep the linked manifest: its chain link must stay checkable after the run
            # is sealed again (a new link), or an earlier state could be rewritten unseen.
            archive = archived_manifest_path(layout, run_id, int(current.chain["position"]))
            data = read_small_file(layout.manifest_path(run_id), max_bytes=MAX_MANIFEST_BYTES)
            atomic_write_bytes(archive, data, overwrite=False)
        updated = _signed(replace(current.with_reopened(kind, at_ms), chain=None), signer)
        atomic_write_bytes(layout.manifest_path(run_id), updated.to_bytes(), overwrite=True)
    return updated
