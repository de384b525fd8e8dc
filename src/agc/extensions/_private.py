"""Owner-only permissions for the extension repository.

MCP server configurations may hold literal secrets (``env = { API_KEY = "sk-…" }``,
``Authorization: Bearer …``), and the repository keeps them: in the source copy, and,
unless imported with ``--env-ref``, in the index. So everything under
``<store>/extensions`` is private to the user: folders ``0700`` and files ``0600``
(stored sources are read-only: ``0400``, or ``0500`` for an executable). Every file and
folder is created with these modes, so the process umask can only take more bits away
(``open(2)``/``mkdir(2)`` apply ``mode & ~umask``), never leave a group or world bit.

A repository written by an earlier agc (folders ``0755``, files ``0644``) is tightened
the first time this agc opens it: :func:`tighten_tree` walks it and clears every group
and world bit, the root folder last, so an interrupted walk is redone. A repository
whose root folder is already ``0700`` is taken as tightened (one ``lstat``): nobody else
can reach a file inside it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from agc._core.fs import describe_os_error, ensure_dirs, store_write_error

__all__ = [
    "OTHERS_BITS",
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "PrivacyFinding",
    "PrivacyReport",
    "file_mode",
    "private_dir",
    "private_file",
    "tighten_tree",
]

PRIVATE_DIR_MODE: Final = 0o700
PRIVATE_FILE_MODE: Final = 0o600
OTHERS_BITS: Final = 0o077
"""The group and world permission bits: none is ever set in the repository."""

_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)


def file_mode(executable: bool) -> int:
    """The mode of a new file in the repository: ``0700`` executable, else ``0600``."""
    return 0o700 if executable else PRIVATE_FILE_MODE


def private_dir(folder: Path) -> None:
    """Create ``folder`` (mode ``0700``) if absent; its parents as :func:`ensure_dirs` does.

    An existing folder is left as it is (:func:`tighten_tree` handles old ones).

    Raises:
        FileWriteError: a failure of the machine (read-only file system, disk full).
        StoreError: any other reason (a file in the way, permissions).
    """
    if not folder.parent.is_dir():
        ensure_dirs(folder.parent)
    try:
        os.mkdir(folder, PRIVATE_DIR_MODE)
    except FileExistsError:
        if not folder.is_dir():
            ensure_dirs(folder)  # raises StoreError naming the file in the way
    except OSError as exc:
        raise store_write_error(
            f"cannot create {folder}: {describe_os_error(exc)}", folder, exc
        ) from exc


def private_file(path: Path) -> None:
    """Create the empty file ``path`` with mode ``0600`` if absent (never follows a link),
    so that a writer that opens it with ``O_CREAT`` and a wider mode keeps ``0600``.

    Raises:
        FileWriteError, StoreError: it cannot be created.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC, PRIVATE_FILE_MODE)
    except OSError as exc:
        raise store_write_error(
            f"cannot create {path}: {describe_os_error(exc)}", path, exc
        ) from exc
    os.close(fd)


@dataclass(frozen=True)
class PrivacyFinding:
    """A file or folder that others may read and that could not be made private.

    Attributes:
        path: where it is.
        mode: its permission bits (``st_mode & 0o7777``).
        reason: why ``chmod`` failed, in words.
    """

    path: Path
    mode: int
    reason: str


@dataclass(frozen=True)
class PrivacyReport:
    """What :func:`tighten_tree` did.

    Attributes:
        root: the folder checked.
        tightened: how many files and folders lost group/world bits.
        open: those that still have them (``chmod`` failed: another owner, a read-only
            file system); empty when the whole tree is private.
    """

    root: Path
    tightened: int = 0
    open: tuple[PrivacyFinding, ...] = ()

    @property
    def private(self) -> bool:
        """Whether no file or folder under the root is readable by others."""
        return not self.open


def _tighten(path: Path, mode: int, open_paths: list[PrivacyFinding]) -> bool:
    try:
        os.chmod(path, stat.S_IMODE(mode) & ~OTHERS_BITS)
    except FileNotFoundError:
        return False  # removed meanwhile (a concurrent removal)
    except OSError as exc:
        open_paths.append(PrivacyFinding(path, stat.S_IMODE(mode), describe_os_error(exc)))
        return False
    return True


def tighten_tree(root: Path) -> PrivacyReport:
    """Clear the group and world bits of every folder and regular file under ``root``.

    Links under ``root`` are never followed nor changed (the repository holds none; one
    put there is not agc's); a ``root`` that is itself a link to a folder (the
    repository moved elsewhere, a link left in its place) is followed, so the folder
    that holds the files is tightened. A root that does not exist, or is already
    private, is left alone: a ``0700`` folder already keeps everyone else out of all it
    holds. Never raises.

    Returns:
        the report: how many entries were tightened, and those that could not be.
    """
    try:
        info = root.stat()
    except OSError:
        return PrivacyReport(root)
    if not stat.S_ISDIR(info.st_mode) or not info.st_mode & OTHERS_BITS:
        return PrivacyReport(root)
    tightened = 0
    open_paths: list[PrivacyFinding] = []
    for folder, dirs, files in os.walk(root, topdown=False):
        for name in (*files, *dirs):
            path = Path(folder) / name
            with contextlib.suppress(OSError):
                entry = path.lstat()
                if (
                    stat.S_ISREG(entry.st_mode) or stat.S_ISDIR(entry.st_mode)
                ) and entry.st_mode & OTHERS_BITS:
                    tightened += _tighten(path, entry.st_mode, open_paths)
    # The root last: until it is private, the next run walks the tree again.
    tightened += _tighten(root, info.st_mode, open_paths)
    return PrivacyReport(root, tightened, tuple(open_paths))
