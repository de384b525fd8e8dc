"""Reading and updating run manifests on disk (the manifest's only I/O)."""

from __future__ import annotations

from agc.errors import StoreError
from agc.integrity.fsio import atomic_write_bytes, exclusive_lock, read_small_file
from agc.integrity.manifest import MAX_MANIFEST_BYTES, ArtifactSeal, RunManifest
from agc.store import StoreLayout

__all__ = ["read_manifest", "record_seal"]


def read_manifest(layout: StoreLayout, run_id: str) -> RunManifest | None:
    """Return the run's manifest, or ``None`` if it has none.

    Raises:
        ManifestInvalidError: the manifest exists but is damaged or of another run.
        UnsafePathError: the manifest is a symlink.
        StoreError: it cannot be read.
    """
    path = layout.manifest_path(run_id)
    try:
        data = read_small_file(path, max_bytes=MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    return RunManifest.from_bytes(data, expected_run_id=run_id)


def record_seal(layout: StoreLayout, run_id: str, seal: ArtifactSeal) -> RunManifest:
    """Add ``seal`` to the run's manifest atomically and return the new manifest.

    The read-modify-write runs under the run's manifest lock, so the transcript and
    tool-event writers of one run may close concurrently in different processes.

    Raises:
        ManifestInvalidError: the artifact is already sealed, or the manifest is damaged.
        OSError: the manifest could not be written (the old one stays).
    """
    layout.manifests_dir.mkdir(parents=True, exist_ok=True)
    lock = layout.manifest_lock_path(run_id)
    with exclusive_lock(lock, blocking=True, what=f"manifest of run {run_id}"):
        current = read_manifest(layout, run_id) or RunManifest(run_id=run_id)
        updated = current.with_seal(seal)
        atomic_write_bytes(layout.manifest_path(run_id), updated.to_bytes(), overwrite=True)
    return updated
