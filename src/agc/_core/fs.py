"""The few places where agc's integrity code touches the filesystem.

Every file inside a store is opened without following symlinks (``O_NOFOLLOW``) and
every replacement is atomic (temporary file in the same folder, fsync, rename, fsync of
the folder), so a crash leaves either the old or the new bytes, never a mix.

A failure of the machine while writing (disk full, quota exceeded, read-only file
system, I/O error, file-size limit: :data:`MACHINE_ERRNOS`) is raised as
:class:`~agc.errors.FileWriteError`, naming the file and the cause, after the partial
bytes are removed: the destination is unchanged, so a retry works.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final

from agc.errors import (
    FileExistsRefusedError,
    FileUnreadableError,
    FileWriteError,
    InputError,
    InputMissingError,
    RunLockedError,
    StoreError,
    UnsafePathError,
)

__all__ = [
    "MACHINE_ERRNOS",
    "TEMP_SUFFIX",
    "PreparedWrite",
    "append_whole",
    "atomic_write_bytes",
    "create_beside",
    "describe_os_error",
    "ensure_dirs",
    "exclusive_lock",
    "file_type_name",
    "fsync_dir",
    "is_temp_name",
    "iter_bounded_lines",
    "keep_backup",
    "last_line_end",
    "lines_from_end",
    "machine_hint",
    "open_nofollow",
    "open_regular_file",
    "prepare_write",
    "read_at_most",
    "read_limited",
    "read_small_file",
    "remove_stale_temp_files",
    "store_write_error",
    "temp_path_beside",
    "write_error",
]

MACHINE_ERRNOS: Final = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})
"""Errors of the machine, not of agc or of its input: exit 3, never "internal error"."""

_CAUSES: Final = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EIO: "input/output error",
    errno.EFBIG: "file-size limit reached",
}
_HINTS: Final = {
    errno.ENOSPC: "Free disk space and run the command again; nothing was half-written.",
    errno.EDQUOT: "Free space within your quota (or raise it) and run the command again.",
    errno.EROFS: "The file system is mounted read-only: remount it read-write or use "
    "another folder, then run the command again.",
    errno.EIO: "The disk reported an I/O error: check it (dmesg, smartctl) before "
    "writing to it again.",
    errno.EFBIG: "Raise the file-size limit (ulimit -f) and run the command again.",
}


def describe_os_error(exc: OSError) -> str:
    """A short lower-case cause for ``exc`` ("no space left on device" …)."""
    if exc.errno in _CAUSES:
        return _CAUSES[exc.errno]
    return exc.strerror.lower() if exc.strerror else str(exc)


def machine_hint(exc: OSError) -> str | None:
    """What to do about a failure of the machine (``None`` for any other error)."""
    return _HINTS.get(exc.errno or 0)


def store_write_error(message: str, path: Path | str, exc: OSError) -> StoreError:
    """The error for a failed change of ``path`` described by ``message``: a failure of
    the machine (:data:`MACHINE_ERRNOS`) is :class:`FileWriteError` (``file-write-failed``,
    with the machine's hint, as every writing command says it), anything else (a
    permission, a name in the way) :class:`StoreError`."""
    if exc.errno in MACHINE_ERRNOS:
        return FileWriteError(message, path=str(path), errno=exc.errno, hint=machine_hint(exc))
    return StoreError(message)


def write_error(path: Path | str, exc: OSError, *, doing: str = "write") -> FileWriteError:
    """The :class:`FileWriteError` for a failed write of ``path`` (``raise … from exc``)."""
    return FileWriteError(
        f"cannot {doing} {path}: {describe_os_error(exc)}",
        path=str(path),
        errno=exc.errno,
        hint=_HINTS.get(exc.errno or 0),
    )


_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
TEMP_SUFFIX: Final = ".tmp"
_TEMP_NAME: Final = re.compile(r"\..+\.[0-9a-f]{12}\.tmp", re.DOTALL)


def open_nofollow(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` with ``O_NOFOLLOW | O_CLOEXEC``; returns the descriptor.

    Raises:
        UnsafePathError: ``path`` is a symlink.
        FileNotFoundError, PermissionError, OSError: as ``os.open``.
    """
    try:
        return os.open(path, flags | _O_NOFOLLOW | _O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (
            exc.errno in {errno.EMLINK, errno.ENOTDIR} and path.is_symlink()
        ):
            raise UnsafePathError(f"{path} is a symlink; agc does not follow it") from exc
        raise


def open_regular_file(path: Path) -> BinaryIO:
    """Open a regular file for streamed reading, without following a symlink.

    Opened with ``O_NONBLOCK``, so a FIFO put in its place is refused, never waited on.

    Raises:
        UnsafePathError: ``path`` is a symlink.
        FileNotFoundError: it does not exist.
        StoreError: it is not a regular file (a FIFO, a folder) or cannot be opened.
    """
    try:
        fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, UnsafePathError):
        raise
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StoreError(f"{path} is not a regular file")
    return os.fdopen(fd, "rb")


def iter_bounded_lines(handle: BinaryIO, *, max_line_bytes: int) -> Iterator[bytes | None]:
    """Yield the lines of ``handle`` (each with its ``\\n``, the last maybe without),
    holding at most ``max_line_bytes + 1`` bytes at a time.

    A line longer than ``max_line_bytes`` is read through to its end, never kept, and
    yielded as ``None``, so a file of any size (a sparse file of zeros, one line of many
    gigabytes) is read in bounded memory and its other lines still count.

    Raises:
        OSError: reading failed.
    """
    while True:
        line = handle.readline(max_line_bytes + 1)
        if not line:
            return
        if len(line) <= max_line_bytes or line.endswith(b"\n"):
            yield line
            continue
        while line and not line.endswith(b"\n"):  # skip the rest of the long line
            line = handle.readline(1 << 20)
        yield None


def last_line_end(fd: int, size: int) -> int:
    """Offset just after the last ``\\n`` in the first ``size`` bytes of the open file
    (0 if there is none): where a torn last line starts. Reads backwards in 64 KiB
    steps, never the whole file.

    Raises:
        OSError: reading failed.
    """
    end = size
    while end > 0:
        start = max(0, end - 65536)
        chunk = os.pread(fd, end - start, start)
        index = chunk.rfind(b"\n")
        if index >= 0:
            return start + index + 1
        end = start
    return 0


def lines_from_end(path: Path, *, block: int = 8192) -> Iterator[bytes]:
    """The lines of the file ``path``, last first: each as iterating the open file
    yields it (with its ``\\n``; a last line without one as it is). Reads backwards,
    ``block`` bytes first and twice as many at each further step, so finding the last
    few lines costs what they hold, not the file's size, and a line longer than a block
    is read in O(its length).

    Raises:
        OSError: the file cannot be opened or read.
    """
    with path.open("rb") as handle:
        fd = handle.fileno()
        at = os.fstat(fd).st_size  # bytes [0, at) not read yet
        buffer = b""  # bytes [at, at + len(buffer)) read, lines not yet yielded
        stop = 0  # buffer[:stop] is what is left to yield
        step = max(1, block)
        while True:
            # A line starts after a \n that is not the last byte of what is left.
            cut = buffer.rfind(b"\n", 0, stop - 1) if stop > 1 else -1
            while cut >= 0:
                yield buffer[cut + 1 : stop]
                stop = cut + 1
                cut = buffer.rfind(b"\n", 0, stop - 1) if stop > 1 else -1
            if at == 0:
                if stop:
                    yield buffer[:stop]
                return
            start = max(0, at - step)
            chunk = os.pread(fd, at - start, start)
            if len(chunk) != at - start:  # the file was cut short meanwhile
                raise OSError(f"{path} changed while it was read")
            buffer = chunk + buffer[:stop]
            stop = len(buffer)
            at = start
            step *= 2


def read_small_file(path: Path, *, max_bytes: int) -> bytes:
    """Read a small file (sidecar, manifest) without following symlinks.

    Opened with ``O_NONBLOCK`` and checked to be a regular file, so a FIFO or device put
    in place of a sidecar cannot make the verifier hang. A file whose size is already
    above ``max_bytes`` (a sparse file of a terabyte) is refused before any of it is
    read; one that grows while it is read is cut at ``max_bytes + 1`` and refused too.

    Raises:
        UnsafePathError: the path is a symlink or not a regular file.
        StoreError: larger than ``max_bytes`` or unreadable.
        FileNotFoundError: it does not exist.
    """
    fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePathError(f"{path} is not a regular file")
        if info.st_size > max_bytes:
            raise StoreError(f"{path} is larger than {max_bytes} bytes")
        data = read_at_most(fd, max_bytes)
        if len(data) > max_bytes:
            raise StoreError(f"{path} is larger than {max_bytes} bytes")
        return data
    finally:
        os.close(fd)


def read_at_most(fd: int, max_bytes: int) -> bytes:
    """The bytes of the open regular file ``fd`` from its offset up to its end, but never
    more than ``max_bytes + 1`` of them: a result longer than ``max_bytes`` says the file
    is too large, without reading it whole.

    Raises:
        OSError: reading failed.
    """
    chunks: list[bytes] = []
    left = max_bytes + 1
    while left > 0 and (chunk := os.read(fd, min(left, 65536))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


_FILE_TYPES: Final = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symlink"),
)


def file_type_name(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, for messages: "a regular file",
    "a folder", "a FIFO", "a character device", "a block device", "a socket",
    "a symlink" (of an ``lstat``), else "a special file"."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _FILE_TYPES if test(mode)), "a special file")


def ensure_dirs(*folders: Path) -> None:
    """Create each folder (and its parents) if absent.

    Raises:
        FileWriteError: a failure of the machine (read-only file system, disk full).
        StoreError: any other reason (a file in the way, permissions).
    """
    for folder in folders:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if exc.errno in MACHINE_ERRNOS:
                raise write_error(folder, exc, doing="create the folder") from exc
            raise StoreError(f"cannot create {folder}: {describe_os_error(exc)}") from exc


def fsync_dir(path: Path) -> None:
    """fsync a folder so that a rename or create inside it is durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class PreparedWrite:
    """The new content of one file, complete and fsynced in a temporary file beside it.

    Made by :func:`prepare_write`, or empty by :func:`create_beside` (maybe a file with
    no name yet in the folder) for the caller to write; :meth:`commit` puts it in place
    (a rename, or a link where nothing may be overwritten), and :meth:`discard` removes
    it. Preparing several files before committing any lets a
    caller replace them together: the space is taken before the first rename, so a full
    disk leaves every destination as it was. Use it as a context manager: leaving the
    ``with`` block discards what was not committed.
    """

    def __init__(self, path: Path, tmp: Path, fd: int, *, unnamed: bool = False) -> None:
        self.path = path
        self._tmp: Path | None = tmp
        # Its exclusive flock is held until the rename is done: a temp file nobody holds
        # is a crash's leftover, which remove_stale_temp_files() may delete.
        self._fd: int | None = fd
        # An O_TMPFILE file (``tmp`` is /proc/self/fd/N): it has no name until commit
        # links it, so a crash before that leaves nothing in the folder.
        self._unnamed = unnamed

    @property
    def tmp(self) -> Path:
        """Where the content is read back before the commit: the temporary file, or
        ``/proc/self/fd/N`` for an unnamed one.

        Raises:
            RuntimeError: it was committed or discarded.
        """
        if self._tmp is None:
            raise RuntimeError(f"the new content of {self.path} is no longer open")
        return self._tmp

    def fileno(self) -> int:
        """The descriptor the content is written through (closed by the commit).

        Raises:
            RuntimeError: it was committed or discarded.
        """
        if self._fd is None:
            raise RuntimeError(f"the new content of {self.path} is no longer open")
        return self._fd

    def commit(self, *, overwrite: bool) -> None:
        """Put the content in place, then fsync the folder.

        Args:
            overwrite: if False and the destination exists, refuse; the check and the
                rename are one step (``os.link``), so a racing writer is never
                overwritten either.

        Raises:
            FileExistsRefusedError: ``overwrite`` is False and the destination exists.
            UnsafePathError: the destination is a symlink and ``overwrite`` is True.
            FileWriteError: a failure of the machine; the destination is unchanged.
            OSError: any other failure (a missing folder …); the destination is unchanged.
        """
        tmp = self._tmp
        if tmp is None:
            raise RuntimeError(f"the new content of {self.path} was already committed")
        path = self.path
        try:
            if overwrite:
                if path.is_symlink():
                    raise UnsafePathError(f"{path} is a symlink; agc does not replace it")
                if self._unnamed:  # a name first, for the one rename over the file
                    named = temp_path_beside(path)
                    _link_unnamed(tmp, named)
                    self._tmp, self._unnamed, tmp = named, False, named
                os.replace(tmp, path)
            else:
                try:
                    if self._unnamed:
                        _link_unnamed(tmp, path)
                    else:
                        os.link(tmp, path)
                except FileExistsError as exc:
                    raise FileExistsRefusedError(f"{path} already exists") from exc
        except OSError as exc:
            self.discard()
            if exc.errno in MACHINE_ERRNOS:
                raise write_error(path, exc) from exc
            raise
        except BaseException:
            self.discard()
            raise
        self.discard()  # after os.link the temporary name is a second link
        try:
            fsync_dir(path.parent)
        except OSError as exc:
            if exc.errno in MACHINE_ERRNOS:
                raise write_error(path.parent, exc, doing="sync the folder") from exc
            raise

    def discard(self) -> None:
        """Remove the temporary file if it is still there, release it (idempotent)."""
        if self._tmp is not None:
            if not self._unnamed:  # an unnamed one goes with its last descriptor
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._tmp)
            self._tmp = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> PreparedWrite:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.discard()


_O_TMPFILE: Final = getattr(os, "O_TMPFILE", 0)
_PROC_FD: Final = "/proc/self/fd"
# What open(2) of a folder with O_TMPFILE says where the kernel or the file system has
# no unnamed files: the caller then makes a named temporary file.
_NO_TMPFILE: Final = frozenset({errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOSYS})


def temp_path_beside(path: Path) -> Path:
    """A fresh temporary name beside ``path``: ``.<name>.<12 hex digits>.tmp``."""
    return path.with_name(f".{path.name}.{os.urandom(6).hex()}{TEMP_SUFFIX}")


def _link_unnamed(proc_path: Path, path: Path) -> None:
    """Give the unnamed file open at ``proc_path`` (``/proc/self/fd/N``) the name
    ``path``: linkat(2) with AT_SYMLINK_FOLLOW (os.link passes it only with a folder
    descriptor), never over an existing name.

    Raises:
        FileExistsError: something is at ``path``.
        OSError: as linkat(2).
    """
    folder = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_CLOEXEC)
    try:
        os.link(proc_path, path.name, dst_dir_fd=folder, follow_symlinks=True)
    finally:
        os.close(folder)


def create_beside(path: Path, *, mode: int) -> PreparedWrite:
    """An empty new file that will become ``path``, open for writing, its exclusive
    flock held; write its descriptor (:meth:`PreparedWrite.fileno`) then commit.

    Made unnamed (O_TMPFILE, linked in place by the commit) where the OS, the file
    system and ``/proc/self/fd`` allow it: a process killed before the
    commit leaves nothing in the folder. Elsewhere a named temporary file beside
    ``path`` (``.<name>.<12 hex digits>.tmp``); the ones of this name that a killed
    writer left (nobody holds their flock) are removed first, so each run of a writer
    cleans up after the last. ``mode`` (permission bits) is masked by the umask, as
    open(2) does. ``PreparedWrite.tmp`` reads the content back: the temporary file's
    path, or ``/proc/self/fd/N``.

    Raises:
        OSError: as open(2): FileNotFoundError for a missing folder, NotADirectoryError,
            PermissionError, a full disk …
    """
    with contextlib.suppress(OSError):
        remove_stale_temp_files(path.parent, name=path.name)
    if _O_TMPFILE and os.path.isdir(_PROC_FD):
        folder = path.parent if str(path.parent) else Path(".")
        try:
            fd = os.open(folder, _O_TMPFILE | os.O_WRONLY | _O_CLOEXEC, mode)
        except OSError as exc:
            if exc.errno not in _NO_TMPFILE:
                raise
        else:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return PreparedWrite(path, Path(f"{_PROC_FD}/{fd}"), fd, unnamed=True)
    tmp = temp_path_beside(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, mode)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return PreparedWrite(path, tmp, fd)


def prepare_write(path: Path, data: bytes, *, mode: int = 0o644) -> PreparedWrite:
    """Write ``data`` to a new temporary file beside ``path`` and fsync it.

    Nothing at ``path`` changes until :meth:`PreparedWrite.commit`.

    Raises:
        FileWriteError: a failure of the machine (the temporary file is removed).
        OSError: any other failure, such as a missing folder (nothing is left behind).
    """
    tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}{TEMP_SUFFIX}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno in MACHINE_ERRNOS:
            raise write_error(path, exc) from exc
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        os.close(fd)
        if isinstance(exc, OSError) and exc.errno in MACHINE_ERRNOS:
            raise write_error(path, exc) from exc
        raise
    return PreparedWrite(path, tmp, fd)


def atomic_write_bytes(path: Path, data: bytes, *, overwrite: bool, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` atomically (temp file, fsync, rename, fsync folder).

    Args:
        path: destination; its folder must exist.
        data: the complete new content.
        overwrite: if False and ``path`` exists, refuse (``FileExistsRefusedError``);
            the check and the rename are atomic (``os.link``), so a racing writer cannot
            be overwritten either.
        mode: permission bits of the new file.

    Raises:
        FileExistsRefusedError: ``overwrite`` is False and ``path`` exists.
        UnsafePathError: ``path`` is a symlink and ``overwrite`` is True.
        FileWriteError: disk full, quota, read-only file system, I/O error or file-size
            limit; the destination is unchanged and no temporary file is left.
        OSError: any other failure (a missing folder …); the destination is unchanged.
    """
    if overwrite and path.is_symlink():
        raise UnsafePathError(f"{path} is a symlink; agc does not replace it")
    prepare_write(path, data, mode=mode).commit(overwrite=overwrite)


BACKUP_INFIX: Final = ".agc-backup-"


def keep_backup(path: Path) -> Path:
    """Keep the file ``path`` as it is now beside it, under a name not taken:
    ``<name>.agc-backup-<YYYYmmddTHHMMSSZ>`` (UTC) then ``-2``, ``-3`` … (a hard link; a
    copy, fsynced, where the file system refuses links). A backup is never overwritten.
    Returns the backup's path.

    Raises:
        FileWriteError: a failure of the machine while copying.
        StoreError: no free name.
        OSError: any other failure (a permission, a missing file).
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for attempt in range(1, 1000):
        suffix = f"{BACKUP_INFIX}{stamp}" + (f"-{attempt}" if attempt > 1 else "")
        backup = path.with_name(path.name + suffix)
        try:
            os.link(path, backup, follow_symlinks=False)
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno not in {errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK}:
                raise
            try:
                atomic_write_bytes(backup, path.read_bytes(), overwrite=False, mode=0o600)
            except FileExistsRefusedError:
                continue
        return backup
    raise StoreError(f"no free backup name beside {path}")


def append_whole(fd: int, data: bytes, *, path: Path, fsync: bool = True) -> None:
    """Append ``data`` to the open file ``fd`` entirely, or not at all.

    On a failed or short write the file is cut back to its length before the call, so
    an append-only log never ends in half a line. The caller holds the file's lock.

    Raises:
        FileWriteError: a failure of the machine (the file is as it was).
        OSError: any other failure (the file is as it was, if it could be cut back).
    """
    start = os.fstat(fd).st_size
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if fsync:
            os.fsync(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        if exc.errno in MACHINE_ERRNOS:
            raise write_error(path, exc, doing="append to") from exc
        raise


def is_temp_name(name: str) -> bool:
    """Whether ``name`` is a temporary file of :func:`atomic_write_bytes`
    (``.<name>.<12 hex digits>.tmp``)."""
    return _TEMP_NAME.fullmatch(name) is not None


def _temp_of(name: str) -> str:
    """The file a temporary name ``.<name>.<12 hex digits>.tmp`` is for."""
    return name[1 : -len(f".{'0' * 12}{TEMP_SUFFIX}")]


def remove_stale_temp_files(folder: Path, *, name: str | None = None) -> list[str]:
    """Delete the temporary files in ``folder`` that a crashed writer left behind
    (with ``name``: only those of the file ``name``, ``.<name>.<12 hex digits>.tmp``).

    A live :func:`atomic_write_bytes` holds an exclusive ``flock`` on its temporary file
    from creation until after the rename, so a temp file whose lock can be taken has no
    writer: it is removed, unless the name was reused for another file meanwhile (the
    inode is compared). Nothing else is touched. Returns the removed names, sorted.

    Raises:
        OSError: the folder cannot be listed (a missing folder yields ``[]``).
    """
    try:
        names = sorted(
            entry
            for entry in os.listdir(folder)
            if is_temp_name(entry) and (name is None or _temp_of(entry) == name)
        )
    except FileNotFoundError:
        return []
    removed = []
    for entry in names:
        path = folder / entry
        try:
            fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue  # gone already, or a symlink: not ours
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a writer is still at work
            held, named = os.fstat(fd), os.lstat(path)
            if (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino) and stat.S_ISREG(
                held.st_mode
            ):
                os.unlink(path)
                removed.append(entry)
        except FileNotFoundError:
            continue  # renamed into place by its writer meanwhile
        finally:
            os.close(fd)
    if removed:
        fsync_dir(folder)
    return removed


@contextlib.contextmanager
def exclusive_lock(path: Path, *, blocking: bool, what: str) -> Iterator[int]:
    """Hold an exclusive ``flock`` on ``path`` (created if absent) for the ``with`` body.

    ``flock`` locks belong to the open file description, so the lock excludes other
    processes and other opens in this process alike.

    Raises:
        RunLockedError: ``blocking`` is False and someone else holds the lock.
        FileWriteError: the lock file cannot be created (read-only file system, disk full).
    """
    try:
        fd = open_nofollow(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno in MACHINE_ERRNOS:
            raise write_error(path, exc, doing="create the lock file") from exc
        raise
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError as exc:
            raise RunLockedError(f"{what} is locked by another writer") from exc
        yield fd
    finally:
        os.close(fd)


def read_limited(
    path: Path, *, what: str, max_bytes: int, too_large: type[InputError] = InputError
) -> bytes:
    """Return the bytes of ``path``, reading at most ``max_bytes + 1`` of them.

    Args:
        path: the file the user named.
        what: how messages name it ("prompt file", "policy" …).
        max_bytes: the largest accepted size in bytes.
        too_large: the error raised for a larger file.

    Raises:
        InputMissingError: the file does not exist (exit 2).
        InputError: it is a folder (exit 2).
        FileUnreadableError: it cannot be read: permissions, I/O error (exit 3).
        too_large: it holds more than ``max_bytes`` bytes (never read whole).
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError as exc:
        raise InputMissingError(f"{what} {path} does not exist") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{what} {path} is a folder, not a file") from exc
    except OSError as exc:
        raise FileUnreadableError(
            f"{what} {path} cannot be read: {describe_os_error(exc)}"
        ) from exc
    if len(data) > max_bytes:
        raise too_large(f"{what} {path} is larger than {max_bytes} bytes")
    return data
