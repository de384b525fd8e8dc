"""New files a user names (``--out FILE``, a report, a key): written atomically, never
over anything, with one set of errors for every command."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agc._core.fs import atomic_write_bytes, describe_os_error
from agc.errors import FileExistsRefusedError, InputError, StoreError

__all__ = ["new_file_errors", "write_new_file"]


def write_new_file(path: Path, data: bytes, *, option: str = "--out", mode: int = 0o600) -> None:
    """Write ``data`` to the new file ``path`` a user named with ``option``, atomically
    and never over anything there (atomic rename or link(2)).

    Raises:
        FileExistsRefusedError: something is at ``path``, a symlink too (dangling or a
            loop) (exit 2).
        InputError: its folder does not exist or is not a folder, or the name is too
            long for the file system (exit 2).
        FileWriteError: a full disk, quota, read-only file system, I/O error (exit 3).
        StoreError: any other refusal of the file system: permission denied, no hard
            links (link(2) puts the file in place) (exit 3).
    """
    with new_file_errors(path, option=option):
        atomic_write_bytes(path, data, overwrite=False, mode=mode)


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
        raise StoreError(
            f"{option} {path} cannot be written: {describe_os_error(exc)}",
            hint="Choose a folder you may write, on a local file system.",
        ) from exc
