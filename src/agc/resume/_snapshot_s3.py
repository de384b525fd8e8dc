"""Session snapshots in an object store (``s3://bucket/prefix``).

A snapshot in a folder store is replaced in place; object storage is written once
(``If-None-Match: *``, Object Lock), so each save is a new pair of objects::

    sessions/<runId>/<saved at, Unix ms, 20 digits>-<digest, 16 hex>.json[.zst]
    sessions/<runId>/<same name>.b3           its sidecar, uploaded second

and loading takes the newest snapshot of the run, checked against its sidecar as in a
folder store: a snapshot without its sidecar (a save interrupted between the two
uploads) is ``snapshot-unsealed``, never a valid snapshot.
"""

from __future__ import annotations

import re
import time
from typing import Final

from agc._core.digest import ALGORITHMS, SIDECAR_SUFFIXES, Algorithm, digests_equal, new_hasher
from agc._core.objstore import ObjectStore, PreconditionFailed, Retention
from agc._core.sidecar import format_sidecar, parse_sidecar
from agc._core.store import validate_run_id
from agc.errors import (
    SidecarInvalidError,
    SnapshotNotFoundError,
    SnapshotTamperedError,
    SnapshotUnsealedError,
    StoreError,
)

__all__ = ["load_snapshot_bytes", "save_snapshot_bytes"]

_NAME: Final = re.compile(r"[0-9]{20}-[0-9a-f]{16}\.json(\.zst)?")


def _digest(data: bytes, algorithm: Algorithm) -> str:
    hasher = new_hasher(algorithm)
    hasher.update(data)
    return hasher.hexdigest()


def save_snapshot_bytes(
    store: ObjectStore, run_id: str, data: bytes, *, compressed: bool, algorithm: Algorithm
) -> tuple[str, str, str]:
    """Upload a snapshot's bytes and then its sidecar; returns (object URL, sidecar URL,
    digest).

    Raises:
        StoreError: the store cannot be written.
    """
    digest = _digest(data, algorithm)
    name = f"{time.time_ns() // 1_000_000:020d}-{digest[:16]}.json" + (".zst" if compressed else "")
    path = f"sessions/{validate_run_id(run_id)}/{name}"
    lock = store.bucket_lock()
    retention: Retention | None = store.retention or lock.default
    sidecar = (path + SIDECAR_SUFFIXES[algorithm], format_sidecar(digest, name))
    for key, body in ((path, data), sidecar):
        try:
            store.put_new(key, body, retention=retention, legal_hold=store.legal_hold)
        except PreconditionFailed as exc:
            raise StoreError(f"{store.url_of(key)} exists already; save again") from exc
    return store.url_of(path), store.url_of(sidecar[0]), digest


def load_snapshot_bytes(store: ObjectStore, run_id: str, *, verify: bool) -> tuple[bytes, str]:
    """The newest snapshot of the run and its URL, checked against its sidecar.

    Raises:
        SnapshotNotFoundError: the run has no snapshot in the store.
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
    got = store.get(folder + name, max_bytes=512 * 1024 * 1024)
    if got is None:
        raise SnapshotNotFoundError(f"{store.url_of(folder + name)} was deleted")
    data = got[0]
    url = store.url_of(folder + name)
    if not verify:
        return data, url
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
        if not digests_equal(parsed.digest, _digest(data, algorithm)):
            raise SnapshotTamperedError(f"{url} does not match its seal: it was changed")
        return data, url
    raise SnapshotUnsealedError(f"{url} has no checksum sidecar (.b3 or .sha256)")
