"""Content fingerprints: ``blake3:<64 hex>`` over bytes, a folder tree or a JSON value.

A fingerprint identifies content, never trust: it tells a duplicate import, and lets a
projection record say exactly which bytes an agent was given. Three kinds:

* bytes of one file (a zip archive, a lone file): BLAKE3 of the bytes;
* a folder tree: BLAKE3 over a canonical listing (``agc-tree-v1``): for each entry,
  its kind (file, executable file, folder), the UTF-8
  path and, for files, the BLAKE3 of the content (depth first, names sorted by code
  point within each folder); symlinks and special files are never
  part of a stored tree (imports refuse or skip them) and are refused here;
* a JSON value (an MCP server's configuration): BLAKE3 of its RFC 8785 canonical form.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Any, Final

from agc._core.canonical import canonical_json
from agc._core.digest import digest_fd, new_hasher
from agc._core.fs import open_nofollow
from agc.errors import UnsafePathError

__all__ = [
    "FINGERPRINT_PREFIX",
    "bytes_fingerprint",
    "file_fingerprint",
    "json_fingerprint",
    "jsonable",
    "tree_fingerprint",
]

FINGERPRINT_PREFIX: Final = "blake3:"
_TREE_MAGIC: Final = b"agc-tree-v1\x00"
_EXACT_INT: Final = 2**53 - 1  # I-JSON (RFC 7493 section 2.2), as RFC 8785 requires


def bytes_fingerprint(data: bytes) -> str:
    hasher = new_hasher("blake3")
    hasher.update(data)
    return FINGERPRINT_PREFIX + hasher.hexdigest()


def file_fingerprint(path: Path) -> str:
    """Fingerprint of one regular file (never followed through a symlink).

    Raises:
        UnsafePathError: a symlink or not a regular file.
        OSError: unreadable.
    """
    fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePathError(f"{path} is not a regular file")
        digest, _ = digest_fd(fd, "blake3", threads=1)
    finally:
        os.close(fd)
    return FINGERPRINT_PREFIX + digest


def json_fingerprint(value: Any) -> str:
    """Fingerprint of a JSON value in RFC 8785 canonical form (made :func:`jsonable`
    first: an integer a double does not hold exactly, as a string)."""
    return bytes_fingerprint(canonical_json(jsonable(value)))


def jsonable(value: Any) -> Any:
    """A TOML or YAML value as JSON data: dates, times, non-finite floats and integers
    beyond 2^53 as text."""
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _EXACT_INT:
        return str(value)  # RFC 8785 keeps only integers a double holds exactly
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def tree_fingerprint(root: Path, *, skip: frozenset[str] = frozenset()) -> str:
    """Fingerprint of every file and folder under ``root`` (``root`` itself excluded).

    Args:
        root: the folder.
        skip: POSIX paths relative to ``root`` left out (with everything below them).

    Raises:
        UnsafePathError: a symlink or special file inside the tree.
        OSError: unreadable.
    """
    hasher = new_hasher("blake3")
    hasher.update(_TREE_MAGIC)
    for relative, kind, path in _walk(root, "", skip):
        encoded = relative.encode("utf-8", "surrogateescape")
        hasher.update(kind + len(encoded).to_bytes(8, "big") + encoded)
        if kind != b"d":
            hasher.update(bytes.fromhex(file_fingerprint(path)[len(FINGERPRINT_PREFIX) :]))
    return FINGERPRINT_PREFIX + hasher.hexdigest()


def _walk(folder: Path, prefix: str, skip: frozenset[str]) -> list[tuple[str, bytes, Path]]:
    out: list[tuple[str, bytes, Path]] = []
    for name in sorted(os.listdir(folder)):
        relative = f"{prefix}{name}"
        if relative in skip:
            continue
        path = folder / name
        info = path.lstat()
        if stat.S_ISDIR(info.st_mode):
            out.append((relative, b"d", path))
            out.extend(_walk(path, relative + "/", skip))
        elif stat.S_ISREG(info.st_mode):
            out.append((relative, b"x" if info.st_mode & 0o100 else b"f", path))
        else:
            raise UnsafePathError(f"{path} is a link or special file inside a stored tree")
    return out
