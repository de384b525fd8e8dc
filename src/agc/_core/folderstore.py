"""A store in a local folder: the folder implementation of :class:`~agc._core.storage.Store`.

Paths inside the store are files under the folder. Nothing is followed through a symlink,
neither in place of a file (``O_NOFOLLOW``) nor in place of a folder inside the store
(each folder on the way is looked at with ``lstat``): a symlink is refused with
:class:`~agc.errors.UnsafePathError`, so nothing is read, listed or written outside the
store. A FIFO or device in place of a file is refused, never waited on (``O_NONBLOCK``).

A folder keeps only the current bytes of a file: the store is not
:attr:`~agc._core.storage.Store.versioned`, lists each file once (version ``"null"``), and
has no Object Lock (a retention or legal hold asked of it is refused).

An object's ETag is the quoted SHA-256 of its bytes, so, as in S3, it changes exactly when
the content does: :meth:`FolderStore.put_swap` compares it under an exclusive ``flock`` on
``.<name>.lock`` beside the file and replaces the file atomically (temporary file, fsync,
rename). :meth:`FolderStore.put_new` creates with ``link(2)``, which fails when the name
exists, so two writers never both create it. A turn at the chain
(:meth:`FolderStore.chain_turn`) holds an exclusive ``flock`` on the chain's lock file;
its append writes the link to the log in one ``write`` (cut back if it fails), fsyncs,
then replaces the head atomically. Reading a whole file (``get``) hashes the
bytes it reads; streaming one (``open``) reads it once more first to name its ETag.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final, Literal

from agc._core.fs import (
    MACHINE_ERRNOS,
    append_whole,
    atomic_write_bytes,
    ensure_dirs,
    exclusive_lock,
    is_temp_name,
    open_nofollow,
    prepare_write,
    read_at_most,
    write_error,
)
from agc._core.record import FrozenRecord, record
from agc._core.storage import (
    BucketLock,
    ChainPaths,
    ChainTurn,
    ListedObject,
    ObjectInfo,
    ObjectVersion,
    Opened,
    PreconditionFailed,
    Retention,
    Store,
    check_store_path,
)
from agc.errors import FileExistsRefusedError, StoreError, UnsafePathError

__all__ = ["FolderStore", "open_chain_log"]

_CHUNK: Final = 1 << 20
_MISSING: Final = frozenset({errno.ENOENT, errno.ENOTDIR})


@record
class FolderStore(FrozenRecord, Store):
    """The store in the folder ``root`` (not created until something is written)."""

    root: Path

    @property
    def url(self) -> str:
        return str(self.root)

    def url_of(self, path: str) -> str:
        return str(self.file(path))

    def file(self, path: str) -> Path:
        """The file of ``path`` inside the folder.

        Raises:
            ValueError: ``path`` is not a path inside a store.
        """
        return self.root / check_store_path(path)

    def _refuse_symlinked_folder(self, folder: str) -> None:
        """Refuse ``folder`` (a ``/``-path inside the store, ``""`` for the root) when it,
        or a folder on the way to it from the root, is a symlink; a missing folder is
        fine (nothing is below it). The root itself is the user's choice and may be one.

        Raises:
            ValueError: ``folder`` is not a path inside a store.
            UnsafePathError: a folder on the way is a symlink.
            StoreError: a folder on the way cannot be looked up.
        """
        where = self.root
        for part in check_store_path(folder).split("/") if folder else ():
            where = where / part
            try:
                mode = os.lstat(where).st_mode
            except OSError as exc:
                if exc.errno in _MISSING:
                    return
                raise StoreError(f"cannot look up {where}: {exc.strerror}") from exc
            if stat.S_ISLNK(mode):
                raise UnsafePathError(f"{where} is a symlink; agc does not follow it")

    def _checked_file(self, path: str) -> Path:
        """:meth:`file`, once no folder on the way to it is a symlink."""
        file = self.file(path)
        self._refuse_symlinked_folder(path.rpartition("/")[0])
        return file

    # -- reading ---------------------------------------------------------------------------

    def _open_fd(self, path: str, version_id: str | None) -> tuple[int, os.stat_result] | None:
        if version_id not in {None, "null"}:
            return None  # a folder has no other versions
        file = self._checked_file(path)
        try:
            fd = open_nofollow(file, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno in _MISSING:
                return None
            raise StoreError(f"cannot read {file}: {exc.strerror}") from exc
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            if stat.S_ISDIR(info.st_mode):
                return None  # a folder is not an object (as an S3 "folder" prefix)
            raise StoreError(f"{file} is not a regular file")
        return fd, info

    def _info(
        self, path: str, info: os.stat_result, etag: str, size: int | None = None
    ) -> ObjectInfo:
        return ObjectInfo(
            key=path,
            etag=etag,
            version_id=None,
            size=info.st_size if size is None else size,
            last_modified_ms=info.st_mtime_ns // 1_000_000,
        )

    def get(
        self, path: str, *, max_bytes: int, version_id: str | None = None
    ) -> tuple[bytes, ObjectInfo] | None:
        """Read a small file whole; ``None`` if there is none.

        Raises:
            UnsafePathError: it, or a folder on the way to it, is a symlink.
            StoreError: not a regular file, larger than ``max_bytes`` or unreadable.
        """
        opened = self._open_fd(path, version_id)
        if opened is None:
            return None
        fd, info = opened
        try:
            if info.st_size > max_bytes:
                raise StoreError(f"{self.url_of(path)} is larger than {max_bytes} bytes")
            try:
                data = read_at_most(fd, max_bytes)
            except OSError as exc:
                raise StoreError(f"cannot read {self.url_of(path)}: {exc.strerror}") from exc
            if len(data) > max_bytes:
                raise StoreError(f"{self.url_of(path)} is larger than {max_bytes} bytes")
        finally:
            os.close(fd)
        return data, self._info(path, info, _etag(data), size=len(data))

    def open(self, path: str, *, version_id: str | None = None) -> Opened:
        """Stream a file (see :data:`~agc._core.storage.Opened`).

        Raises:
            UnsafePathError: it, or a folder on the way to it, is a symlink.
            StoreError: not a regular file, or unreadable.
        """
        return _FolderOpened(self, path, version_id)

    def stream(self, path: str) -> Opened:
        """Stream a file without naming its ETag first (``info.etag`` is empty).

        Raises:
            UnsafePathError: it is a symlink.
            StoreError: not a regular file, or unreadable.
        """
        return _FolderOpened(self, path, None, etag=False)

    def odd_entry(self, path: str) -> Literal["symlink", "other"] | None:
        """``"symlink"`` or ``"other"`` (a folder, a FIFO …) at ``path``, never
        followed; ``None`` for a regular file or nothing.

        Raises:
            StoreError: the folder cannot be read.
        """
        file = self.file(path)
        try:
            mode = os.lstat(file).st_mode
        except OSError as exc:
            if exc.errno in _MISSING:
                return None
            raise StoreError(f"cannot read {file}: {exc.strerror}") from exc
        if stat.S_ISLNK(mode):
            return "symlink"
        return None if stat.S_ISREG(mode) else "other"

    def exists_at_all(self) -> bool:
        """Whether the store folder exists (a symlink in its place counts as there).

        Raises:
            StoreError: it is there but not a folder.
        """
        if not os.path.lexists(self.root):
            return False
        if not self.root.is_dir():
            raise StoreError(f"store {self.root} is not a folder")
        return True

    def exists(self, path: str) -> bool:
        """Whether ``path`` is a regular file (a symlink is not one, nor a file below a
        symlinked folder).

        Raises:
            StoreError: the folder cannot be read.
        """
        file = self.file(path)
        try:
            self._refuse_symlinked_folder(path.rpartition("/")[0])
        except UnsafePathError:
            return False
        try:
            return stat.S_ISREG(os.lstat(file).st_mode)
        except OSError as exc:
            if exc.errno in _MISSING:
                return False
            raise StoreError(f"cannot look up {file}: {exc.strerror}") from exc

    def list_paths(self, path_prefix: str) -> Iterator[str]:
        """The regular files under the folder whose path begins with ``path_prefix``, in
        path order (symlinks, temporary files and lock files are not objects, and nothing
        below a symlinked folder is listed).

        Raises:
            ValueError: ``path_prefix`` is neither ``""`` nor a path inside a store.
            StoreError: a folder cannot be listed.
        """
        if path_prefix:
            check_store_path(path_prefix)
        folder, _, _ = path_prefix.rpartition("/")
        try:
            self._refuse_symlinked_folder(folder)
        except UnsafePathError:
            return  # a symlink is no folder of objects (as _walk skips one)
        for path in sorted(self._walk(folder)):
            if path.startswith(path_prefix):
                yield path

    def list_objects(self, path_prefix: str) -> Iterator[ListedObject]:
        """Each file of :meth:`list_paths` with its size and modification time, as
        ``lstat`` gives them (nothing is read; a file removed since the listing, or
        replaced by something that is not a regular file, is left out).

        Raises:
            ValueError: ``path_prefix`` is neither ``""`` nor a path inside a store.
            StoreError: a folder cannot be listed, or a file looked up.
        """
        for path in self.list_paths(path_prefix):
            file = self.file(path)
            try:
                info = os.lstat(file)
            except OSError as exc:
                if exc.errno in _MISSING:
                    continue
                raise StoreError(f"cannot look up {file}: {exc.strerror}") from exc
            if stat.S_ISREG(info.st_mode):
                yield ListedObject(path, info.st_size, info.st_mtime_ns // 1_000_000)

    def _walk(self, folder: str) -> Iterator[str]:
        where = self.file(folder) if folder else self.root
        try:
            entries = list(os.scandir(where))
        except OSError as exc:
            if exc.errno in _MISSING:
                return
            raise StoreError(f"cannot list {where}: {exc.strerror}") from exc
        for entry in entries:
            path = f"{folder}/{entry.name}" if folder else entry.name
            if entry.is_dir(follow_symlinks=False):
                yield from self._walk(path)
            elif entry.is_file(follow_symlinks=False) and not _is_own_file(entry.name):
                yield path

    def list_names(self, folder: str) -> list[str]:
        """Every entry directly in ``folder``, sorted (symlinks, temporary and lock files
        and sub-folders too: what a look at the folder shows); empty when it is absent.

        Raises:
            UnsafePathError: the folder, or one on the way to it, is a symlink.
            StoreError: the folder cannot be listed.
        """
        where = self.file(folder.rstrip("/"))
        self._refuse_symlinked_folder(folder.rstrip("/"))
        try:
            return sorted(os.listdir(where))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"cannot read {where}: {exc.strerror}") from exc

    def holds(self, path_prefix: str) -> bool:
        """Any entry whose path begins with ``path_prefix`` (a file, a symlink, a FIFO
        …: never followed), but temporary and lock files.

        Raises:
            UnsafePathError: a folder on the way is a symlink.
            StoreError: its folder cannot be listed.
        """
        folder, _, name = path_prefix.rpartition("/")
        self._refuse_symlinked_folder(folder)
        where = self.file(folder) if folder else self.root
        try:
            with os.scandir(where) as entries:
                return any(e.name.startswith(name) and not _is_own_file(e.name) for e in entries)
        except OSError as exc:
            if exc.errno in _MISSING:
                return False
            raise StoreError(f"cannot list {where}: {exc.strerror}") from exc

    def list_versions(self, path_prefix: str) -> Iterator[ObjectVersion]:
        """Each file of :meth:`list_paths` once, as its current version ``"null"``.

        Raises:
            StoreError: a folder cannot be listed or a file read.
        """
        for path in self.list_paths(path_prefix):
            found = self._stat_etag(path)
            if found is None:
                continue  # removed since it was listed
            info, etag = found
            yield ObjectVersion(
                key=path,
                version_id="null",
                is_latest=True,
                is_delete_marker=False,
                last_modified_ms=info.st_mtime_ns // 1_000_000,
                size=info.st_size,
                etag=etag,
            )

    def _stat_etag(self, path: str) -> tuple[os.stat_result, str] | None:
        opened = self._open_fd(path, None)
        if opened is None:
            return None
        fd, info = opened
        try:
            return info, _fd_etag(fd, self.url_of(path))
        finally:
            os.close(fd)

    def bucket_lock(self) -> BucketLock:
        """A folder has no Object Lock."""
        return BucketLock(enabled=False)

    @property
    def folder(self) -> Path:
        return self.root

    # -- writing ---------------------------------------------------------------------------

    def put_new(
        self,
        path: str,
        body: bytes | BinaryIO,
        *,
        retention: Retention | None = None,
        legal_hold: bool = False,
        now_ms: int | None = None,  # noqa: ARG002 - a file's own modification time is its time
    ) -> ObjectInfo:
        """Create the file ``path`` (and its folders), never over an existing one; the
        content is complete and fsynced before it gets its name. ``now_ms`` is not used
        (the file's own modification time is its time).

        Raises:
            PreconditionFailed: the file exists.
            UnsafePathError: a folder on the way is a symlink (nothing is written).
            StoreError: a retention or legal hold is asked for (a folder has no Object
                Lock); the file cannot be written (``FileWriteError`` for a full disk).
        """
        self._refuse_lock(path, retention, legal_hold)
        data = body if isinstance(body, bytes) else body.read()
        file = self._checked_file(path)
        self._write(file, data, overwrite=False, path=path)
        return self._info(path, os.stat(file, follow_symlinks=False), _etag(data))

    def put_swap(
        self,
        path: str,
        data: bytes,
        *,
        etag: str | None,
        retention: Retention | None = None,
        legal_hold: bool = False,
    ) -> str:
        """Replace ``path`` only if its ETag is still ``etag`` (create it only if absent
        when ``etag`` is ``None``), under the file's lock. Returns the new ETag.

        Raises:
            PreconditionFailed: it changed, appeared or disappeared since ``etag``.
            UnsafePathError: a folder on the way is a symlink (nothing is written).
            StoreError: a retention or legal hold is asked for, or the file cannot be
                written.
        """
        self._refuse_lock(path, retention, legal_hold)
        file = self._checked_file(path)
        ensure_dirs(file.parent)
        with exclusive_lock(
            file.with_name(f".{file.name}.lock"), blocking=True, what=self.url_of(path)
        ):
            current = self._stat_etag(path)
            if (None if current is None else current[1]) != etag:
                raise PreconditionFailed(path)
            self._write(file, data, overwrite=True, path=path)
        return _etag(data)

    @contextlib.contextmanager
    def chain_turn(self, paths: ChainPaths) -> Iterator[ChainTurn]:
        """A turn at the chain: an exclusive ``flock`` on ``paths.lock`` (its folder
        created) held until the ``with`` body ends; see :class:`_FolderTurn`.

        Raises:
            FileWriteError: the lock file cannot be created (a full or read-only disk).
        """
        lock = self.file(paths.lock)
        ensure_dirs(lock.parent)
        with exclusive_lock(lock, blocking=True, what="store chain"):
            yield _FolderTurn(self, paths)

    def _refuse_lock(self, path: str, retention: Retention | None, legal_hold: bool) -> None:
        if retention is not None or legal_hold:
            raise StoreError(
                f"cannot write {self.url_of(path)} with a retention or legal hold: a folder "
                "store has no Object Lock",
                hint="Object Lock needs an object store (docs/object-store.md).",
            )

    def _write(self, file: Path, data: bytes, *, overwrite: bool, path: str) -> None:
        try:
            ensure_dirs(file.parent)
            prepare_write(file, data).commit(overwrite=overwrite)
        except FileExistsRefusedError as exc:
            raise PreconditionFailed(path) from exc
        except OSError as exc:  # a machine failure is a FileWriteError already
            raise StoreError(f"cannot write {file}: {exc.strerror}") from exc


class _FolderTurn(ChainTurn):
    """The append of a folder's turn at the chain: the head's ETag compared, the link
    appended to the log (one ``write``, fsync), the head replaced atomically."""

    def __init__(self, store: FolderStore, paths: ChainPaths) -> None:
        self._store, self._paths = store, paths

    def append(
        self,
        position: int,  # noqa: ARG002 - the log keeps its links in order
        link: bytes,
        head: bytes,
        *,
        etag: str | None,
        retention: Retention | None = None,
        legal_hold: bool = False,
    ) -> str:
        store, paths = self._store, self._paths
        store._refuse_lock(paths.log, retention, legal_hold)
        current = store._stat_etag(paths.head)
        if (None if current is None else current[1]) != etag:
            raise PreconditionFailed(paths.head)
        log = store.file(paths.log)
        fd = open_chain_log(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            # Whole or not at all: a full disk never leaves half a link to glue the next to.
            append_whole(fd, link, path=log)
        finally:
            os.close(fd)
        atomic_write_bytes(store.file(paths.head), head, overwrite=True)
        return _etag(head)


def open_chain_log(path: Path, flags: int) -> int:
    """Open a chain log (``O_NONBLOCK``: a FIFO in its place is never waited on).

    Raises:
        FileNotFoundError: there is no log.
        UnsafePathError: it is a symlink.
        StoreError: it is not a regular file (a FIFO, a folder: not a crash's doing,
            so no run is linked until a person has looked), or cannot be opened.
        FileWriteError: opening it to write failed for a reason of the machine.
    """
    try:
        fd = open_nofollow(path, flags | os.O_NONBLOCK, 0o644)
    except (FileNotFoundError, UnsafePathError):
        raise
    except OSError as exc:
        if exc.errno in MACHINE_ERRNOS:
            raise write_error(path, exc, doing="open") from exc
        if exc.errno in {errno.EISDIR, errno.ENXIO}:
            raise _not_a_log(path) from exc
        raise StoreError(f"cannot open {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _not_a_log(path)
    return fd


def _not_a_log(path: Path) -> StoreError:
    return StoreError(
        f"{path} is not a regular file; no run can be linked",
        hint="Run `agc-verify --all` to see the chain's state.",
    )


class _FolderOpened:
    """The context manager of :meth:`FolderStore.open`."""

    def __init__(
        self, store: FolderStore, path: str, version_id: str | None, *, etag: bool = True
    ) -> None:
        self._store, self._path, self._version_id = store, path, version_id
        self._etag = etag
        self._fd: int | None = None

    def __enter__(self) -> tuple[Iterator[bytes], ObjectInfo] | None:
        opened = self._store._open_fd(self._path, self._version_id)
        if opened is None:
            return None
        self._fd, info = opened
        etag = _fd_etag(self._fd, self._store.url_of(self._path)) if self._etag else ""
        return self._chunks(self._fd, info.st_size), self._store._info(self._path, info, etag)

    def _chunks(self, fd: int, size: int) -> Iterator[bytes]:
        """The file's first ``size`` bytes (its length when it was opened: a writer
        appending meanwhile is not followed), in reads of at most ``_CHUNK`` bytes: a
        small file is read in one read of its own length."""
        os.lseek(fd, 0, os.SEEK_SET)
        position = 0
        while position < size:
            try:
                chunk = os.read(fd, min(_CHUNK, size - position))
            except OSError as exc:
                raise StoreError(
                    f"cannot read {self._store.url_of(self._path)}: {exc.strerror}"
                ) from exc
            if not chunk:
                return  # truncated since it was opened
            position += len(chunk)
            yield chunk

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def _etag(data: bytes) -> str:
    return f'"{hashlib.sha256(data).hexdigest()}"'


def _fd_etag(fd: int, where: str) -> str:
    hasher = hashlib.sha256()
    offset = 0
    try:
        while chunk := os.pread(fd, _CHUNK, offset):
            hasher.update(chunk)
            offset += len(chunk)
    except OSError as exc:
        raise StoreError(f"cannot read {where}: {exc.strerror}") from exc
    return f'"{hasher.hexdigest()}"'


def _is_own_file(name: str) -> bool:
    """A temporary file of a write in progress, or a lock file (``.<name>.lock``)."""
    return is_temp_name(name) or (name.startswith(".") and name.endswith(".lock"))
