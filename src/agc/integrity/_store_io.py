"""Reading and updating run manifests on disk (the manifest's only I/O).

Lock order, everywhere: the run's manifest lock, then the store's chain lock.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agc._core import json as strict_json
from agc._core.fs import (
    atomic_write_bytes,
    ensure_dirs,
    exclusive_lock,
    open_regular_file,
    read_small_file,
)
from agc._core.record import replace
from agc._core.storage import Store
from agc._core.store import (
    ARTIFACT_DIRS,
    ARTIFACT_KINDS,
    MANIFESTS_DIR,
    ArtifactKind,
    RunId,
    StoreLayout,
    is_run_id,
)
from agc._core.store import archived_manifest_path as archived_path
from agc.errors import (
    AgcError,
    JsonInvalidError,
    ManifestInvalidError,
    StoreError,
)
from agc.integrity._manifest import MAX_MANIFEST_BYTES, ArtifactSeal, RunManifest

if TYPE_CHECKING:
    from agc.integrity._signing import SigningKey

__all__ = [
    "archived_manifest_path",
    "iter_json_objects",
    "read_archived_manifest",
    "read_manifest",
    "read_run_manifest",
    "record_reopen",
    "record_seal",
    "sign_manifest",
]


def archived_manifest_path(layout: StoreLayout, run_id: str, position: int) -> Path:
    """``audit/manifests/<runId>@<position>.json``: a closed manifest kept when its run
    was re-opened, so the chain link at ``position`` can still be checked."""
    return layout.path(archived_path(run_id, position))


def read_archived_manifest(layout: StoreLayout, run_id: str, position: int) -> RunManifest | None:
    """The manifest kept for the run's chain link at ``position``, ``None`` if absent.

    Raises:
        ManifestInvalidError: it is damaged, too large or of another run.
        UnsafePathError: it is a symlink.
        StoreError: it cannot be read.
    """
    path = archived_manifest_path(layout, run_id, position)
    try:
        data = read_small_file(path, max_bytes=MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        return None
    return RunManifest.from_bytes(data, expected_run_id=run_id)


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


def read_run_manifest(
    run_id: str, store: str | os.PathLike[str] | None = None
) -> RunManifest | None:
    """The manifest of ``run_id`` in ``store`` (``--store`` / ``$AGC_HOME`` / ``~/.agc``),
    or ``None`` if the run has none. Only parses it: :func:`check_run` verifies it.

    Raises: as :func:`read_manifest`, and ``RunIdInvalidError`` for a bad run id.
    """
    return read_manifest(StoreLayout.at(store), RunId(run_id))


def iter_json_lines(chunks: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """Yield each line of a JSONL stream (its bytes in chunks) that is a JSON object;
    lines that are not JSON objects are skipped (the verifier, not this reader, reports
    damage)."""
    pending: list[bytes] = []  # the start of a line that goes on in the next chunk
    for chunk in chunks:
        lines = chunk.split(b"\n")
        if len(lines) == 1:
            pending.append(chunk)
            continue
        lines[0] = b"".join([*pending, lines[0]])
        pending = [lines.pop()]
        yield from _objects(lines)
    tail = b"".join(pending)
    if tail:
        yield from _objects([tail])


def _objects(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    for line in lines:
        try:
            record = strict_json.loads(line, allow_lone_surrogates=True)
        except JsonInvalidError:
            continue
        if isinstance(record, dict):
            yield record


def iter_json_objects(path: Path) -> Iterator[dict[str, Any]]:
    """Yield each line of a JSONL file that is a JSON object; nothing if it is absent.

    The file is opened without following symlinks and without blocking (a FIFO in its
    place is refused, never waited on). Lines that are not JSON objects are skipped: the
    verifier, not this reader, reports damage.

    Raises:
        UnsafePathError: the file is a symlink.
        StoreError: it is not a regular file (a FIFO, a folder) or cannot be read.
    """
    try:
        handle = open_regular_file(path)
    except FileNotFoundError:
        return
    with handle:
        try:
            yield from _objects(handle)
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror}") from exc


def sign_manifest(manifest: RunManifest, signer: SigningKey | None) -> RunManifest:
    """``manifest`` without its old signature, signed by ``signer`` when one is given."""
    unsigned = replace(manifest, signature=None, raw=None)
    if signer is None:
        return unsigned
    from agc.integrity._signing import sign_document  # noqa: PLC0415 - only when signing

    signed = sign_document(unsigned.to_dict(), signer)
    return replace(unsigned, signature=signed["signature"])


def _with_attributes(manifest: RunManifest, attributes: Mapping[str, Any] | None) -> RunManifest:
    if attributes is None:
        return manifest
    if manifest.attributes is None:
        return replace(manifest, attributes=dict(attributes), raw=None)
    if dict(manifest.attributes) != dict(attributes):
        raise ManifestInvalidError(
            f"run {manifest.run_id} already has other attributes; they are fixed by its first seal",
            hint="Write the new facts to a new run id.",
        )
    return manifest


def record_seal(
    layout: StoreLayout,
    run_id: str,
    seal: ArtifactSeal,
    *,
    signer: SigningKey | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> RunManifest:
    """Add ``seal`` to the run's manifest atomically and return the new manifest.

    ``attributes`` (checked by :func:`~agc.integrity._manifest.check_attributes`) are
    stored by the run's first seal that names them; a later seal may name the same
    attributes or none, never others.

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
        # A new manifest holds the run id's text (a plain str, as a parsed one does).
        current = read_manifest(layout, run_id) or RunManifest(run_id=str(run_id))
        updated = _with_attributes(current, attributes).with_seal(seal)
        if not updated.closed:
            updated = sign_manifest(replace(updated, chain=None), signer)
            atomic_write_bytes(layout.manifest_path(run_id), updated.to_bytes(), overwrite=True)
            return updated
        closed = updated

        # The chain module is the writers' (the run verifier reads no chain).
        from agc.integrity._chain import link_closed_manifest  # noqa: PLC0415

        def sign(link: dict[str, Any]) -> RunManifest:
            return sign_manifest(replace(closed, chain=link), signer)

        updated = link_closed_manifest(
            layout, run_id, sign, lambda other: read_manifest(layout, other)
        )
    return updated


def _read_if_file(path: Path) -> bytes | None:
    """The bytes of a small regular file, ``None`` if absent or not one."""
    try:
        return read_small_file(path, max_bytes=MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        return None
    except AgcError:
        return None  # a symlink, FIFO, folder or too large: the write below refuses


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
        # An interrupted link of this very run is completed first, so the manifest it
        # archives below is one the chain records.
        from agc.integrity._chain import chain_turn, heal_chain  # noqa: PLC0415

        with chain_turn(layout) as turn:
            heal_chain(layout, lambda other: read_manifest(layout, other), turn)
        current = read_manifest(layout, run_id)
        if current is None:
            raise StoreError(f"run {run_id} has no manifest; nothing to re-open")
        if current.chain is not None:
            # Keep the linked manifest: its chain link must stay checkable after the run
            # is sealed again (a new link), or an earlier state could be rewritten unseen.
            archive = archived_manifest_path(layout, run_id, int(current.chain["position"]))
            data = read_small_file(layout.manifest_path(run_id), max_bytes=MAX_MANIFEST_BYTES)
            if _read_if_file(archive) != data:
                # A re-open killed after this write and before the mark below left this
                # very copy: it is adopted. Any other file there is refused (kept).
                atomic_write_bytes(archive, data, overwrite=False)
        updated = sign_manifest(replace(current.with_reopened(kind, at_ms), chain=None), signer)
        atomic_write_bytes(layout.manifest_path(run_id), updated.to_bytes(), overwrite=True)
    return updated


def stored_run_ids(store: Store, *, artifact_files: bool = True) -> set[str]:
    """The run ids a store holds a manifest ``<run>.json`` of and, with
    ``artifact_files``, an artifact file ``<run>.jsonl`` of (a run being written in a
    folder has its files before its manifest); names that are no valid run id, and kept
    manifests ``<run>@<n>.json``, are skipped. Nothing is read but the listing.

    Raises:
        StoreError: a folder of the store cannot be listed.
    """
    folders = [(MANIFESTS_DIR, ".json")]
    if artifact_files:
        folders[:0] = [(ARTIFACT_DIRS[kind], ".jsonl") for kind in ARTIFACT_KINDS]
    names: set[str] = set()
    for folder, suffix in folders:
        for name in store.list_names(folder):
            if not name.endswith(suffix) or "@" in name:
                continue
            run_id = name.removesuffix(suffix)
            if is_run_id(run_id):  # else a stray file: agc-verify --all reports it
                names.add(run_id)
    return names
