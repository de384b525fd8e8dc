"""Where a run's session snapshots are kept: the snapshot side of a store.

Saving and loading (:func:`~agc.resume._snapshot.save_snapshot`,
:func:`~agc.resume._snapshot.load_snapshot`) are written once against a
:class:`SnapshotPlace`; what differs between stores is a method of the place:

* a store folder keeps one snapshot per run, replaced in place
  (:class:`FolderSnapshots`): ``sessions/<runId>.json`` or ``<runId>.json.zst``, its
  sidecar and its signature beside it;
* an object store is written once (``If-None-Match: *``, Object Lock), so each save is
  a new set of objects (:class:`ObjectSnapshots`)::

      sessions/<runId>/<saved at, Unix ms, 20 digits>-<digest, 16 hex>.json[.zst]
      sessions/<runId>/<same name>.b3           its sidecar, uploaded second
      sessions/<runId>/<same name>.sig          its signature, uploaded last (signed saves)

  and loading takes the newest snapshot of the run. A snapshot without its sidecar (a
  save interrupted between the uploads) is ``snapshot-unsealed``, one without its
  signature is unsigned, never a valid snapshot it is not. Since the object name is
  signed and holds the save time, a signed snapshot cannot be uploaded again as a
  newer one.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from agc._core.digest import ALGORITHMS, SIDECAR_SUFFIXES, Algorithm
from agc._core.fs import prepare_write, read_small_file
from agc._core.sidecar import Sidecar, parse_sidecar, read_sidecar, sidecar_path
from agc._core.storage import PreconditionFailed, Retention, Store
from agc._core.store import RunId, StoreArg, open_store, resolve_store
from agc.errors import (
    BadSignatureError,
    FileUnreadableError,
    SnapshotInvalidError,
    SnapshotNotFoundError,
    StoreError,
    UnsafePathError,
)
from agc.resume._snapshot_sig import MAX_SIGNATURE_BYTES, SIGNATURE_SUFFIX

__all__ = [
    "FolderSnapshots",
    "FoundSnapshot",
    "ObjectSnapshots",
    "SavedFiles",
    "SnapshotPlace",
    "signature_path",
    "snapshot_file",
    "snapshot_place",
]

_NAME: Final = re.compile(r"[0-9]{20}-[0-9a-f]{16}\.json(\.zst)?")


@dataclass(frozen=True)
class SavedFiles:
    """Where one save put the snapshot, its sidecar and its signature (a path, or for
    an object its URL as a path)."""

    path: Path
    sidecar: Path
    signature: Path | None


@dataclass(frozen=True)
class FoundSnapshot:
    """A snapshot as its store holds it.

    Attributes:
        data: its bytes.
        where: its path or URL, for messages.
        name: its file (object) name, which its sidecar and signature name.
        sidecar: reads its ``algorithm`` sidecar: ``None`` when it has none.
            Raises ``SidecarInvalidError`` for one that is not usable.
        sidecar_where: the path or URL of its ``algorithm`` sidecar.
        read_signature: reads its signature's bytes, ``None`` when it has none.
    """

    data: bytes
    where: str
    name: str
    sidecar: Callable[[Algorithm], Sidecar | None]
    sidecar_where: Callable[[Algorithm], str]
    read_signature: Callable[[], bytes] | None


class SnapshotPlace(Protocol):
    """The snapshots of one run in a store (see the module docstring)."""

    def file_name(self, digest: str, *, compressed: bool) -> str:
        """The name a new snapshot with this digest gets (its signature names it)."""

    def write(
        self, name: str, data: bytes, sidecar: tuple[str, bytes], signature: bytes | None
    ) -> SavedFiles:
        """Write a snapshot, then its sidecar (``(suffix, bytes)``), then its signature.

        Raises:
            UnsafePathError: a path is a symlink.
            FileWriteError: disk full, read-only … (an earlier snapshot is unchanged).
            StoreError: the store cannot be written.
        """

    def exists(self) -> bool:
        """Whether the run has a snapshot here (one not read, so not judged).

        Raises:
            StoreError: the store cannot be listed.
        """

    def newest(self, *, max_bytes: int) -> FoundSnapshot:
        """The run's (newest) snapshot.

        Raises:
            SnapshotNotFoundError: the run has none.
            SnapshotInvalidError: larger than ``max_bytes`` (not read), or ambiguous.
            UnsafePathError, FileUnreadableError, StoreError: it cannot be read.
        """


def snapshot_place(store: StoreArg | Store, run_id: RunId) -> SnapshotPlace:
    """The snapshots of ``run_id`` (checked by the caller) in the store a ``--store``
    value names (:func:`~agc._core.store.open_store`: a folder, ``s3://…``, ``None``:
    the default).

    Raises:
        UsageError: an ``s3://`` URL that is not valid.
    """
    opened = open_store(store)
    folder = opened.folder
    if folder is None:
        return ObjectSnapshots(opened, run_id)
    return FolderSnapshots(folder / "sessions", run_id)


# -- a store folder: one snapshot per run, replaced in place ------------------------------


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def signature_path(path: Path) -> Path:
    """The signature file beside the snapshot ``path``: ``….json`` -> ``….json.sig`` (pure)."""
    return path.with_name(path.name + SIGNATURE_SUFFIX)


@dataclass(frozen=True)
class FolderSnapshots:
    """``<folder>/<runId>.json`` or ``….json.zst``, written atomically (mode 0600)."""

    folder: Path
    run_id: str

    @classmethod
    def at(cls, store: str | os.PathLike[str] | None, run_id: RunId) -> FolderSnapshots:
        """The snapshots of ``run_id`` (checked by the caller) in the store folder
        ``store`` (pure).

        Raises:
            UsageError: ``store`` names an object store.
        """
        return cls(resolve_store(store) / "sessions", run_id)

    def path(self, *, compressed: bool) -> Path:
        """``<folder>/<runId>.json`` or ``….json.zst``."""
        return self.folder / (self.run_id + (".json.zst" if compressed else ".json"))

    def file_name(self, digest: str, *, compressed: bool) -> str:  # noqa: ARG002
        return self.path(compressed=compressed).name

    def write(
        self, name: str, data: bytes, sidecar: tuple[str, bytes], signature: bytes | None
    ) -> SavedFiles:
        path = self.folder / name
        seal = path.with_name(name + sidecar[0])
        signed = signature_path(path)
        other = self.path(compressed=not name.endswith(".zst"))
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            # Every file is written in full before anything is replaced: a full disk
            # leaves the earlier snapshot, its seal and its signature as they were
            # (FileWriteError, exit 3).
            with (
                prepare_write(path, data, mode=0o600) as new_data,
                prepare_write(seal, sidecar[1], mode=0o600) as new_seal,
                (
                    contextlib.nullcontext()
                    if signature is None
                    else prepare_write(signed, signature, mode=0o600)
                ) as new_signature,
            ):
                # The old signature goes first: it never stays beside bytes it does not sign.
                _remove(signed)
                for algorithm in ALGORITHMS:
                    _remove(sidecar_path(path, algorithm))
                new_data.commit(overwrite=True)
                new_seal.commit(overwrite=True)
                if new_signature is not None:
                    new_signature.commit(overwrite=True)
            _remove(signature_path(other))
            for algorithm in ALGORITHMS:
                _remove(sidecar_path(other, algorithm))
            _remove(other)
        except UnsafePathError:
            raise
        except OSError as exc:
            raise StoreError(f"cannot write snapshot {path}: {exc.strerror or exc}") from exc
        return SavedFiles(path, seal, None if signature is None else signed)

    def exists(self) -> bool:
        return any(self.path(compressed=z).exists() for z in (False, True))

    def newest(self, *, max_bytes: int) -> FoundSnapshot:
        plain, packed = self.path(compressed=False), self.path(compressed=True)
        present = [path for path in (packed, plain) if os.path.lexists(path)]
        if not present:
            raise SnapshotNotFoundError(f"no snapshot of run {self.run_id} in {self.folder}")
        if len(present) == 2:
            raise SnapshotInvalidError(
                f"both {packed.name} and {plain.name} exist for run {self.run_id}",
                hint="A save was interrupted; remove the older file (see docs/resume.md).",
            )
        return snapshot_file(present[0], max_bytes=max_bytes)


def snapshot_file(path: Path, *, max_bytes: int) -> FoundSnapshot:
    """A snapshot file, read as sidecars are (never through a symlink, never from a
    FIFO), with the sidecars and signature beside it.

    Raises:
        SnapshotNotFoundError: it does not exist.
        SnapshotInvalidError: larger than ``max_bytes`` (refused from its size, unread:
            exit 2 as a snapshot that expands too far, not an I/O error).
        UnsafePathError: a symlink, or not a regular file (a folder, a FIFO).
        FileUnreadableError: it cannot be read (permissions, an I/O error).
    """
    try:
        data = read_small_file(path, max_bytes=max_bytes)
    except FileNotFoundError as exc:
        raise SnapshotNotFoundError(f"{path} does not exist") from exc
    except StoreError as exc:  # read_small_file: larger than the limit
        raise SnapshotInvalidError(
            f"{path} is larger than {max_bytes} bytes, the largest snapshot agc reads"
        ) from exc
    except OSError as exc:
        raise FileUnreadableError(f"cannot read {path}: {exc.strerror or exc}") from exc
    signature = signature_path(path)
    return FoundSnapshot(
        data=data,
        where=str(path),
        name=path.name,
        sidecar=functools.partial(read_sidecar, path),
        sidecar_where=lambda algorithm: str(sidecar_path(path, algorithm)),
        read_signature=(
            functools.partial(_read_signature_file, signature)
            if os.path.lexists(signature)
            else None
        ),
    )


def _read_signature_file(path: Path) -> bytes:
    """The bytes of a signature file, read as sidecars are (no symlink, no FIFO).

    Raises:
        BadSignatureError: a symlink, folder, FIFO, socket or device in its place, or
            larger than :data:`MAX_SIGNATURE_BYTES`.
        StoreError: present but unreadable (permission denied, an I/O error): exit 3.
    """
    try:
        return read_small_file(path, max_bytes=MAX_SIGNATURE_BYTES)
    except FileNotFoundError as exc:  # removed since it was seen
        raise BadSignatureError(f"{path} disappeared while it was read") from exc
    except UnsafePathError as exc:
        raise BadSignatureError(f"{path} is a symlink or not a regular file") from exc
    except StoreError as exc:  # read_small_file: larger than the limit
        raise BadSignatureError(
            f"{path} is larger than {MAX_SIGNATURE_BYTES} bytes; a signature is one line"
        ) from exc
    except OSError as exc:
        if exc.errno in {errno.ENXIO, errno.ENODEV, errno.EISDIR}:
            raise BadSignatureError(f"{path} is a symlink or not a regular file") from exc
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc


# -- an object store: a new set of objects per save ---------------------------------------


@dataclass(frozen=True)
class ObjectSnapshots:
    """``sessions/<runId>/<ms>-<digest>.json[.zst]`` objects, one set per save, in a
    store written object by object (S3, the in-memory store)."""

    store: Store
    run_id: str

    @property
    def _folder(self) -> str:
        return f"sessions/{self.run_id}/"

    def file_name(self, digest: str, *, compressed: bool) -> str:
        saved_at = time.time_ns() // 1_000_000
        return f"{saved_at:020d}-{digest[:16]}.json" + (".zst" if compressed else "")

    def write(
        self, name: str, data: bytes, sidecar: tuple[str, bytes], signature: bytes | None
    ) -> SavedFiles:
        store = self.store
        path = self._folder + name
        retention: Retention | None = store.retention or store.bucket_lock().default
        uploads = [(path, data), (path + sidecar[0], sidecar[1])]
        if signature is not None:
            uploads.append((path + SIGNATURE_SUFFIX, signature))
        for key, body in uploads:
            try:
                store.put_new(key, body, retention=retention, legal_hold=store.legal_hold)
            except PreconditionFailed as exc:
                raise StoreError(f"{store.url_of(key)} exists already; save again") from exc
        return SavedFiles(
            Path(store.url_of(path)),
            Path(store.url_of(path + sidecar[0])),
            None if signature is None else Path(store.url_of(path + SIGNATURE_SUFFIX)),
        )

    def exists(self) -> bool:
        """Any object under ``sessions/<runId>/`` (a save interrupted after its first
        upload too: loading it judges it)."""
        return any(True for _ in self.store.list_paths(self._folder))

    def newest(self, *, max_bytes: int) -> FoundSnapshot:
        store, folder = self.store, self._folder
        paths = set(store.list_paths(folder))
        names = sorted(p[len(folder) :] for p in paths if _NAME.fullmatch(p[len(folder) :]))
        if not names:
            raise SnapshotNotFoundError(
                f"no snapshot of run {self.run_id} in {store.url_of(folder)}"
            )
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

        def sidecar(algorithm: Algorithm) -> Sidecar | None:
            key = folder + name + SIDECAR_SUFFIXES[algorithm]
            found = store.get(key, max_bytes=4096) if key in paths else None
            return None if found is None else parse_sidecar(found[0], algorithm=algorithm)

        signature = folder + name + SIGNATURE_SUFFIX
        return FoundSnapshot(
            data=data,
            where=url,
            name=name,
            sidecar=sidecar,
            sidecar_where=lambda algorithm: store.url_of(
                folder + name + SIDECAR_SUFFIXES[algorithm]
            ),
            read_signature=(
                functools.partial(_read_signature_object, store, signature)
                if signature in paths
                else None
            ),
        )


def _read_signature_object(store: Store, key: str) -> bytes:
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
