"""Session snapshots in an object store (``s3://bucket/prefix``).

A snapshot in a folder store is replaced in place; object storage is written once
(``If-None-Match: *``, Object Lock), so each save is a new pair of objects::

    sessions/<runId>/<saved at, Unix ms, 20 digits>-<digest, 16 hex>.json[.zst]
    sessions/<runId>/<same name>.b3           its sidecar, uploaded second
    sessions/<runId>/<same name>.sig          its signature, uploaded last (signed saves)

and loading takes the newest snapshot of the run, checked against its sidecar and its
signature as in a folder store: a snapshot without its sidecar (a save interrupted
between the uploads) is ``snapshot-unsealed``, one without its signature is unsigned,
never a valid snapshot it is not. Since the object name is signed and holds the save
time, a signed snapshot cannot be uploaded again as a newer one.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from agc._core.digest import (
    ALGORITHMS,
    SIDECAR_SUFFIXES,
    Algorithm,
    digest_bytes,
    digests_equal,
)
from agc._core.objstore import ObjectStore, PreconditionFailed, Retention
from agc._core.sidecar import format_sidecar, parse_sidecar
from agc._core.store import validate_run_id
from agc.errors import (
    BadSignatureError,
    SidecarInvalidError,
    SnapshotInvalidError,
    SnapshotNotFoundError,
    SnapshotTamperedError,
    SnapshotUnsealedError,
    StoreError,
)
from agc.resume._snapshot_sig import MAX_SIGNATURE_BYTES, SIGNATURE_SUFFIX, encode_signature

if TYPE_CHECKING:
    from agc._core.signing import SigningKey

__all__ = ["LoadedSnapshot", "SavedSnapshot", "load_snapshot_bytes", "save_snapshot_bytes"]

_NAME: Final = re.compile(r"[0-9]{20}-[0-9a-f]{16}\.json(\.zst)?")


@dataclass(frozen=True)
class SavedSnapshot:
    """The objects one save uploaded: URLs and the snapshot's digest."""

    url: str
    sidecar_url: str
    digest: str
    signature_url: str | None


@dataclass(frozen=True)
class LoadedSnapshot:
    """The newest snapshot of a run: its bytes, URL and object name, and a reader of its
    signature object (``None`` when it has none, or when the seal was not checked)."""

    data: bytes
    url: str
    name: str
    read_signature: Callable[[], bytes] | None


def save_snapshot_bytes(
    store: ObjectStore,
    run_id: str,
    data: bytes,
    *,
    compressed: bool,
    algorithm: Algorithm,
    signing_key: SigningKey | None = None,
) -> SavedSnapshot:
    """Upload a snapshot's bytes, then its sidecar and, with a signing key, its signature
    (:mod:`agc.resume._snapshot_sig`) last.

    Raises:
        StoreError: the store cannot be written.
    """
    digest = digest_bytes(data, algorithm)
    name = f"{time.time_ns() // 1_000_000:020d}-{digest[:16]}.json" + (".zst" if compressed else "")
    path = f"sessions/{validate_run_id(run_id)}/{name}"
    lock = store.bucket_lock()
    retention: Retention | None = store.retention or lock.default
    sidecar = (path + SIDECAR_SUFFIXES[algorithm], format_sidecar(digest, name))
    uploads = [(path, data), sidecar]
    if signing_key is not None:
        uploads.append(
            (path + SIGNATURE_SUFFIX, encode_signature(name, data, algorithm, signing_key)[0])
        )
    for key, body in uploads:
        try:
            store.put_new(key, body, retention=retention, legal_hold=store.legal_hold)
        except PreconditionFailed as exc:
            raise StoreError(f"{store.url_of(key)} exists already; save again") from exc
    return SavedSnapshot(
        store.url_of(path),
        store.url_of(sidecar[0]),
        digest,
        None if signing_key is None else store.url_of(path + SIGNATURE_SUFFIX),
    )


def load_snapshot_bytes(
    store: ObjectStore, run_id: str, *, verify: bool, max_bytes: int
) -> LoadedSnapshot:
    """The newest snapshot of the run, checked against its sidecar (with ``verify``).

    Its signature object is not judged here (:func:`agc.resume._snapshot_sig.judge_signature`
    is, by the caller, with :attr:`LoadedSnapshot.read_signature`).

    Raises:
        SnapshotNotFoundError: the run has no snapshot in the store.
        SnapshotInvalidError: the newest is larger than ``max_bytes`` (not read).
        SnapshotUnsealedError: the newest has no sidecar.
        SnapshotTamperedError: its sidecar is unusable, names another file, or differs.
        StoreError: the store cannot be read.
    """
    folder = f"sessions/{validate_run_id(run_id)}/"
    paths = set(store.list_paths(folder))
    names = sorted(p[len(folder) :] for p in paths if _NAME.fullmatch(p[len(folder) :]))
    if not names:
        raise SnapshotNotFoundError(f"no snapshot of run {run_id} in {store.url_of(folder)}")
    name = names[-1]
    url = store.url_of(folder + name)
    with store.open(folder + name) as got:
        if got is None:
            raise SnapshotNotFoundError(f"{url} was deleted")
        stream, info = got
        if info.size > max_bytes:
            raise SnapshotInvalidError(
                f"{url} is larger than {max_bytes} bytes, the largest snapshot agc reads"
            )
        data = b"".join(stream)
    if not verify:
        return LoadedSnapshot(data, url, name, None)
    for algorithm in ALGORITHMS:
        sidecar = folder + name + SIDECAR_SUFFIXES[algorithm]
        if sidecar not in paths:
            continue
        found = store.get(sidecar, max_bytes=4096)
        if found is None:
            continue
        try:
            parsed = parse_sidecar(found[0], algorithm=algorithm)
        except SidecarInvalidError as exc:
            raise SnapshotTamperedError(f"{store.url_of(sidecar)} is not a valid sidecar") from exc
        if parsed.file_name is not None and parsed.file_name != name:
            raise SnapshotTamperedError(f"{store.url_of(sidecar)} seals {parsed.file_name}")
        if not digests_equal(parsed.digest, digest_bytes(data, algorithm)):
            raise SnapshotTamperedError(f"{url} does not match its seal: it was changed")
        signature = folder + name + SIGNATURE_SUFFIX
        return LoadedSnapshot(
            data,
            url,
            name,
            functools.partial(_read_signature, store, signature) if signature in paths else None,
        )
    raise SnapshotUnsealedError(f"{url} has no checksum sidecar (.b3 or .sha256)")


def _read_signature(store: ObjectStore, key: str) -> bytes:
    """The signature object's bytes.

    Raises:
        BadSignatureError: it was deleted since the listing, or is larger than
            :data:`MAX_SIGNATURE_BYTES` (its body is then not read).
        StoreError: the store cannot be read.
    """
    with store.open(key) as found:
        if found is None:
            raise BadSignatureError(f"{store.url_of(key)} was deleted while it was read")
        stream, info = found
        if info.size > MAX_SIGNATURE_BYTES:
            raise BadSignatureError(
                f"{store.url_of(key)} is larger than {MAX_SIGNATURE_BYTES} bytes; a "
                "signature is one line"
            )
        return b"".join(stream)
