"""Checksum sidecars: ``<name>.b3`` / ``<name>.sha256`` beside a sealed file.

A sidecar holds exactly one line, ``<lower-case hex digest>  <file name>\\n``: the
format of ``b3sum`` and ``sha256sum`` (GNU coreutils, text mode), so that
``b3sum --check x.jsonl.b3`` or ``sha256sum -c x.jsonl.sha256``, run inside the
file's folder, verify it with no agc installed.

The legacy store format left ``<file>.sha256`` holding only the hex SHA-256; such a
*legacy* sidecar is accepted for reading and reported as legacy.

Reading, one rule for every reader (the verifier, ``agc seal``, ``agc recover``, the
writers, resume snapshots, the turn ledger):

* absent: :func:`read_sidecar` returns ``None``;
* present but not a usable sidecar: a symlink, folder, FIFO, socket or device in its
  place, more than :data:`MAX_SIDECAR_BYTES` bytes, or not exactly one well-formed
  line: :class:`~agc.errors.SidecarInvalidError`, with the problem. It says something
  about the evidence: checkers report it as a finding (``sidecar-invalid``), writers
  and loaders refuse to go on;
* present but unreadable (permission denied, an I/O error): :class:`~agc.errors.StoreError`
  (exit 3). agc could not look, which is neither a pass nor a finding about the
  evidence, so it is never reported as one.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Container
from pathlib import Path
from typing import Final

from agc._core.digest import ALGORITHMS, SIDECAR_SUFFIXES, Algorithm
from agc._core.fs import read_small_file
from agc._core.record import FrozenRecord, record
from agc.errors import SidecarInvalidError, StoreError, UnsafePathError

__all__ = [
    "MAX_SIDECAR_BYTES",
    "Sidecar",
    "format_sidecar",
    "parse_sidecar",
    "read_sidecar",
    "read_sidecars",
    "sidecar_name",
    "sidecar_path",
    "sidecar_paths",
]

# The file name neither starts nor ends with a space: "<hex>   name" or "name " would
# otherwise parse as a name with stray spaces instead of being reported as bad spacing.
_LINE_RE: Final = re.compile(rb"([0-9a-f]{64})  ([^\r\n/\\ ](?:[^\r\n/\\]*[^\r\n/\\ ])?)\n")
_LEGACY_RE: Final = re.compile(rb"([0-9a-f]{64})\n?")
MAX_SIDECAR_BYTES: Final = 4096
"""The largest sidecar read: one line is 64 hex digits, two spaces and a file name."""


@record
class Sidecar(FrozenRecord):
    """A parsed sidecar.

    Attributes:
        digest: lower-case hex digest.
        file_name: the file name the sidecar names (``None`` for a legacy sidecar).
        legacy: True for the legacy digest-only SHA-256 format.
    """

    digest: str
    file_name: str | None
    legacy: bool = False


def sidecar_name(file_name: str, algorithm: Algorithm) -> str:
    """``x.jsonl`` -> ``x.jsonl.b3`` (BLAKE3) or ``x.jsonl.sha256`` (SHA-256)."""
    return file_name + SIDECAR_SUFFIXES[algorithm]


def sidecar_path(path: Path, algorithm: Algorithm) -> Path:
    """The sidecar beside ``path``: ``dir/x.jsonl`` -> ``dir/x.jsonl.b3`` (pure)."""
    return path.with_name(sidecar_name(path.name, algorithm))


def sidecar_paths(path: Path) -> dict[Algorithm, Path]:
    """Every sidecar ``path`` may have, by algorithm (``.b3`` first; pure)."""
    return {algorithm: sidecar_path(path, algorithm) for algorithm in ALGORITHMS}


def read_sidecar(path: Path, algorithm: Algorithm) -> Sidecar | None:
    """Read and parse the ``algorithm`` sidecar of the file ``path``.

    Args:
        path: the sealed file (not the sidecar).
        algorithm: which sidecar (``.b3`` or ``.sha256``).

    Returns:
        The sidecar, or ``None`` when there is none.

    Raises:
        SidecarInvalidError: present but not a usable sidecar (see the module docstring);
            the message starts with ``"sidecar "`` and names the problem.
        StoreError: present but unreadable (permission denied, an I/O error): exit 3.
    """
    where = sidecar_path(path, algorithm)
    try:
        data = read_small_file(where, max_bytes=MAX_SIDECAR_BYTES)
    except FileNotFoundError:
        return None
    except UnsafePathError as exc:
        raise SidecarInvalidError("sidecar is a symlink or not a regular file") from exc
    except StoreError as exc:  # read_small_file: larger than the limit
        raise SidecarInvalidError(
            f"sidecar is larger than {MAX_SIDECAR_BYTES} bytes; one line is expected"
        ) from exc
    except OSError as exc:
        if exc.errno in {errno.ENXIO, errno.ENODEV}:  # a socket or device in its place
            raise SidecarInvalidError("sidecar is a symlink or not a regular file") from exc
        raise StoreError(f"cannot read {where}: {exc.strerror or exc}") from exc
    return parse_sidecar(data, algorithm=algorithm)


def read_sidecars(
    path: Path, *, listed: Container[str] | None = None
) -> dict[Algorithm, Sidecar | str]:
    """Every sidecar present beside the file ``path``: parsed, or the problem that
    makes it unusable (``"is empty"``, ``"is a symlink or not a regular file"`` …:
    the :class:`~agc.errors.SidecarInvalidError` message without ``"sidecar "``).

    Args:
        listed: the names in the file's folder, from a listing taken before: a sidecar
            whose name is not among them is not looked for (``None``: look for each).

    Raises:
        StoreError: a sidecar is present but unreadable (see :func:`read_sidecar`).
    """
    found: dict[Algorithm, Sidecar | str] = {}
    for algorithm in ALGORITHMS:
        if listed is not None and sidecar_name(path.name, algorithm) not in listed:
            continue
        try:
            sidecar = read_sidecar(path, algorithm)
        except SidecarInvalidError as exc:
            found[algorithm] = exc.message.removeprefix("sidecar ")
            continue
        if sidecar is not None:
            found[algorithm] = sidecar
    return found


def format_sidecar(digest: str, file_name: str) -> bytes:
    """Return the sidecar bytes ``b"<digest>  <file_name>\\n"``.

    Raises:
        ValueError: the digest is not 64 lower-case hex characters, or the file name
            holds a path separator or line break (b3sum would escape it), or starts or
            ends with a space (it would not parse back), or is not UTF-8.
    """
    if re.fullmatch(r"[0-9a-f]{64}", digest) is None:
        raise ValueError(f"digest {digest!r} is not 64 lower-case hex characters")
    bad_char = any(ch in file_name for ch in "/\\\r\n")
    if not file_name or bad_char or file_name != file_name.strip(" "):
        raise ValueError(f"file name {file_name!r} cannot be written in a sidecar")
    try:
        return f"{digest}  {file_name}\n".encode()
    except UnicodeEncodeError:  # undecodable bytes of a POSIX name (PEP 383)
        shown = os.fsencode(file_name)
        raise ValueError(
            f"file name {shown!r} is not UTF-8 and cannot be written in a sidecar"
        ) from None


def parse_sidecar(data: bytes, *, algorithm: Algorithm) -> Sidecar:
    """Parse sidecar bytes strictly.

    Args:
        data: the sidecar file's bytes.
        algorithm: the algorithm implied by the sidecar's suffix; only SHA-256
            sidecars may be in the legacy digest-only form.

    Raises:
        SidecarInvalidError: with a message naming the exact problem (upper-case hex,
            CRLF, extra spaces, more than one line, no file name …).
    """
    if len(data) > MAX_SIDECAR_BYTES:
        raise SidecarInvalidError(f"sidecar is {len(data)} bytes; one line is expected")
    match = _LINE_RE.fullmatch(data)
    if match is not None:
        try:
            file_name = match.group(2).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SidecarInvalidError("sidecar names a file name that is not UTF-8") from exc
        return Sidecar(digest=match.group(1).decode(), file_name=file_name)
    if algorithm == "sha256":
        legacy = _LEGACY_RE.fullmatch(data)
        if legacy is not None:
            return Sidecar(digest=legacy.group(1).decode(), file_name=None, legacy=True)
    raise SidecarInvalidError(f"sidecar {_describe_problem(data)}")


def _describe_problem(data: bytes) -> str:
    if not data:
        return "is empty"
    if b"\r" in data:
        return "has CRLF or CR line ends"
    if data.count(b"\n") > 1 or (b"\n" in data and not data.endswith(b"\n")):
        return "has more than one line"
    if not data.endswith(b"\n"):
        return "does not end with a newline"
    line = data[:-1]
    digest, sep, rest = line.partition(b" ")
    if re.fullmatch(rb"[0-9A-Fa-f]{64}", digest) and digest != digest.lower():
        return "digest is not lower-case hex"
    if re.fullmatch(rb"[0-9a-f]+", digest) is None:
        return "does not start with a hex digest"
    if len(digest) != 64:
        return f"digest has {len(digest)} hex characters; 64 expected"
    if not sep:
        return "has no file name after the digest"
    if not rest.startswith(b" ") or rest.startswith(b"  ") or rest.endswith(b" "):
        return "has wrong spacing: exactly two spaces separate digest and file name"
    return "names an unusable file name"
