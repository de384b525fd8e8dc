"""Bringing an import source into a fresh staging folder: a zip, a folder or one file.

Nothing found inside is ever executed. Zip archives are checked whole before the first
byte is extracted and refused whole (:class:`~agc.errors.ArchiveRefusedError`, naming
the entry) when an entry

* has a ``..`` component, an absolute path, a drive letter or a ``:`` (a Windows
  alternate data stream), a NUL, or a name that changes meaning under NFKC
  (fullwidth dots become ``..``, a fullwidth solidus ``/``);
* has a component longer than :data:`MAX_NAME_BYTES` bytes in UTF-8 (``NAME_MAX`` of
  Linux and macOS file systems, POSIX ``<limits.h>``) or a path longer than
  :data:`MAX_PATH_BYTES` (well below ``PATH_MAX``, leaving room for the store's own
  path): no file system could hold it, and it is the archive's fault, not the store's;
* is a device, FIFO or socket (the Unix file type in ``external_attr``), or a symbolic
  link whose target leaves the archive (absolute, or ``..`` past its top, directly or
  through other links of the archive);
* collides with another after case folding and NFKC (``A.md`` beside ``a.md``, ``é``
  composed and decomposed), or is a file where another entry needs a folder;
* overlaps another entry's bytes in the archive (the "overlapping files" zip bomb), or
  is encrypted or uses an unsupported compression method;

and the archive is refused when it has more entries than the limit, declares or
actually expands to more bytes than the limit, or holds an entry whose expansion ratio
exceeds the limit. Sizes are checked while streaming, against the bytes really
produced, never only against what the archive declares.

A symbolic link entry (``git archive`` and GitHub's "Download ZIP" store a repository's
links so: the Unix type ``S_IFLNK`` and the target as the entry's bytes) is treated as
in a folder: never created as a link. One whose target (resolved inside the archive,
links within it followed at most :data:`MAX_LINK_HOPS` times) is a file of the archive
is kept as a copy of that file; one that names a folder, another link loop, or nothing
is skipped with a note; one that leaves the archive refuses the archive.

A folder is copied without following any symlink: a link whose target is a file of the
folder (walked from the folder without following any link) is kept as a copy, every
other link is skipped with a note, so nothing outside the folder is ever read; special
files are skipped, and the same entry and byte limits apply.

Every file and folder is created owner-only (``_private``: folders ``0700``, files
``0600``, or ``0700`` when the source file was executable for its owner): a stored
source may hold an MCP server's literal secrets.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import struct
import unicodedata
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

from agc._core.fs import store_write_error
from agc._core.jsonl import describe_os_error
from agc.errors import (
    ArchiveRefusedError,
    FileUnreadableError,
    InputError,
    InputMissingError,
    StoreError,
)
from agc.extensions._private import PRIVATE_DIR_MODE, file_mode

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "ImportLimits",
    "copy_file",
    "copy_folder",
    "extract_zip",
    "is_zip_file",
]

_CHUNK: Final = 64 * 1024
_O_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_LOCAL_HEADER: Final = struct.Struct("<4s2B4HL2L2H")
_LOCAL_SIGNATURE: Final = b"PK\x03\x04"
_SUPPORTED_COMPRESSION: Final = frozenset(
    {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
)
_DRIVE_RE: Final = re.compile(r"[A-Za-z]:")
MAX_NAME_BYTES: Final = 255
"""Longest file or folder name of an archive entry, in UTF-8 bytes."""
MAX_PATH_BYTES: Final = 1024
"""Longest path of an archive entry (or a copied file) inside the source, in UTF-8 bytes."""


@dataclass(frozen=True)
class ImportLimits:
    """Caps for one import (zip bombs, a folder named by mistake).

    Attributes:
        max_entries: files and folders in the source.
        max_total_bytes: bytes of all files together, after decompression.
        max_ratio: largest uncompressed/compressed size ratio of one zip entry ...
        ratio_floor_bytes: ... counted only for entries larger than this many bytes,
            so that small, very compressible files (a blank template) pass.
    """

    max_entries: int = 10_000
    max_total_bytes: int = 512 * 1024 * 1024
    max_ratio: int = 200
    ratio_floor_bytes: int = 1024 * 1024


DEFAULT_LIMITS: Final = ImportLimits()


def is_zip_file(path: Path) -> bool:
    """Whether ``path`` (a regular file) starts like a zip archive or is named ``*.zip``."""
    if path.suffix.lower() == ".zip":
        return True
    try:
        with path.open("rb") as handle:
            head = handle.read(4)
    except OSError:
        return False
    return head in {b"PK\x03\x04", b"PK\x05\x06"}


# -- zip ------------------------------------------------------------------------------


MAX_LINK_HOPS: Final = 40
"""Most links followed to resolve one link entry of an archive (Linux ``MAXSYMLINKS``)."""


@dataclass(frozen=True)
class _Entry:
    info: zipfile.ZipInfo
    parts: tuple[str, ...]
    is_dir: bool
    executable: bool
    is_link: bool = False


def _refuse(archive: str, message: str) -> ArchiveRefusedError:
    return ArchiveRefusedError(f"{archive}: {message}; nothing was imported")


def _entry_parts(archive: str, raw: str) -> tuple[tuple[str, ...], bool]:
    """Split an entry name into safe components; refuse any unsafe name."""
    if "\x00" in raw:
        raise _refuse(archive, f"entry {raw!r} has a NUL character in its name")
    name = raw.replace("\\", "/")
    if name.startswith("/"):
        raise _refuse(archive, f"entry {raw!r} is an absolute path")
    if _DRIVE_RE.match(name):
        raise _refuse(archive, f"entry {raw!r} starts with a drive letter")
    is_dir = name.endswith("/")
    parts = tuple(part for part in name.split("/") if part not in {"", "."})
    for part in parts:
        if part == "..":
            raise _refuse(archive, f"entry {raw!r} has a '..' component")
        if ":" in part:
            raise _refuse(
                archive, f"entry {raw!r} has a ':' (a drive letter or alternate data stream)"
            )
        folded = unicodedata.normalize("NFKC", part)
        if folded in {".", ".."} or "/" in folded or "\\" in folded or ":" in folded:
            raise _refuse(archive, f"entry {raw!r} changes meaning under NFKC ({folded!r})")
    if not parts and not is_dir:
        raise _refuse(archive, f"entry {raw!r} has an empty name")
    for part in parts:
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise _refuse(
                archive,
                f"entry {_short(raw)} has a name longer than {MAX_NAME_BYTES} bytes",
            )
    if len("/".join(parts).encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise _refuse(archive, f"entry {_short(raw)} has a path longer than {MAX_PATH_BYTES} bytes")
    return parts, is_dir


def _short(name: str, keep: int = 80) -> str:
    """An entry name for a message: quoted, cut in the middle when very long."""
    if len(name) <= 2 * keep:
        return repr(name)
    return f"{name[:keep]!r}…{name[-keep:]!r} ({len(name)} characters)"


def _unix_mode(info: zipfile.ZipInfo) -> int:
    return (info.external_attr >> 16) & 0xFFFF


def _check_entry(archive: str, info: zipfile.ZipInfo) -> _Entry:
    parts, is_dir = _entry_parts(archive, info.filename)
    mode = _unix_mode(info)
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        if is_dir or not parts:
            raise _refuse(archive, f"entry {info.filename!r} is a symbolic link named as a folder")
        return _Entry(info=info, parts=parts, is_dir=False, executable=False, is_link=True)
    if kind not in {0, stat.S_IFREG, stat.S_IFDIR}:
        raise _refuse(archive, f"entry {info.filename!r} is a device, FIFO or socket")
    if kind == stat.S_IFDIR:
        is_dir = True
    if info.flag_bits & 0x1:
        raise _refuse(archive, f"entry {info.filename!r} is encrypted")
    if not is_dir and info.compress_type not in _SUPPORTED_COMPRESSION:
        raise _refuse(
            archive,
            f"entry {info.filename!r} uses compression method {info.compress_type}, "
            "which agc does not extract",
        )
    return _Entry(info=info, parts=parts, is_dir=is_dir, executable=bool(mode & 0o100))


def _check_collisions(archive: str, entries: list[_Entry]) -> None:
    """No two entries the same after case folding and NFKC; no file where a folder is."""
    files: dict[tuple[str, ...], str] = {}
    folders: dict[tuple[str, ...], str] = {}
    spellings: dict[tuple[str, ...], tuple[str, ...]] = {}
    for entry in entries:
        key = tuple(unicodedata.normalize("NFKC", part).casefold() for part in entry.parts)
        name = entry.info.filename
        for depth in range(1, len(key) + (1 if entry.is_dir else 0)):
            prefix = key[:depth]
            if prefix in files:
                raise _refuse(
                    archive, f"entry {name!r} needs a folder where {files[prefix]!r} is a file"
                )
            # Folders spelled two ways (``a/x`` beside ``A/y``) would be two folders on a
            # case-sensitive disk and one on a case-insensitive one.
            spelled = tuple(entry.parts[:depth])
            if spellings.setdefault(prefix, spelled) != spelled:
                raise _refuse(
                    archive,
                    f"entries {folders[prefix]!r} and {name!r} collide (folder "
                    f"{'/'.join(spellings[prefix])!r} spelled {'/'.join(spelled)!r}; the same "
                    "name after case folding and NFKC)",
                )
            folders.setdefault(prefix, name)
        if entry.is_dir:
            continue
        if key in files:
            raise _refuse(
                archive,
                f"entries {files[key]!r} and {name!r} collide (same name after case folding "
                "and NFKC)",
            )
        if key in folders:
            raise _refuse(
                archive, f"entry {name!r} is a file where {folders[key]!r} needs a folder"
            )
        files[key] = name


def _check_layout(archive: str, handle: BinaryIO, infos: list[zipfile.ZipInfo], end: int) -> None:
    """Every entry's bytes lie before the next entry's and before the central directory."""
    ordered = sorted(infos, key=lambda info: info.header_offset)
    for index, info in enumerate(ordered):
        handle.seek(info.header_offset)
        header = handle.read(_LOCAL_HEADER.size)
        if len(header) != _LOCAL_HEADER.size or header[:4] != _LOCAL_SIGNATURE:
            raise _refuse(archive, f"entry {info.filename!r} has no valid local header")
        fields = _LOCAL_HEADER.unpack(header)
        name_length, extra_length = fields[-2], fields[-1]
        data_end = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
        data_end += info.compress_size
        limit = ordered[index + 1].header_offset if index + 1 < len(ordered) else end
        if data_end > limit:
            other = ordered[index + 1].filename if index + 1 < len(ordered) else None
            where = f"entry {other!r}" if other is not None else "the central directory"
            raise _refuse(archive, f"entry {info.filename!r} overlaps {where}")


# A central directory entry: 46 fixed bytes, then its name, extra field and comment.
_CENTRAL_ENTRY_FIXED: Final = 46
_CENTRAL_ENTRY_SLACK: Final = 1024  # extra field and comment of a plausible entry


def _check_directory_size(archive: str, handle: BinaryIO, limits: ImportLimits) -> None:
    """Refuse, before the central directory is parsed, an archive that declares more
    entries than the limit, or whose central directory is too large to hold only that
    many (APPNOTE.TXT 4.3.16: the end of central directory record gives both).

    ``zipfile.ZipFile`` builds an object for every entry before agc can count them: a
    small archive of tiny entries (80 MB for a million) costs gigabytes of memory and a
    minute. The size bound keeps an archive that under-declares its entries to the
    entries a central directory of that size can hold.
    """
    end_record = getattr(zipfile, "_EndRecData", None)  # how zipfile itself finds it
    if end_record is None:  # pragma: no cover - a future zipfile; it still parses
        return
    try:
        record = end_record(handle)
    except (OSError, ValueError, struct.error):
        return  # zipfile refuses it next, with its own message
    if not record:
        return
    entries, size = record[4], record[5]  # _ECD_ENTRIES_TOTAL, _ECD_SIZE
    if entries > limits.max_entries:
        raise _refuse(archive, f"it has {entries} entries; the limit is {limits.max_entries}")
    largest = limits.max_entries * (_CENTRAL_ENTRY_FIXED + MAX_PATH_BYTES + _CENTRAL_ENTRY_SLACK)
    if size > largest:
        raise _refuse(
            archive,
            f"its central directory is {size} bytes, more than {limits.max_entries} entries "
            f"need ({largest} bytes at most)",
        )
    # Where zipfile starts reading it (the end record's place minus the directory's
    # size: an archive with data in front, a self-extractor, still opens).
    start = record[9] - size  # _ECD_LOCATION
    if record[0] == b"PK\x06\x06":  # the Zip64 end record and its locator come first
        start -= _ZIP64_END_AND_LOCATOR
    if start < 0:
        return  # zipfile refuses it next, with its own message
    _count_directory(archive, handle, start, size, entries, limits)


_ZIP64_END_AND_LOCATOR: Final = 56 + 20
_CENTRAL_SIGNATURE: Final = b"PK\x01\x02"
_CENTRAL_LENGTHS: Final = struct.Struct("<3H")  # name, extra field, comment (offset 28)


def _count_directory(
    archive: str, handle: BinaryIO, start: int, size: int, declared: int, limits: ImportLimits
) -> None:
    """Count the central directory's entries without building them; stop at the first
    entry past the limit, and refuse a count other than the end record declares.

    ``zipfile`` reads every entry of the directory's bytes, however many the end record
    declares: a 20 MB directory of tiny names holds 400 000 entries under a declared
    10 000. This walk reads only each entry's fixed part and lengths (APPNOTE.TXT
    4.3.12: 46 bytes, then the name, extra field and comment).
    """
    handle.seek(start)
    directory = handle.read(size)
    offset = count = 0
    while offset + _CENTRAL_ENTRY_FIXED <= len(directory):
        if directory[offset : offset + 4] != _CENTRAL_SIGNATURE:
            return  # not an entry: zipfile refuses the archive with its own message
        count += 1
        if count > limits.max_entries:
            raise _refuse(
                archive,
                f"its central directory holds more than {limits.max_entries} entries (the "
                f"limit), although its end record declares {declared}",
            )
        name, extra, comment = _CENTRAL_LENGTHS.unpack_from(directory, offset + 28)
        offset += _CENTRAL_ENTRY_FIXED + name + extra + comment
    if count != declared:
        raise _refuse(
            archive,
            f"its end record declares {declared} entries but its central directory holds {count}",
        )


_MAX_LINK_TARGET_BYTES: Final = 4096  # PATH_MAX of Linux
_LinkOutcome = tuple[str, "_Entry | None", str]  # (kind: file|folder|missing|loop, entry, path)


def _link_target(archive: str, zf: zipfile.ZipFile, entry: _Entry) -> str:
    """The target a link entry stores as its bytes (UTF-8, at most 4096 bytes).

    Raises:
        ArchiveRefusedError: too long, not UTF-8, a NUL, or damaged.
    """
    name = entry.info.filename
    if entry.info.file_size > _MAX_LINK_TARGET_BYTES:
        raise _refuse(archive, f"link entry {name!r} has a target longer than 4096 bytes")
    try:
        with zf.open(entry.info) as member:
            data = member.read(_MAX_LINK_TARGET_BYTES + 1)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        raise _refuse(archive, f"entry {name!r} is damaged ({exc})") from exc
    except OSError as exc:
        raise FileUnreadableError(
            f"{archive}: reading entry {name!r} failed: {describe_os_error(exc)}"
        ) from exc
    if len(data) > _MAX_LINK_TARGET_BYTES:
        raise _refuse(archive, f"link entry {name!r} holds more bytes than it declares")
    try:
        target = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _refuse(archive, f"link entry {name!r} has a target that is not UTF-8") from None
    if not target or "\x00" in target:
        raise _refuse(archive, f"link entry {name!r} has an empty target or one with a NUL")
    return target


def _resolve_links(
    archive: str, zf: zipfile.ZipFile, entries: list[_Entry]
) -> dict[int, _LinkOutcome]:
    """Where each link entry leads, inside the archive (keyed by its index in ``entries``).

    Resolution follows the kernel's (path_resolution(7)): component by component from
    the link's folder, ``..`` going up one folder, every link of the archive met on the
    way replaced by its target (at most :data:`MAX_LINK_HOPS` times: more is a loop), a
    path that goes on past a file or past nothing leading nowhere.

    Raises:
        ArchiveRefusedError: a target (or the target of a link met on the way) is
            absolute or goes above the archive's top: the link leaves the archive.
    """
    files = {entry.parts: entry for entry in entries if not entry.is_dir and not entry.is_link}
    folders = {entry.parts[:depth] for entry in entries for depth in range(len(entry.parts))}
    folders.update(entry.parts for entry in entries if entry.is_dir)
    targets = {entry.parts: _link_target(archive, zf, entry) for entry in entries if entry.is_link}
    outcomes: dict[int, _LinkOutcome] = {}
    for position, entry in enumerate(entries):
        if not entry.is_link:
            continue
        name = entry.info.filename

        def escapes(target: str, name: str = name) -> ArchiveRefusedError:
            return _refuse(
                archive,
                f"symbolic link entry {name!r} points outside the archive ({_short(target)})",
            )

        resolved: list[str] = list(entry.parts[:-1])
        pending = _target_parts(targets[entry.parts])
        if pending is None:
            raise escapes(targets[entry.parts])
        hops = 0
        kind = ""
        while pending:
            part = pending.pop(0)
            if part == "..":
                if not resolved:
                    raise escapes(targets[entry.parts])
                resolved.pop()
                continue
            candidate = (*resolved, part)
            if candidate in targets:
                hops += 1
                if hops > MAX_LINK_HOPS:
                    kind = "loop"
                    break
                inner = _target_parts(targets[candidate])
                if inner is None:
                    raise escapes(targets[candidate])
                pending = inner + pending
                continue
            resolved.append(part)
            if pending and tuple(resolved) not in folders:
                kind = "missing"  # a file or nothing where the path needs a folder
                break
        final = tuple(resolved)
        if not kind:
            if final in files:
                kind = "file"
            elif final in folders or not final:
                kind = "folder"
            else:
                kind = "missing"
        outcomes[position] = (kind, files.get(final) if kind == "file" else None, "/".join(final))
    return outcomes


def _target_parts(target: str) -> list[str] | None:
    """A link target's components (``\\`` a separator too); ``None`` when absolute."""
    text = target.replace("\\", "/")
    if text.startswith("/") or _DRIVE_RE.match(text):
        return None
    return [part for part in text.split("/") if part not in {"", "."}]


def _link_note(entry: _Entry, outcome: _LinkOutcome) -> str:
    kind, _, path = outcome
    name = "/".join(entry.parts)
    if kind == "file":
        return f"{name}: symbolic link kept as a copy of {path} (agc never creates links)"
    if kind == "folder":
        return (
            f"{name}: symbolic link to the folder {path or '.'} skipped (agc never creates links)"
        )
    if kind == "loop":
        return f"{name}: symbolic link loop skipped"
    return f"{name}: symbolic link to {path}, which the archive does not hold, skipped"


def extract_zip(
    archive: Path, dest: Path, *, limits: ImportLimits = DEFAULT_LIMITS, label: str | None = None
) -> list[str]:
    """Extract ``archive`` into the empty folder ``dest`` after checking it whole; return
    notes (each link entry: kept as a copy, or skipped, and why).

    Args:
        archive: the zip file.
        dest: an existing, empty staging folder.
        limits: entry count, byte and ratio caps.
        label: how messages name the archive (default: its path).

    Raises:
        ArchiveRefusedError: an unsafe entry or a limit (see the module docstring);
            ``dest`` may then hold a partial extraction for the caller to delete.
        InputError: the file is not a zip archive.
        InputMissingError, FileUnreadableError: it is gone or cannot be read (exit 2, 3).
        StoreError: writing into ``dest`` failed (disk full …).
    """
    name = label or str(archive)
    try:
        handle = archive.open("rb")
    except OSError as exc:
        raise _unreadable(name, exc) from exc
    with handle:
        _check_directory_size(name, handle, limits)
        handle.seek(0)
        try:
            zf = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise InputError(f"{name} is not a readable zip archive ({exc})") from exc
        with zf:
            infos = zf.infolist()
            if len(infos) > limits.max_entries:
                raise _refuse(
                    name, f"it has {len(infos)} entries; the limit is {limits.max_entries}"
                )
            entries = [_check_entry(name, info) for info in infos]
            _check_collisions(name, entries)
            _check_layout(
                name, handle, infos, getattr(zf, "start_dir", os.fstat(handle.fileno()).st_size)
            )
            declared = sum(entry.info.file_size for entry in entries if not entry.is_dir)
            if declared > limits.max_total_bytes:
                raise _refuse(
                    name,
                    f"it declares {declared} bytes uncompressed; the limit is "
                    f"{limits.max_total_bytes}",
                )
            for entry in entries:
                _check_ratio(name, entry.info.filename, entry.info.file_size, entry.info, limits)
            links = _resolve_links(name, zf, entries)
            copied = sum(
                target.info.file_size for _, target, _ in links.values() if target is not None
            )
            if declared + copied > limits.max_total_bytes:
                raise _refuse(
                    name,
                    f"with its links kept as copies it declares {declared + copied} bytes "
                    f"uncompressed; the limit is {limits.max_total_bytes}",
                )
            total = 0
            notes: list[str] = []
            for position, entry in enumerate(entries):
                outcome = links.get(position)
                if outcome is None:
                    total = _extract_entry(name, zf, entry, dest, total, limits)
                    continue
                notes.append(_link_note(entry, outcome))
                target = outcome[1]
                if target is not None:
                    copy = _Entry(
                        info=target.info,
                        parts=entry.parts,
                        is_dir=False,
                        executable=target.executable,
                    )
                    total = _extract_entry(name, zf, copy, dest, total, limits)
            return notes


def _check_ratio(
    archive: str, entry: str, size: int, info: zipfile.ZipInfo, limits: ImportLimits
) -> None:
    if size > limits.ratio_floor_bytes and size > limits.max_ratio * max(info.compress_size, 1):
        raise _refuse(
            archive,
            f"entry {entry!r} expands {size} bytes from {info.compress_size} "
            f"(more than {limits.max_ratio}:1, a zip bomb?)",
        )


def _extract_entry(
    archive: str,
    zf: zipfile.ZipFile,
    entry: _Entry,
    dest: Path,
    total: int,
    limits: ImportLimits,
) -> int:
    folder = dest
    parents = entry.parts if entry.is_dir else entry.parts[:-1]
    for part in parents:
        folder = folder / part
        _mkdir_nofollow(folder)
    if entry.is_dir:
        return total
    target = folder / entry.parts[-1]
    fd = _create_exclusive(target, file_mode(entry.executable))
    written = 0
    try:
        with zf.open(entry.info) as member:
            while chunk := member.read(_CHUNK):
                written += len(chunk)
                total += len(chunk)
                if written > entry.info.file_size:
                    raise _refuse(
                        archive, f"entry {entry.info.filename!r} holds more bytes than it declares"
                    )
                if total > limits.max_total_bytes:
                    raise _refuse(
                        archive,
                        f"it expands past {limits.max_total_bytes} bytes (at entry "
                        f"{entry.info.filename!r})",
                    )
                _check_ratio(archive, entry.info.filename, written, entry.info, limits)
                _write_all(fd, chunk, target)
    except ArchiveRefusedError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        raise _refuse(archive, f"entry {entry.info.filename!r} is damaged ({exc})") from exc
    except OSError as exc:
        # Writes raise StoreError (_write_all): an OSError here is the archive's read.
        raise FileUnreadableError(
            f"{archive}: reading entry {entry.info.filename!r} failed: {describe_os_error(exc)}"
        ) from exc
    finally:
        os.close(fd)
    return total


# -- folders and files -----------------------------------------------------------------


def _mkdir_nofollow(path: Path) -> None:
    try:
        os.mkdir(path, PRIVATE_DIR_MODE)
    except FileExistsError:
        if not stat.S_ISDIR(path.lstat().st_mode):
            raise StoreError(f"{path} exists and is not a folder") from None
    except OSError as exc:
        raise store_write_error(
            f"cannot create {path}: {describe_os_error(exc)}", path, exc
        ) from exc


def _create_exclusive(path: Path, mode: int) -> int:
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, mode)
    except OSError as exc:
        raise store_write_error(
            f"cannot create {path}: {describe_os_error(exc)}", path, exc
        ) from exc


def _unreadable(source: object, exc: OSError) -> InputMissingError | FileUnreadableError:
    """A source that is gone is exit 2, one that cannot be read (permissions, an I/O
    error) exit 3, as for every command's input (docs/format.md, exit codes)."""
    if isinstance(exc, FileNotFoundError):
        return InputMissingError(f"{source} does not exist")
    return FileUnreadableError(f"{source} cannot be read: {describe_os_error(exc)}")


def _write_all(fd: int, data: bytes, path: Path) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise store_write_error(
            f"writing {path} failed: {describe_os_error(exc)}", path, exc
        ) from exc


def _copy_fd(src_fd: int, dest: Path, mode: int, budget: int, what: str) -> int:
    """Copy an open regular file to a new ``dest``; return the bytes copied."""
    fd = _create_exclusive(dest, mode)
    copied = 0
    try:
        while True:
            try:
                chunk = os.read(src_fd, _CHUNK)
            except OSError as exc:
                raise FileUnreadableError(
                    f"reading {what} failed: {describe_os_error(exc)}"
                ) from exc
            if not chunk:
                return copied
            copied += len(chunk)
            if copied > budget:
                raise ArchiveRefusedError(
                    f"{what}: the source is larger than the import limit; nothing was imported"
                )
            _write_all(fd, chunk, dest)
    finally:
        os.close(fd)


def copy_file(source: Path, dest: Path, *, limits: ImportLimits = DEFAULT_LIMITS) -> None:
    """Copy one regular file (the user named it: a final symlink is followed).

    Raises:
        InputError: not a regular file.
        InputMissingError, FileUnreadableError: it is gone or cannot be read (exit 2, 3).
        ArchiveRefusedError: larger than ``limits.max_total_bytes``.
        StoreError: writing ``dest`` failed.
    """
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | _O_CLOEXEC)
    except OSError as exc:
        raise _unreadable(source, exc) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{source} is not a regular file")
        mode = file_mode(bool(info.st_mode & 0o100))
        _copy_fd(fd, dest, mode, limits.max_total_bytes, str(source))
    finally:
        os.close(fd)


def copy_folder(
    source: Path,
    dest: Path,
    *,
    limits: ImportLimits = DEFAULT_LIMITS,
    skip: Path | None = None,
) -> list[str]:
    """Copy the folder ``source`` into the empty folder ``dest``; return notes.

    Every folder is opened with ``O_NOFOLLOW`` and read through its descriptor, so a
    link swapped in during the copy is never followed; symlinks and special files are
    skipped with a note. The folder ``skip`` (the extension repository, which holds
    ``dest``), if it is inside ``source``, is left out with a note: copying it would
    copy the copy being made.

    Raises:
        InputError: a file name that is not UTF-8.
        InputMissingError, FileUnreadableError: it is gone or cannot be read (exit 2, 3).
        ArchiveRefusedError: more entries or bytes than the limits, or a path inside
            the folder longer than :data:`MAX_PATH_BYTES`.
        StoreError: writing ``dest`` failed.
    """
    try:
        root_fd = os.open(source, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    except OSError as exc:
        raise _unreadable(source, exc) from exc
    state = _CopyState(limits=limits, label=str(source), root_fd=root_fd)
    if skip is not None:
        with contextlib.suppress(OSError):
            info = os.stat(skip)
            state.skip = (info.st_dev, info.st_ino)
    try:
        _copy_tree(root_fd, dest, "", state)
    finally:
        os.close(root_fd)
    return state.notes


@dataclass
class _CopyState:
    limits: ImportLimits
    label: str
    root_fd: int = -1
    entries: int = 0
    total: int = 0
    skip: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        self.notes: list[str] = []

    def count(self) -> None:
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise ArchiveRefusedError(
                f"{self.label}: more than {self.limits.max_entries} files and folders; "
                "nothing was imported"
            )


def _listdir_fd(dir_fd: int, label: str) -> Iterator[str]:
    try:
        names = sorted(os.listdir(dir_fd))
    except OSError as exc:
        raise InputError(f"{label} cannot be listed: {describe_os_error(exc)}") from exc
    for name in names:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError as exc:
            shown = name.encode("utf-8", "surrogateescape")
            raise InputError(f"{label}: the file name {shown!r} is not UTF-8") from exc
        yield name


def _copy_tree(dir_fd: int, dest: Path, prefix: str, state: _CopyState) -> None:
    for name in _listdir_fd(dir_fd, f"{state.label}/{prefix}".rstrip("/")):
        relative = prefix + name
        state.count()
        if len(relative.encode("utf-8")) > MAX_PATH_BYTES:
            raise ArchiveRefusedError(
                f"{state.label}: {_short(relative)} has a path longer than {MAX_PATH_BYTES} "
                "bytes inside the folder; nothing was imported"
            )
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            raise InputError(f"{state.label}/{relative} cannot be read: {exc.strerror}") from exc
        if stat.S_ISLNK(info.st_mode):
            state.notes.append(_copy_link(dir_fd, name, dest / name, relative, state))
            continue
        if stat.S_ISDIR(info.st_mode):
            if (info.st_dev, info.st_ino) == state.skip:
                state.notes.append(f"{relative}: the extension repository itself skipped")
                continue
            child_fd = _open_child(dir_fd, name, _O_DIRECTORY, state, relative)
            if child_fd is None:
                continue
            try:
                _mkdir_nofollow(dest / name)
                _copy_tree(child_fd, dest / name, relative + "/", state)
            finally:
                os.close(child_fd)
            continue
        if not stat.S_ISREG(info.st_mode):
            state.notes.append(f"{relative}: special file skipped")
            continue
        file_fd = _open_child(dir_fd, name, os.O_NONBLOCK, state, relative)
        if file_fd is None:
            continue
        try:
            current = os.fstat(file_fd)
            if not stat.S_ISREG(current.st_mode):
                state.notes.append(f"{relative}: special file skipped")
                continue
            mode = file_mode(bool(current.st_mode & 0o100))
            budget = state.limits.max_total_bytes - state.total
            state.total += _copy_fd(file_fd, dest / name, mode, budget, f"{state.label}/{relative}")
        finally:
            os.close(file_fd)


_NOFOLLOW_READ: Final = os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC


def _copy_link(dir_fd: int, name: str, dest: Path, relative: str, state: _CopyState) -> str:
    """Copy the file a link of the folder names, when it is a file of the folder; the
    note that says what became of the link.

    The target is walked from the folder's own descriptor one component at a time,
    each opened with ``O_NOFOLLOW`` (``..`` going back to the folder before), so no
    link is ever followed: a target that is absolute, goes above the folder, passes
    through another link, or is a folder, a special file or nothing is skipped.
    """
    skipped = f"{relative}: symbolic link skipped (agc never follows links"
    try:
        target = os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return skipped + ")"
    parts = _target_parts(target)
    if parts is None:
        return skipped + " out of the folder)"
    chain = [os.dup(state.root_fd)]
    try:
        for part in relative.split("/")[:-1]:
            chain.append(os.open(part, _NOFOLLOW_READ | _O_DIRECTORY, dir_fd=chain[-1]))
        for index, part in enumerate(parts):
            if part == "..":
                if len(chain) == 1:
                    return skipped + " out of the folder)"
                os.close(chain.pop())
                continue
            last = index == len(parts) - 1
            flags = _NOFOLLOW_READ | (os.O_NONBLOCK if last else _O_DIRECTORY)
            chain.append(os.open(part, flags, dir_fd=chain[-1]))
            info = os.fstat(chain[-1])
            if (info.st_dev, info.st_ino) == state.skip:
                return skipped + " into the extension repository)"
        if len(chain) == 1 or not stat.S_ISREG(os.fstat(chain[-1]).st_mode):
            return skipped + "; it names a folder or a special file)"
        mode = file_mode(bool(os.fstat(chain[-1]).st_mode & 0o100))
        budget = state.limits.max_total_bytes - state.total
        state.total += _copy_fd(chain[-1], dest, mode, budget, f"{state.label}/{relative}")
    except OSError:
        # ELOOP (another link on the way), ENOENT, ENOTDIR: it leads nowhere we read.
        return skipped + "; it leads to nothing of the folder without another link)"
    finally:
        for fd in chain:
            os.close(fd)
    return f"{relative}: symbolic link kept as a copy of the file it names inside the folder"


def _open_child(dir_fd: int, name: str, flags: int, state: _CopyState, relative: str) -> int | None:
    try:
        return os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in {errno.ELOOP, errno.ENOTDIR}:
            state.notes.append(f"{relative}: replaced by a link during the copy; skipped")
            return None
        raise InputError(f"{state.label}/{relative} cannot be read: {exc.strerror}") from exc
