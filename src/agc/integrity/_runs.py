"""Listing a store's runs and reading a run's records back (``agc runs``, ``agc show``).

Neither verifies anything: the listing reads manifests and file sizes (no file is
hashed, so it is quick on a large store), and the reader returns the records on disk as
they are. ``check_run`` / ``agc-verify`` say whether they are complete and untouched.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import stat
from collections.abc import Callable, Container, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal

from agc._core.digest import SIDECAR_SUFFIXES
from agc._core.folderstore import FolderStore
from agc._core.fs import open_nofollow
from agc._core.objstore import ObjectStore, object_store_of
from agc._core.store import (
    ARTIFACT_DIRS,
    ARTIFACT_KINDS,
    MANIFESTS_DIR,
    ArtifactKind,
    StoreLayout,
    artifact_path,
    validate_run_id,
)
from agc.errors import (
    AgcError,
    ManifestInvalidError,
    RunIdInvalidError,
    RunNotFoundError,
    StoreError,
    UnsafePathError,
)
from agc.integrity._legacy import chained_run_ids
from agc.integrity._manifest import MAX_MANIFEST_BYTES, RunManifest
from agc.integrity._run_reader import is_legacy_store_run
from agc.integrity._store_io import read_manifest, stored_run_ids

__all__ = [
    "RunListing",
    "iter_records",
    "list_runs",
    "run_is_sealed",
    "stored_run_ids",
    "unwrap_record",
]

RunState = Literal["sealed", "recovered", "unsealed", "damaged", "legacy"]
_COUNT_CHUNK: Final = 1 << 20
_STAMPS: Final[dict[ArtifactKind, tuple[str, ...]]] = {
    "transcript": ("seq", "ts"),
    "tool-events": ("seq", "ts", "run_id"),
}


@dataclass(frozen=True)
class RunListing:
    """One run of a store, as its files say (not verified).

    Attributes:
        run_id: the run.
        state: ``sealed`` (its manifest is closed), ``recovered`` (closed by
            ``agc recover`` with bytes no crash checkpoint vouched for: ``agc-verify``
            fails it unless ``--allow-recovered``), ``unsealed`` (still being written,
            crashed, stopped, or re-opened for a new segment), ``damaged`` (its
            manifest cannot be read: ``agc-verify`` says why) or ``legacy`` (sealed by
            an earlier release in the legacy store format: a digest-only SHA-256
            sidecar and no manifest; there is nothing for ``agc recover`` to seal).
        records: records per artifact kind (sealed: from the manifest; otherwise the
            complete lines on disk).
        bytes: bytes of both artifact files on disk.
        signed: the manifest carries a signature (whether it verifies is
            ``agc-verify --trusted-key``'s business).
        last_write_ms: the latest modification time of the run's files (Unix ms).
        attributes: the manifest's ``attributes`` (facts its writer attached), ``None``
            when it has none or no readable manifest.
    """

    run_id: str
    state: RunState
    records: dict[str, int]
    bytes: int
    signed: bool
    last_write_ms: int | None
    attributes: Mapping[str, Any] | None = None

    @property
    def total_records(self) -> int:
        return sum(self.records.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "state": self.state,
            "records": self.total_records,
            "records_by_kind": dict(self.records),
            "bytes": self.bytes,
            "signed": self.signed,
            "last_write_ms": self.last_write_ms,
        }


def _count_lines(path: Path) -> tuple[int, int, int | None]:
    """``(complete lines, bytes, mtime ms)`` of a file, or zeros when it is absent."""
    try:
        fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, UnsafePathError):
        return 0, 0, None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return 0, 0, None
        count = 0
        while chunk := os.read(fd, _COUNT_CHUNK):
            count += chunk.count(b"\n")
        return count, info.st_size, info.st_mtime_ns // 1_000_000
    finally:
        os.close(fd)


def _listing(layout: StoreLayout, run_id: str, chained: Callable[[], Container[str]]) -> RunListing:
    manifest: RunManifest | None = None
    state: RunState = "unsealed"
    try:
        manifest = read_manifest(layout, run_id)
    except (ManifestInvalidError, UnsafePathError):
        state = "damaged"
    else:
        if manifest is not None and manifest.closed:
            state = _closed_state(manifest)
        elif manifest is None and is_legacy_store_run(
            FolderStore(layout.root), run_id, chained=chained()
        ):
            state = "legacy"
    records: dict[str, int] = {}
    size = 0
    times: list[int] = []
    for kind in ARTIFACT_KINDS:
        path = layout.artifact_path(run_id, kind)
        seal = manifest.artifacts.get(kind) if manifest else None
        if seal is not None and seal.closed:
            try:
                info = path.lstat()
            except FileNotFoundError:
                info = None
            records[kind] = seal.records
            if info is not None:
                size += info.st_size
                times.append(info.st_mtime_ns // 1_000_000)
            continue
        lines, length, mtime = _count_lines(path)
        records[kind] = lines
        size += length
        if mtime is not None:
            times.append(mtime)
    with contextlib.suppress(OSError):
        times.append(layout.manifest_path(run_id).lstat().st_mtime_ns // 1_000_000)
    return RunListing(
        run_id=run_id,
        state=state,
        records=records,
        bytes=size,
        signed=manifest is not None and manifest.signature is not None,
        last_write_ms=max(times) if times else None,
        attributes=manifest.attributes if manifest is not None else None,
    )


def _closed_state(manifest: RunManifest) -> RunState:
    return "recovered" if manifest.recovered_unvouched else "sealed"


def list_runs(store: str | os.PathLike[str] | None = None) -> list[RunListing]:
    """Every run of the store, the most recently written first (no file is hashed).

    Raises:
        StoreError: the store does not exist or cannot be read.
    """
    remote = object_store_of(store)
    if remote is not None:
        listings = _remote_listings(remote)
    else:
        layout = StoreLayout.at(store)
        if not layout.root.is_dir():
            raise StoreError(f"store {layout.root} does not exist or is not a folder")
        chained = functools.cache(lambda: chained_run_ids(layout))  # read once, if needed
        listings = [
            _listing(layout, run_id, chained)
            for run_id in sorted(stored_run_ids(FolderStore(layout.root)))
        ]
    listings.sort(key=lambda r: -(r.last_write_ms or 0))
    return listings


def _remote_listings(remote: ObjectStore) -> list[RunListing]:
    """The runs of an ``s3://`` store: each uploaded manifest, read (not verified), and
    each run still staged locally for upload (``unsealed``)."""
    from agc.integrity._upload import staged_run_ids, staging_store  # noqa: PLC0415 - boto3

    listings: dict[str, RunListing] = {}
    for path in remote.list_paths(f"{MANIFESTS_DIR}/"):
        name = path.rsplit("/", 1)[-1]
        if not name.endswith(".json") or "@" in name:
            continue
        run_id = name[: -len(".json")]
        try:
            validate_run_id(run_id)
        except RunIdInvalidError:
            continue
        found = remote.get(path, max_bytes=MAX_MANIFEST_BYTES)
        if found is None:
            continue
        try:
            manifest = RunManifest.from_bytes(found[0], expected_run_id=run_id)
        except ManifestInvalidError:
            listings[run_id] = RunListing(run_id, "damaged", {}, 0, False, None)
            continue
        seals = manifest.artifacts
        listings[run_id] = RunListing(
            run_id=run_id,
            state=_closed_state(manifest) if manifest.closed else "unsealed",
            records={kind: seal.records for kind, seal in seals.items()},
            bytes=sum(seal.bytes for seal in seals.values()),
            signed=manifest.signature is not None,
            last_write_ms=max((seal.sealed_at_ms for seal in seals.values()), default=None),
            attributes=manifest.attributes,
        )
    for run_id in _remote_legacy_candidates(remote, listings):
        legacy = _remote_legacy_listing(remote, run_id)
        if legacy is not None:
            listings[run_id] = legacy
    for run_id in staged_run_ids(remote):
        if run_id not in listings:
            local = StoreLayout(staging_store(remote, run_id))
            staged = _listing(local, run_id, functools.partial(chained_run_ids, local))
            listings[run_id] = replace(staged, state="unsealed")
    return list(listings.values())


def _remote_legacy_candidates(remote: ObjectStore, listed: Container[str]) -> list[str]:
    """Runs of an ``s3://`` store with a transcript and a SHA-256 sidecar but no manifest
    (a legacy run, if :func:`_remote_legacy_listing` says so)."""
    prefix = f"{ARTIFACT_DIRS['transcript']}/"
    names = {path.removeprefix(prefix) for path in remote.list_paths(prefix)}
    found = []
    for name in sorted(names):
        run_id = name.removesuffix(".jsonl")
        if not name.endswith(".jsonl") or run_id in listed or f"{name}.sha256" not in names:
            continue
        try:
            validate_run_id(run_id)
        except RunIdInvalidError:
            continue
        found.append(run_id)
    return found


def _remote_legacy_listing(remote: ObjectStore, run_id: str) -> RunListing | None:
    """The listing of a legacy run of an ``s3://`` store (its complete lines are counted
    as the object streams by; nothing is hashed), or ``None`` when it is not one."""
    if not is_legacy_store_run(remote, run_id):
        return None
    records: dict[str, int] = {}
    size = 0
    times: list[int] = []
    for kind in ARTIFACT_KINDS:
        with remote.open(artifact_path(run_id, kind)) as found:
            if found is None:
                records[kind] = 0
                continue
            chunks, info = found
            records[kind] = sum(chunk.count(b"\n") for chunk in chunks)
            size += info.size
            times.append(info.last_modified_ms)
    return RunListing(run_id, "legacy", records, size, False, max(times) if times else None)


def run_is_sealed(layout: StoreLayout, run_id: str, kind: ArtifactKind) -> bool:
    """Whether the artifact has a closed seal: a sidecar and a closed manifest entry, or,
    for a run in the legacy store format (no manifest), its digest-only sidecar."""
    path = layout.artifact_path(run_id, kind)
    if not any(os.path.lexists(str(path) + suffix) for suffix in SIDECAR_SUFFIXES.values()):
        return False
    try:
        manifest = read_manifest(layout, run_id)
        if manifest is None:
            return kind == "transcript" and is_legacy_store_run(FolderStore(layout.root), run_id)
    except AgcError:
        return False
    seal = manifest.artifacts.get(kind)
    return seal is not None and seal.closed


def unwrap_record(line: bytes, kind: ArtifactKind) -> bytes:
    """The agent's own line for a stored record (without its ``\\n``).

    ``agc record``/``agc import`` keep each input line as ``{"line", "payload"}`` (or
    ``{"line", "invalid", "text"|"text_b64"}``): the payload is printed as compact JSON
    and an invalid line as its exact bytes. A record written through the library loses
    only the writer's stamps (``seq``, ``ts``, and ``run_id`` for tool events). A line
    that is not a JSON object (damage) is returned as it is.
    """
    try:
        record = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return line
    if not isinstance(record, dict):
        return line
    if "line" in record and "payload" in record:
        return _compact(record["payload"])
    if "line" in record and "invalid" in record:
        if isinstance(record.get("text_b64"), str):
            try:
                return base64.b64decode(record["text_b64"], validate=True)
            except ValueError:
                return line
        if isinstance(record.get("text"), str):
            return str(record["text"]).encode("utf-8", "surrogatepass")
    return _compact({k: v for k, v in record.items() if k not in _STAMPS[kind]})


def _compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )


def iter_records(
    run_id: str,
    store: str | os.PathLike[str] | None = None,
    *,
    kind: ArtifactKind = "transcript",
    start: int = 0,
) -> Iterator[tuple[bytes, int]]:
    """Yield ``(line without its \\n, offset after it)`` for each complete line from
    byte ``start`` of a run's artifact. An unterminated last line is not yielded (it may
    still be being written).

    Raises:
        RunNotFoundError: the store has no such file.
        UnsafePathError: it is a symlink.
        StoreError: it cannot be read.
    """
    layout = StoreLayout.at(store)
    path = layout.artifact_path(run_id, kind)
    try:
        fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError as exc:
        raise RunNotFoundError(
            f"no {kind} of run {run_id!r} in store {layout.root}",
            hint="`agc runs` lists the runs of the store.",
        ) from exc
    except UnsafePathError:
        raise
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise StoreError(f"{path} is not a regular file")
        handle.seek(start)
        offset = start
        for line in handle:
            if not line.endswith(b"\n"):
                return
            offset += len(line)
            yield line[:-1], offset
