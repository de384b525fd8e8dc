"""New files a user names (``--out FILE``, a report, a key): written atomically, never
over anything, with one set of errors for every command."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from agc._core.fs import (
    PreparedWrite,
    create_beside,
    describe_os_error,
    machine_hint,
)
from agc._core.fs import keep_backup as fs_keep_backup
from agc.errors import (
    FileExistsRefusedError,
    FileWriteError,
    InPlaceRefusedError,
    InputError,
    UnsafePathError,
)

__all__ = [
    "new_file_beside",
    "new_file_errors",
    "processes_holding",
    "replace_in_place",
    "write_new_file",
]


def write_new_file(path: Path, data: bytes, *, option: str = "--out", mode: int = 0o600) -> None:
    """Write ``data`` to the new file ``path`` a user named with ``option``, atomically
    and never over anything there (link(2)), with the permission bits ``mode`` masked by
    the umask; its temporary file is made as :func:`new_file_beside` makes it, so a
    kill leaves no file.

    Raises:
        FileExistsRefusedError: something is at ``path``, a symlink too (dangling or a
            loop) (exit 2).
        InputError: its folder does not exist or is not a folder, or the name is too
            long for the file system (exit 2).
        FileWriteError: a full disk, quota, read-only file system, I/O error, or any
            other refusal of the file system: permission denied, no hard links (link(2)
            puts the file in place) (exit 3, ``file-write-failed``).
    """
    with new_file_errors(path, option=option):
        prepared = create_beside(path, mode=mode)
    with prepared, new_file_errors(path, option=option):  # discarded unless committed
        fd, view = prepared.fileno(), memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        prepared.commit(overwrite=False)


@contextmanager
def new_file_errors(path: Path, *, option: str = "--out") -> Iterator[None]:
    """Turn the errors of writing the new file ``path`` (named with ``option``) into the
    errors :func:`write_new_file` raises, for a caller that writes it in its own way."""
    try:
        yield
    except FileExistsRefusedError as exc:
        raise FileExistsRefusedError(
            f"{option} {path} already exists",
            hint="Choose another output path; agc never overwrites an existing file.",
        ) from exc
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise InputError(f"{option} {path}: its folder does not exist") from exc
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise InputError(f"{option} {path}: the name is too long") from exc
        if exc.errno == errno.ELOOP:  # a symlink loop where the file would go
            raise FileExistsRefusedError(
                f"{option} {path} already exists (a symlink)",
                hint="Choose another output path; agc never overwrites an existing file.",
            ) from exc
        raise _write_failed(path, option, exc) from exc


def _write_failed(path: Path, option: str, exc: OSError) -> FileWriteError:
    """``file-write-failed`` for the new file ``path`` a user named with ``option``: a
    failure of the machine with its hint (:data:`agc._core.fs.MACHINE_ERRNOS`), else a
    refusal of its folder (permissions, no hard links) with what to do instead.
    ``--in-place`` names the file replaced: its repair is written beside it first."""
    cause = describe_os_error(exc)
    if option == "--in-place":
        message = f"--in-place: the repair of {path} cannot be written beside it: {cause}"
        hint = (
            "agc writes the repair into the file's folder, then renames it over the file: "
            "make that folder writable, or write the repair elsewhere with --out FILE."
        )
    else:
        message = f"{option} {path} cannot be written: {cause}"
        hint = "Choose a folder you may write, on a local file system."
    return FileWriteError(message, path=str(path), errno=exc.errno, hint=machine_hint(exc) or hint)


@contextmanager
def new_file_beside(
    path: Path, *, option: str = "--out", mode: int = 0o600
) -> Iterator[tuple[BinaryIO, Path, PreparedWrite]]:
    """A new file for ``path``, written as a stream: ``(handle, path that reads it back,
    prepared)``.

    The content goes to a file with no name yet (O_TMPFILE) in the folder of ``path``,
    or where the system has none, to a temporary file beside it (``.<name>.<12 hex
    digits>.tmp``; those of this name a killed writer left are removed first): see
    :func:`agc._core.fs.create_beside`. Its permission bits are ``mode`` masked by the
    umask; an exclusive flock is held. ``prepared.commit(overwrite=...)`` puts it in
    place after :func:`sync` of the handle; leaving the block without a commit removes
    it, and a process killed before the commit leaves no file (or, without O_TMPFILE, a
    temporary one the next write of ``path`` removes).

    Raises:
        FileExistsRefusedError, InputError, FileWriteError: as
            :func:`write_new_file`, for creating the temporary file.
    """
    with new_file_errors(path, option=option):
        prepared = create_beside(path, mode=mode)
    with prepared:  # discards the temporary file on leaving
        handle = os.fdopen(os.dup(prepared.fileno()), "wb")
        try:
            yield handle, prepared.tmp, prepared
        except BaseException:
            # Closing flushes what is still buffered: on a full disk that fails again,
            # and must not hide the error that is leaving (it names the file).
            with contextlib.suppress(OSError):
                handle.close()
            raise
        with new_file_errors(path, option=option):
            handle.close()


def sync(handle: BinaryIO) -> None:
    """Flush ``handle`` and fsync its file."""
    handle.flush()
    os.fsync(handle.fileno())


@contextmanager
def replace_in_place(
    path: Path, *, unchanged: Callable[[], None]
) -> Iterator[tuple[BinaryIO, Path, Callable[[], Path]]]:
    """Write a new version of the existing file ``path``: ``(handle, temporary path,
    commit)``.

    ``commit()`` makes the swap and returns the backup's path. In order: the new content
    is fsynced; ``unchanged()`` raises if ``path`` changed since it was read; the file must
    not be open in another process (:func:`processes_holding`); the original is kept
    beside it as ``<name>.agc-backup-<UTC time>[-N]`` (a hard link to it, or a copy where
    the file system has none), never over an existing file; then the new content replaces
    ``path`` in one rename and the folder is fsynced. Until that rename ``path`` is as it
    was; a crash at any point leaves either the old file or the new one there, never a
    part of either. Leaving the block without a commit changes nothing.

    Raises:
        InPlaceRefusedError: another process holds ``path`` open, or (from
            ``unchanged``, which raises it) ``path`` changed during the repair (exit 3).
        FileWriteError: the folder cannot take the new file or the backup.
    """
    with new_file_beside(path, option="--in-place") as (handle, tmp, prepared):

        def commit() -> Path:
            with new_file_errors(path, option="--in-place"):
                sync(handle)
            unchanged()
            if path.is_symlink():  # refused before anything is kept beside it
                raise UnsafePathError(
                    f"{path} is a symlink; --in-place replaces a file, not a link",
                    hint="Name the file the link points to, or write the repair with --out.",
                )
            with new_file_errors(path, option="--in-place"):  # the file keeps its mode
                os.fchmod(handle.fileno(), stat.S_IMODE(os.stat(path).st_mode))
            holders = processes_holding(path)
            if holders:
                raise InPlaceRefusedError(
                    f"{path} is open in process {', '.join(map(str, holders))}; "
                    "agc does not replace a session file a client is writing"
                )
            backup = keep_backup(path)
            try:
                prepared.commit(overwrite=True)
            except OSError as exc:
                # ``path`` is as it was: the backup kept of it is no backup of anything.
                with contextlib.suppress(OSError):
                    backup.unlink()
                raise _replace_failed(path, exc) from exc
            return backup

        yield handle, tmp, commit


def _replace_failed(path: Path, exc: OSError) -> FileWriteError:
    """``file-write-failed`` for the last step of ``--in-place``: the rename of the
    repair over ``path`` was refused (an immutable or append-only file, a read-only
    mount, a sticky folder of another user's file, a full disk), so ``path`` is unchanged."""
    hint = (
        "the file, or its folder, refuses to be replaced (see lsattr and the folder's "
        "owner and sticky bit): write the repair elsewhere with --out FILE."
    )
    return FileWriteError(
        f"--in-place: {path} cannot be replaced by its repair: {describe_os_error(exc)}; "
        "it is unchanged",
        path=str(path),
        errno=exc.errno,
        hint=machine_hint(exc) or hint,
    )


def keep_backup(path: Path) -> Path:
    """Keep the file ``path`` as it is now beside it (:func:`agc._core.fs.keep_backup`:
    ``<name>.agc-backup-<YYYYmmddTHHMMSSZ>`` then ``-2``, ``-3`` …, never over an existing
    file). Returns the backup's path.

    Raises:
        FileWriteError: the backup cannot be written (nothing is replaced).
    """
    with new_file_errors(path.with_name(path.name + ".agc-backup"), option="backup"):
        return fs_keep_backup(path)


def processes_holding(path: Path) -> tuple[int, ...]:
    """The ids of other processes that have ``path`` open, as Linux's ``/proc/<pid>/fd``
    shows them (the processes of the same user, or all for root); empty where there is
    no ``/proc``."""
    try:
        target = os.stat(path)
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return ()
    me, holders = os.getpid(), []
    for pid in pids:
        if int(pid) == me:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                seen = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if (seen.st_dev, seen.st_ino) == (target.st_dev, target.st_ino):
                holders.append(int(pid))
                break
    return tuple(sorted(holders))
