"""The store-wide chain: every closed run manifest links to the one closed before it.

When a run's manifest becomes closed (all artifacts sealed), it gets
``"chain": {"position": n, "prev": <digest of the previous closed manifest>}`` and,
under the store's chain lock, one line is appended to ``audit/chain.jsonl``::

    {"position": n, "run_id": "...", "manifest_digest": "<sha256 hex>", "prev": "<hex>"|null}

and ``audit/chain-head.json`` is replaced with ``{"position": n, "digest": "<hex>",
"run_id": "..."}``. A deleted run, a reordered or replaced manifest, or a store rolled
back behind a head pinned from outside (``agc-verify --all --expect-head``) is then
detectable, as a transparency-log client detects a fork from a pinned checkpoint.

The manifest digest is the SHA-256 of the manifest's RFC 8785 canonical JSON, signature
included.

Crash safety. ``audit/chain.jsonl`` is the record; the head is derived from its last
link. Linking a run is five steps under the chain lock: (1) write the intent
``audit/chain-pending.json`` ``{"run_id", "position", "prev"}``, (2) write the run's
manifest with its ``chain`` member, (3) append the link (one ``write`` of one whole
line, fsync), (4) replace the head, (5) remove the intent. A process killed between any
two of them leaves a state that :func:`heal_chain` completes the next time anyone takes
the chain lock (the next seal, ``agc recover``): a last link that lacks only its newline
gets it, any other torn last line is moved to ``audit/chain.jsonl.quarantine`` and cut
off, an intent whose manifest was written is linked, a stale head is rewritten from the
last link, and leftover temporary files in ``audit/`` are removed. A head *ahead* of the
log, or naming another digest than the link at its position, cannot come from a crash:
it is refused, never healed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import mmap
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

from agc._core.canonical import canonical_json
from agc._core.fs import (
    MACHINE_ERRNOS,
    append_whole,
    atomic_write_bytes,
    exclusive_lock,
    iter_bounded_lines,
    last_line_end,
    open_nofollow,
    open_regular_file,
    read_small_file,
    remove_stale_temp_files,
    write_error,
)
from agc._core.json import JsonInvalidError, loads, loads_lines
from agc._core.store import (
    CHAIN_HEAD,
    CHAIN_LOCK,
    CHAIN_LOG,
    CHAIN_PENDING,
    CHAIN_QUARANTINE,
    StoreLayout,
    validate_run_id,
)
from agc.errors import (
    AgcError,
    FileExistsRefusedError,
    RunIdInvalidError,
    StoreError,
    UnsafePathError,
)
from agc.integrity._manifest import RunManifest

__all__ = [
    "ChainEntry",
    "ChainHead",
    "ChainHeal",
    "append_link",
    "chain_head_path",
    "chain_lock_path",
    "chain_log_path",
    "chain_pending_path",
    "heal_chain",
    "link_closed_manifest",
    "manifest_digest",
    "read_chain",
    "read_head",
    "run_links",
    "write_head",
]

_MAX_HEAD_BYTES: Final = 4096
_MAX_LINK_BYTES: Final = 4096


def chain_log_path(layout: StoreLayout) -> Path:
    return layout.path(CHAIN_LOG)


def chain_head_path(layout: StoreLayout) -> Path:
    return layout.path(CHAIN_HEAD)


def chain_lock_path(layout: StoreLayout) -> Path:
    return layout.path(CHAIN_LOCK)


def chain_pending_path(layout: StoreLayout) -> Path:
    """``audit/chain-pending.json``: the link being made (exists only during a seal)."""
    return layout.path(CHAIN_PENDING)


def chain_quarantine_path(layout: StoreLayout) -> Path:
    """Where a torn last line of ``audit/chain.jsonl`` is kept (``-2``, ``-3`` … after)."""
    return layout.path(CHAIN_QUARANTINE)


def manifest_digest(manifest: RunManifest | Mapping[str, Any]) -> str:
    """SHA-256 hex of the manifest's RFC 8785 canonical JSON (signature included)."""
    if isinstance(manifest, RunManifest):
        return manifest.digest
    return hashlib.sha256(canonical_json(manifest)).hexdigest()


@dataclass(frozen=True)
class ChainEntry:
    """One link of the chain: the ``position``-th closed manifest of the store."""

    position: int
    run_id: str
    manifest_digest: str
    prev: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "run_id": self.run_id,
            "manifest_digest": self.manifest_digest,
            "prev": self.prev,
        }


@dataclass(frozen=True)
class ChainHead:
    """The head of the chain: the last link's position and manifest digest."""

    position: int
    digest: str | None
    run_id: str | None = None


def read_head(layout: StoreLayout) -> ChainHead | None:
    """The stored head, ``ChainHead(0, None)`` for a store with no chain yet, or
    ``None`` when the head file exists but is damaged."""
    try:
        data = read_small_file(chain_head_path(layout), max_bytes=_MAX_HEAD_BYTES)
    except FileNotFoundError:
        return ChainHead(position=0, digest=None)
    except (UnsafePathError, StoreError):
        return None  # a symlink, folder or FIFO in its place, or far too large
    try:
        raw = loads(data)  # strict: a head with a duplicate member is damaged
        position, digest = raw["position"], raw["digest"]
        if not isinstance(position, int) or not isinstance(digest, str | None):
            return None
        return ChainHead(position=position, digest=digest, run_id=raw.get("run_id"))
    except (JsonInvalidError, KeyError, TypeError):
        return None


def read_chain(layout: StoreLayout) -> tuple[list[ChainEntry], int]:
    """All links in ``audit/chain.jsonl`` and the number of unusable lines (not strict
    JSON, e.g. a duplicate member, a field of the wrong type, or longer than a link can
    be: ``_MAX_LINK_BYTES``).

    The log is streamed line by line, so memory grows with the number of links, never
    with the file's size (a padded or sparse log costs no more than its links).

    Raises:
        UnsafePathError: the log is a symlink or not a regular file (a folder, a FIFO).
        StoreError: it cannot be read.
    """
    path = chain_log_path(layout)
    handle = _open_chain_log(path)
    if handle is None:
        return [], 0
    too_long = 0

    def bounded() -> Iterator[bytes]:
        nonlocal too_long
        for line in iter_bounded_lines(handle, max_line_bytes=_MAX_LINK_BYTES):
            if line is None:
                too_long += 1
            else:
                yield line

    with handle:
        try:
            entries, unusable = loads_lines(bounded(), _entry)
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    return entries, unusable + too_long


def _open_chain_log(path: Path) -> BinaryIO | None:
    """``audit/chain.jsonl`` opened for reading, or ``None`` when there is none.

    Raises:
        UnsafePathError: it is a symlink or not a regular file (a folder, a FIFO).
        StoreError: it cannot be opened.
    """
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise UnsafePathError(f"{path} is a symlink or not a regular file")
        return open_regular_file(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc


def run_links(layout: StoreLayout, run_id: str) -> tuple[ChainEntry, ...]:
    """Every link of ``run_id`` in ``audit/chain.jsonl``, in log order.

    The log is mapped into memory (:mod:`mmap`: the page cache, not a copy) and searched,
    and only the lines that can name the run are parsed: those that hold ``"<run_id>"``
    literally or a backslash. The filter is exact, never a guess: a JSON string equal
    to ``run_id`` is spelled ``"<run_id>"`` byte for byte unless it uses an escape,
    which needs a backslash (RFC 8259, section 7). Lines are taken as :func:`read_chain`
    takes them (a line longer than a link can be is no link), so both find the same
    links. Time grows with the log's size at the speed of a byte search.

    Raises:
        UnsafePathError: the log is a symlink or not a regular file.
        StoreError: it cannot be read.
    """
    path = chain_log_path(layout)
    handle = _open_chain_log(path)
    if handle is None:
        return ()
    with handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                return ()
            with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as log:
                return _links_in(log, run_id)
        except (OSError, ValueError) as exc:  # ValueError: it shrank to nothing meanwhile
            raise StoreError(f"cannot read {path}: {exc}") from exc


def _links_in(log: mmap.mmap, run_id: str) -> tuple[ChainEntry, ...]:
    """The links of ``run_id`` among the lines of ``log`` (see :func:`run_links`)."""
    starts: set[int] = set()
    for marker in (b'"' + run_id.encode() + b'"', b"\\"):
        index = log.find(marker)
        while index >= 0:
            starts.add(log.rfind(b"\n", 0, index) + 1)
            stop = log.find(b"\n", index)
            if stop < 0:
                break
            index = log.find(marker, stop)
    found: list[ChainEntry] = []
    for start in sorted(starts):
        stop = log.find(b"\n", start)
        stop = len(log) if stop < 0 else stop
        if stop - start > _MAX_LINK_BYTES:
            continue
        entry = _parse_link(log[start:stop])
        if entry is not None and entry.run_id == run_id:
            found.append(entry)
    return tuple(found)


def _entry(raw: Any) -> ChainEntry:
    """One chain line as a link; a field of the wrong type is refused, never coerced."""
    position, run_id, digest, prev = (
        raw["position"],
        raw["run_id"],
        raw["manifest_digest"],
        raw["prev"],
    )
    if not (
        isinstance(position, int)
        and not isinstance(position, bool)
        and isinstance(run_id, str)
        and _is_run_id(run_id)
        and isinstance(digest, str)
        and (prev is None or isinstance(prev, str))
    ):
        raise TypeError("a chain link field has the wrong type")
    return ChainEntry(position=position, run_id=run_id, manifest_digest=digest, prev=prev)


def _parse_link(line: bytes) -> ChainEntry | None:
    """One line of the log as a link, or ``None`` if it is not one (never coerced)."""
    try:
        return _entry(loads(line))
    except (ValueError, KeyError, TypeError):  # JsonInvalidError is a ValueError
        return None


def _is_run_id(run_id: str) -> bool:
    try:
        validate_run_id(run_id)
    except RunIdInvalidError:
        return False  # agc never links such a run; it would also reach messages raw
    return True


def append_link(layout: StoreLayout, manifest: RunManifest) -> ChainEntry:
    """Append the link for a closed, already written manifest and move the head.

    Must be called under the chain lock, after ``manifest`` (with its ``chain`` member
    set from :func:`read_head`) has been written.

    Raises:
        FileWriteError: the disk is full (or read-only …); the chain log is as it was,
            and ``agc recover`` adds the link once the disk can be written again.
    """
    assert manifest.chain is not None
    entry = ChainEntry(
        position=int(manifest.chain["position"]),
        run_id=manifest.run_id,
        manifest_digest=manifest_digest(manifest),
        prev=manifest.chain.get("prev"),
    )
    line = _link_line(entry)
    path = chain_log_path(layout)
    fd = _open_log(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        # Whole or not at all: a full disk never leaves half a link to glue the next to.
        append_whole(fd, line, path=path)
    finally:
        os.close(fd)
    write_head(layout, entry)
    return entry


def _link_line(entry: ChainEntry) -> bytes:
    """The bytes :func:`append_link` writes for ``entry``: compact JSON and a newline."""
    return json.dumps(entry.to_dict(), separators=(",", ":")).encode() + b"\n"


def write_head(layout: StoreLayout, entry: ChainEntry) -> None:
    """Replace ``audit/chain-head.json`` so it names ``entry`` (under the chain lock)."""
    head = {"position": entry.position, "digest": entry.manifest_digest, "run_id": entry.run_id}
    atomic_write_bytes(chain_head_path(layout), json.dumps(head).encode() + b"\n", overwrite=True)


@dataclass(frozen=True)
class ChainHeal:
    """What :func:`heal_chain` found and did, and the chain's tip afterwards.

    Attributes:
        tip: the last link after healing (``ChainHead(0, None)`` for an empty chain).
        quarantined_bytes: bytes of a torn last line moved to the quarantine file.
        linked: run id whose interrupted link was completed, if any.
        head_repaired: the head file was missing, stale or damaged and was rewritten.
        removed_temp_files: leftover temporary files removed from ``audit/``.
        newline_added: the last link lacked only its newline, which was added.
    """

    tip: ChainHead
    quarantined_bytes: int = 0
    linked: str | None = None
    head_repaired: bool = False
    removed_temp_files: tuple[str, ...] = ()
    newline_added: bool = False

    @property
    def changed(self) -> bool:
        return bool(
            self.quarantined_bytes
            or self.linked
            or self.head_repaired
            or self.removed_temp_files
            or self.newline_added
        )


def heal_chain(
    layout: StoreLayout, read_manifest: Callable[[str], RunManifest | None]
) -> ChainHeal:
    """Complete or roll forward whatever a crash interrupted; call under the chain lock.

    Args:
        layout: the store.
        read_manifest: returns a run's current manifest (``None`` if it has none).

    Raises:
        StoreError: the chain is damaged in a way no crash produces (an unusable last
            line, a head ahead of the log or naming another link): nothing can be
            linked until ``agc-verify --all`` has been read and the store repaired.
    """
    audit = layout.audit_dir
    removed = tuple(remove_stale_temp_files(audit)) if audit.is_dir() else ()
    quarantined, completed = _cut_torn_line(layout)
    tip = _last_link(layout)
    linked = None
    pending = _read_pending(layout)
    if pending is not None:
        run_id, position, prev = pending
        if position == tip.position + 1 and prev == tip.digest:
            try:
                manifest = read_manifest(run_id)
            except AgcError:
                manifest = None  # damaged: the run's own report says so
            if (
                manifest is not None
                and manifest.closed
                and manifest.chain == {"position": position, "prev": prev}
            ):
                entry = append_link(layout, manifest)
                tip = ChainHead(entry.position, entry.manifest_digest, entry.run_id)
                linked = run_id
        with contextlib.suppress(FileNotFoundError):
            os.unlink(chain_pending_path(layout))
    head = read_head(layout)
    head_repaired = False
    if head is None or (head.position, head.digest, head.run_id) != (
        tip.position,
        tip.digest,
        tip.run_id,
    ):
        _refuse_impossible_head(layout, head, tip)
        if tip.digest is not None:
            write_head(layout, ChainEntry(tip.position, tip.run_id or "", tip.digest, None))
        head_repaired = True
    return ChainHeal(tip, quarantined, linked, head_repaired, removed, completed)


def link_closed_manifest(
    layout: StoreLayout,
    run_id: str,
    sign_and_write: Callable[[dict[str, Any]], RunManifest],
    read_manifest: Callable[[str], RunManifest | None],
) -> RunManifest:
    """Link a run whose manifest just became closed; call under the run's manifest lock.

    Takes the chain lock, heals the chain, records the intent, lets ``sign_and_write``
    write the manifest with the given ``chain`` member, appends the link, moves the head
    and clears the intent (the module docstring gives the crash analysis).

    Raises:
        StoreError: the chain cannot be healed or written.
    """
    with exclusive_lock(chain_lock_path(layout), blocking=True, what="store chain"):
        tip = heal_chain(layout, read_manifest).tip
        _refuse_odd_pending(layout)
        link: dict[str, Any] = {"position": tip.position + 1, "prev": tip.digest}
        pending = {"run_id": run_id, **link}
        atomic_write_bytes(
            chain_pending_path(layout), json.dumps(pending).encode() + b"\n", overwrite=True
        )
        manifest = sign_and_write(link)
        append_link(layout, manifest)
        os.unlink(chain_pending_path(layout))
    return manifest


def _open_log(path: Path, flags: int) -> int:
    """Open the chain log (``O_NONBLOCK``: a FIFO in its place is never waited on).

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


def _cut_torn_line(layout: StoreLayout) -> tuple[int, bool]:
    """Heal an append cut short: ``(bytes quarantined, newline added)``.

    A last line that is a whole link and lacks only its ``\n`` (the write stopped one
    byte short) is completed with the newline: every proper prefix of a link line ends
    before its closing ``}``, so it is never whole JSON. The line must be exactly what
    :func:`append_link` writes, byte for byte: a link with other spacing, a trailing
    space or a carriage return is no torn write. Any other bytes after the last newline
    are moved to the quarantine file and cut off.
    """
    path = chain_log_path(layout)
    try:
        fd = _open_log(path, os.O_RDWR)
    except FileNotFoundError:
        return 0, False
    try:
        size = os.fstat(fd).st_size
        boundary = last_line_end(fd, size)
        if boundary == size:
            return 0, False
        tail = os.pread(fd, min(size - boundary, _MAX_LINK_BYTES + 1), boundary)
        whole = _parse_link(tail) if size - boundary <= _MAX_LINK_BYTES else None
        if whole is not None and _link_line(whole) == tail + b"\n":
            try:
                os.pwrite(fd, b"\n", size)
                os.fsync(fd)
            except OSError as exc:
                if exc.errno in MACHINE_ERRNOS:
                    raise write_error(path, exc, doing="write") from exc
                raise StoreError(f"cannot write {path}: {exc.strerror}") from exc
            return 0, True
        tail = os.pread(fd, size - boundary, boundary)
        number = 1
        while True:
            target = chain_quarantine_path(layout)
            if number > 1:
                target = target.with_name(f"{target.name}-{number}")
            try:
                atomic_write_bytes(target, tail, overwrite=False)
                break
            except FileExistsRefusedError:
                number += 1
        os.ftruncate(fd, boundary)
        os.fsync(fd)
        return len(tail), False
    finally:
        os.close(fd)


def _last_link(layout: StoreLayout, *, before_torn_tail: bool = False) -> ChainHead:
    """The log's last link, read from the end (the log is never read whole here);
    ``before_torn_tail``: the last whole line's, ignoring bytes after the last newline
    (a link being appended when a crash stopped it)."""
    path = chain_log_path(layout)
    try:
        fd = _open_log(path, os.O_RDONLY)
    except FileNotFoundError:
        return ChainHead(position=0, digest=None)
    try:
        size = os.fstat(fd).st_size
        if before_torn_tail and size:
            size = last_line_end(fd, size)
        if size == 0:
            return ChainHead(position=0, digest=None)
        start = last_line_end(fd, size - 1)
        line = os.pread(fd, min(size - start, _MAX_LINK_BYTES + 1), start)
    finally:
        os.close(fd)
    entry = _parse_link(line.rstrip(b"\n")) if len(line) <= _MAX_LINK_BYTES else None
    if entry is None:
        raise StoreError(
            f"the last line of {path} is not a chain link; no run can be linked",
            hint="Run `agc-verify --all` to see the chain's state.",
        )
    return ChainHead(entry.position, entry.manifest_digest, entry.run_id)


def pending_intent_mode(layout: StoreLayout) -> int | None:
    """``st_mode`` of whatever stands at the chain intent's name (not followed);
    ``None`` when nothing does.

    Raises:
        StoreError: it cannot be looked at.
    """
    path = chain_pending_path(layout)
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc


def _refuse_odd_pending(layout: StoreLayout) -> None:
    """A folder or FIFO named like the intent cannot come from a crash (an intent is
    only ever written by rename): no run is linked until a person has looked."""
    path = chain_pending_path(layout)
    mode = pending_intent_mode(layout)
    if mode is None:
        return
    if not stat.S_ISREG(mode) and not stat.S_ISLNK(mode):  # a symlink: refused on write
        raise StoreError(
            f"{path} is not a regular file; no run can be linked",
            hint="Look at it with `agc-verify --all` and remove it.",
        )


def pending_link(layout: StoreLayout) -> tuple[str, int] | None:
    """The run id and position of the link being made (``audit/chain-pending.json``),
    ``None`` when there is none, it is unusable, or it is not one a crash leaves: an
    intent names the link right after the log's last whole link (its position plus
    one, that link's digest as ``prev``), as :func:`heal_chain` requires to complete
    it. A run the chain does not link is excused only by such an intent."""
    pending = _read_pending(layout)
    if pending is None:
        return None
    try:
        tip = _last_link(layout, before_torn_tail=True)
    except (StoreError, UnsafePathError, OSError):
        return None  # no usable last link: nothing can be completed after it
    run_id, position, prev = pending
    if position != tip.position + 1 or prev != tip.digest:
        return None
    return run_id, position


def _read_pending(layout: StoreLayout) -> tuple[str, int, str | None] | None:
    try:
        data = read_small_file(chain_pending_path(layout), max_bytes=_MAX_HEAD_BYTES)
    except FileNotFoundError:
        return None
    except (UnsafePathError, StoreError):
        return None  # not ours: ignored (and removed) like a damaged intent
    try:
        raw = loads(data)
        run_id, position, prev = raw["run_id"], raw["position"], raw["prev"]
    except (ValueError, KeyError, TypeError):
        return None
    if (
        isinstance(run_id, str)
        and _is_run_id(run_id)
        and isinstance(position, int)
        and not isinstance(position, bool)
        and (prev is None or isinstance(prev, str))
    ):
        return run_id, position, prev
    return None


def _refuse_impossible_head(layout: StoreLayout, head: ChainHead | None, tip: ChainHead) -> None:
    """A crash leaves the head behind the log, never ahead of it or off it."""
    if head is None or head.digest is None:
        return  # missing or damaged: rewritten from the log
    if head.position > tip.position:
        raise StoreError(
            f"the chain head of store {layout.root} is ahead of audit/chain.jsonl "
            f"(position {head.position} > {tip.position}): the log was cut; no run can "
            "be linked",
            hint="Run `agc-verify --all` to see the chain's state.",
        )
    entries, _ = read_chain(layout)
    at = next((e for e in entries if e.position == head.position), None)
    if at is None or at.manifest_digest != head.digest:
        raise StoreError(
            f"the chain head of store {layout.root} names a link that audit/chain.jsonl "
            "does not hold; no run can be linked",
            hint="Run `agc-verify --all` to see the chain's state.",
        )
