"""Listing a store's runs and reading a run's records back (``agc runs``, ``agc show``).

Neither verifies anything: the listing reads manifests and file sizes (no file is
hashed, so it is quick on a large store), and the reader returns the records on disk as
they are. ``check_run`` / ``agc-verify`` say whether they are complete and untouched.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import stat
from collections.abc import Callable, Container, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from agc._core.digest import SIDECAR_SUFFIXES
from agc._core.folderstore import FolderStore
from agc._core.fs import open_nofollow
from agc._core.storage import ListedObject, Store
from agc._core.store import (
    ARTIFACT_DIRS,
    ARTIFACT_KINDS,
    MANIFESTS_DIR,
    ArtifactKind,
    StoreArg,
    StoreLayout,
    artifact_path,
    is_unmade_default,
    manifest_path,
    open_store,
)
from agc.errors import (
    AgcError,
    InputError,
    InputMissingError,
    ManifestInvalidError,
    RunNotFoundError,
    StoreError,
    UnsafePathError,
)
from agc.integrity._manifest import MAX_MANIFEST_BYTES, RunManifest
from agc.integrity._run_reader import chained_store_run_ids, is_legacy_store_run
from agc.integrity._store_io import read_manifest, stored_run_ids
from agc.integrity._upload import staged_run_ids, staging_store

__all__ = [
    "RunListing",
    "iter_records",
    "list_runs",
    "run_is_sealed",
    "stored_run_ids",
    "unwrap_record",
]

RunState = Literal["sealed", "recovered", "unsealed", "damaged", "legacy"]
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
        bytes: bytes of both artifact files as the store lists them.
        signed: the manifest carries a signature (whether it verifies is
            ``agc-verify --trusted-key``'s business).
        last_write_ms: the latest modification time of the run's artifact files and
            manifest as the store lists them (Unix ms).
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


def _count_lines(store: Store, path: str) -> int:
    """The complete lines of an object, counted as it streams by (nothing is hashed);
    0 when it is gone or is not an object (a symlink is never followed)."""
    try:
        with store.stream(path) as found:
            if found is None:
                return 0
            chunks, _ = found
            return sum(chunk.count(b"\n") for chunk in chunks)
    except UnsafePathError:
        return 0


def _listed_manifest(
    store: Store, run_id: str, listed: ListedObject | None
) -> tuple[RunManifest | None, bool]:
    """``(the run's manifest or None, whether it cannot be read as one)``: a manifest
    that is damaged, of another run, larger than a manifest can be, or not an object
    (a symlink) is ``(None, True)``.

    Raises:
        StoreError: the store cannot be read.
    """
    path = manifest_path(run_id)
    if listed is not None and listed.size > MAX_MANIFEST_BYTES:
        return None, True
    try:
        found = store.get(path, max_bytes=MAX_MANIFEST_BYTES)
    except UnsafePathError:
        return None, True
    if found is None:
        return None, store.odd_entry(path) is not None
    try:
        return RunManifest.from_bytes(found[0], expected_run_id=run_id), False
    except ManifestInvalidError:
        return None, True


def _listing(
    store: Store,
    run_id: str,
    objects: Mapping[str, ListedObject],
    chained: Callable[[], Container[str]],
) -> RunListing:
    """One run as the store's listing and its manifest show it: records of a sealed
    artifact from its seal, of any other its complete lines; bytes and the last write
    from the listing of its objects (artifacts and manifest)."""
    manifest, damaged = _listed_manifest(store, run_id, objects.get(manifest_path(run_id)))
    state: RunState = "damaged" if damaged else "unsealed"
    if manifest is not None and manifest.closed:
        state = _closed_state(manifest)
    elif manifest is None and not damaged and is_legacy_store_run(store, run_id, chained=chained()):
        state = "legacy"
    records: dict[str, int] = {}
    size = 0
    times: list[int] = []
    for kind in ARTIFACT_KINDS:
        path = artifact_path(run_id, kind)
        listed = objects.get(path)
        seal = manifest.artifacts.get(kind) if manifest else None
        if seal is not None and seal.closed:
            records[kind] = seal.records
        else:
            records[kind] = 0 if listed is None else _count_lines(store, path)
        if listed is not None:
            size += listed.size
            times.append(listed.last_modified_ms)
    listed_manifest = objects.get(manifest_path(run_id))
    if listed_manifest is not None:
        times.append(listed_manifest.last_modified_ms)
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


def _store_listings(store: Store) -> dict[str, RunListing]:
    """Every run the store holds (a manifest or an artifact file), by run id.

    Raises:
        StoreError: the store cannot be listed or read.
    """
    objects = {
        listed.path: listed
        for folder in (*ARTIFACT_DIRS.values(), MANIFESTS_DIR)
        for listed in store.list_objects(f"{folder}/")
    }
    chained = functools.cache(lambda: chained_store_run_ids(store))  # read once, if needed
    return {
        run_id: _listing(store, run_id, objects, chained)
        for run_id in sorted(stored_run_ids(store))
    }


def list_runs(store: StoreArg | Store = None) -> list[RunListing]:
    """Every run of the store (a folder, ``s3://…``, any
    :class:`~agc._core.storage.Store`), the most recently written first; no file is
    hashed. A store written object by object also lists the runs this host staged for
    it and has not published yet (``unsealed``).

    Raises:
        InputMissingError: the store named (``store`` given) is a folder that does not
            exist (exit 2).
        InputError: the store named is not a folder (exit 2).
        StoreError: the store cannot be read (an object store that is missing too).
    """
    opened = open_store(store)
    try:
        there = opened.exists_at_all()
    except StoreError:
        there = False
    if not there:
        if is_unmade_default(store):
            return []  # nothing recorded yet: an empty store
        # A store named by the caller (--store), as every file named on the command line:
        # a missing one is an input error. ($AGC_HOME's stays a store that cannot be read.)
        folder = opened.folder if store is not None and not isinstance(store, Store) else None
        if folder is not None and not os.path.lexists(folder):
            raise InputMissingError(
                f"store {folder} does not exist",
                hint="Check the path given with --store (or $AGC_HOME); listing a store "
                "never creates it.",
            )
        if folder is not None and not folder.is_dir():
            raise InputError(f"store {folder} is not a folder")
        raise StoreError(f"store {opened.url} does not exist or is not a folder")
    listings = _store_listings(opened)
    if opened.folder is None:
        for run_id in staged_run_ids(opened):
            if run_id not in listings:
                staged = _store_listings(FolderStore(staging_store(opened, run_id)))
                if run_id in staged:
                    listings[run_id] = replace(staged[run_id], state="unsealed")
    return sorted(listings.values(), key=lambda r: -(r.last_write_ms or 0))


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
