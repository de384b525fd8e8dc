"""Seal a finished file in place: write its checksum sidecar (``agc seal FILE``)."""

from __future__ import annotations

import fcntl
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agc._core.digest import DEFAULT_ALGORITHM, Algorithm, digest_fd, digests_equal
from agc._core.fs import atomic_write_bytes, describe_os_error, open_nofollow
from agc._core.report import SCHEMA_VERSION
from agc._core.sidecar import format_sidecar, read_sidecar, sidecar_path
from agc.errors import (
    FileUnreadableError,
    InputError,
    InputMissingError,
    RunLockedError,
    SidecarInvalidError,
    SidecarMismatchError,
    StoreError,
    UnsafePathError,
)

__all__ = ["SealResult", "seal_file"]


@dataclass(frozen=True)
class SealResult:
    """Outcome of :func:`seal_file`.

    Attributes:
        path: the sealed file.
        sidecar: the sidecar path.
        digest: hex digest of the file's bytes.
        bytes: file length in bytes.
        created: False when a matching sidecar already existed (nothing written).
    """

    path: Path
    sidecar: Path
    algorithm: Algorithm
    digest: str
    bytes: int
    created: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "path": str(self.path),
            "sidecar": str(self.sidecar),
            "algorithm": self.algorithm,
            "digest": self.digest,
            "bytes": self.bytes,
            "created": self.created,
        }


def seal_file(path: Path, *, algorithm: Algorithm = DEFAULT_ALGORITHM) -> SealResult:
    """Write ``<path>.b3`` (or ``.sha256``) for a closed file; never overwrite a sidecar.

    Raises:
        SidecarMismatchError: a sidecar exists and does not match the file (exit 1).
        UnsafePathError: ``path`` is a symlink.
        RunLockedError: an agc writer still holds the file (it is not closed).
        InputMissingError: ``path`` does not exist (exit 2).
        InputError: ``path`` is a folder (exit 2).
        StoreError: it is a FIFO or a device (exit 3).
        FileUnreadableError: it cannot be read (exit 3).
        FileWriteError: the sidecar cannot be written: disk full, read-only … (exit 3;
            nothing is left behind, a retry works).
        InputError: the file's name cannot be written in a sidecar (a line break, a
            backslash, a leading or trailing space).
    """
    try:
        format_sidecar("0" * 64, path.name)  # checks the name before hashing the file
    except ValueError as exc:
        raise InputError(
            str(exc), hint="Rename the file; b3sum would have to escape its name."
        ) from exc
    try:
        fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block
    except UnsafePathError:
        raise
    except FileNotFoundError as exc:
        raise InputMissingError(f"file {path} does not exist") from exc
    except OSError as exc:
        raise FileUnreadableError(f"cannot read {path}: {describe_os_error(exc)}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{path} is a folder, not a file", hint="agc seals files only.")
        if not stat.S_ISREG(mode):  # a FIFO or a device: it cannot be read as a file
            raise StoreError(f"{path} is not a regular file", hint="agc seals files only.")
        try:
            # agc's writers hold an exclusive flock while a file is open; held shared
            # until the sidecar is written, so no writer can start meanwhile either.
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise RunLockedError(
                f"{path} is still open in an agc writer; it is not closed",
                hint="Let the writer finish: it seals the file itself.",
            ) from exc
        try:
            digest, size = digest_fd(fd, algorithm)
        except OSError as exc:  # an I/O error while reading: agc could not look
            raise FileUnreadableError(f"cannot read {path}: {describe_os_error(exc)}") from exc
        return _write_sidecar(path, algorithm, digest, size)
    finally:
        os.close(fd)


def _write_sidecar(path: Path, algorithm: Algorithm, digest: str, size: int) -> SealResult:
    sidecar = sidecar_path(path, algorithm)
    try:
        parsed = read_sidecar(path, algorithm)
    except SidecarInvalidError as exc:
        raise SidecarMismatchError(
            f"{sidecar} exists and is not a valid sidecar ({exc.message}); left as it is"
        ) from exc
    if parsed is not None:
        if not digests_equal(parsed.digest, digest) or parsed.file_name not in {None, path.name}:
            raise SidecarMismatchError(
                f"{sidecar} exists and does not match {path.name}; left as it is"
            )
        return SealResult(path, sidecar, algorithm, digest, size, created=False)
    atomic_write_bytes(sidecar, format_sidecar(digest, path.name), overwrite=False)
    return SealResult(path, sidecar, algorithm, digest, size, created=True)
