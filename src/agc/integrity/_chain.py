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

One link step for every store. :func:`link_run` links a closed run in turns at the
store's chain (:meth:`~agc._core.storage.Store.chain_turn`): read the last link, build
the manifest with its link, append the link and move the head only if no one moved it
meanwhile, else start again from the new head. What a store's writers write around the
append is a :class:`LinkSide`: a store folder (here) keeps an intent and writes the
manifest before the link; a store written object by object
(:mod:`agc.integrity._upload`) publishes the manifest after its head's swap.

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
import hashlib
import json
import mmap
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Final, Protocol

from agc._core.canonical import canonical_json
from agc._core.folderstore import FolderStore, open_chain_log
from agc._core.fs import (
    MACHINE_ERRNOS,
    atomic_write_bytes,
    iter_bounded_lines,
    last_line_end,
    open_regular_file,
    read_small_file,
    remove_stale_temp_files,
    write_error,
)
from agc._core.json import JsonInvalidError, loads, loads_lines
from agc._core.record import FrozenRecord, record
from agc._core.storage import ChainTurn, PreconditionFailed, Retention, Store
from agc._core.store import (
    CHAIN,
    CHAIN_HEAD,
    CHAIN_LOG,
    CHAIN_PENDING,
    CHAIN_QUARANTINE,
    StoreLayout,
    is_run_id,
)
from agc.errors import (
    AgcError,
    FileExistsRefusedError,
    StoreError,
    UnsafePathError,
)
from agc.integrity._manifest import RunManifest

__all__ = [
    "ChainEntry",
    "ChainHead",
    "ChainHeal",
    "LinkSide",
    "Tip",
    "append_link",
    "chain_head_path",
    "chain_log_path",
    "chain_pending_path",
    "chain_turn",
    "heal_chain",
    "link_closed_manifest",
    "link_run",
    "manifest_digest",
    "read_chain",
    "read_head",
    "run_links",
    "write_head",
]

_MAX_HEAD_BYTES: Final = 4096
_MAX_LINK_BYTES: Final = 4096
_LINK_ATTEMPTS: Final = 200
_FIRST_DELAY_S: Final = 0.02
_MAX_DELAY_S: Final = 1.0


def chain_log_path(layout: StoreLayout) -> Path:
    return layout.path(CHAIN_LOG)


def chain_head_path(layout: StoreLayout) -> Path:
    return layout.path(CHAIN_HEAD)


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


@record
class ChainEntry(FrozenRecord):
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


@record
class ChainHead(FrozenRecord):
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
        and is_run_id(run_id)
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


def append_link(
    turn: ChainTurn,
    entry: ChainEntry,
    head: bytes,
    *,
    etag: str | None,
    retention: Retention | None = None,
    legal_hold: bool = False,
) -> str:
    """Append ``entry``'s link and move the head to ``head`` in the store's turn at the
    chain (:meth:`~agc._core.storage.ChainTurn.append`), only if the head is still
    ``etag``. Returns the head's new ETag.

    Raises:
        PreconditionFailed: another writer moved the head first; nothing was written.
        FileWriteError: the disk is full (or read-only …); the chain log is as it was,
            and ``agc recover`` adds the link once the disk can be written again.
        StoreError: the store cannot be written.
    """
    return turn.append(
        entry.position,
        _link_line(entry),
        head,
        etag=etag,
        retention=retention,
        legal_hold=legal_hold,
    )


def _link_line(entry: ChainEntry) -> bytes:
    """The bytes :func:`append_link` writes for ``entry``: compact JSON and a newline."""
    return json.dumps(entry.to_dict(), separators=(",", ":")).encode() + b"\n"


def _head_bytes(entry: ChainEntry) -> bytes:
    """A store folder's ``audit/chain-head.json`` naming ``entry``."""
    head = {"position": entry.position, "digest": entry.manifest_digest, "run_id": entry.run_id}
    return json.dumps(head).encode() + b"\n"


def write_head(layout: StoreLayout, entry: ChainEntry) -> None:
    """Replace ``audit/chain-head.json`` so it names ``entry`` (under the chain lock)."""
    atomic_write_bytes(chain_head_path(layout), _head_bytes(entry), overwrite=True)


def _head_etag(layout: StoreLayout) -> str | None:
    """The ETag of a store folder's head as its store names it (``None``: no head).

    Raises:
        UnsafePathError: the head is a symlink.
        StoreError: it is not a regular file, or cannot be read.
    """
    found = FolderStore(layout.root).get(CHAIN_HEAD, max_bytes=_MAX_HEAD_BYTES)
    return None if found is None else found[1].etag


@record
class ChainHeal(FrozenRecord):
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
    layout: StoreLayout, read_manifest: Callable[[str], RunManifest | None], turn: ChainTurn
) -> ChainHeal:
    """Complete or roll forward whatever a crash interrupted, in a turn at the chain.

    Args:
        layout: the store.
        read_manifest: returns a run's current manifest (``None`` if it has none).
        turn: the turn at the store's chain (:func:`chain_turn`) the caller holds.

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
                entry = ChainEntry(position, run_id, manifest_digest(manifest), prev)
                append_link(turn, entry, _head_bytes(entry), etag=_head_etag(layout))
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


def chain_turn(layout: StoreLayout) -> contextlib.AbstractContextManager[ChainTurn]:
    """A turn at the chain of the store folder ``layout`` (its exclusive chain lock).

    Raises:
        FileWriteError: the lock file cannot be created.
    """
    return FolderStore(layout.root).chain_turn(CHAIN)


@record
class Tip(FrozenRecord):
    """What a turn at the chain found: the last link, the head's ETag, and the run's
    manifest if the chain had linked the run already (then nothing is appended)."""

    head: ChainHead
    etag: str | None
    linked: RunManifest | None = None


class LinkSide(Protocol):
    """What a store's writers do around the append itself (:func:`link_run`): a store
    folder written in place keeps an intent and writes the manifest before the link; a
    store written object by object publishes the manifest after its head moved."""

    def tip(self, turn: ChainTurn) -> Tip:
        """Heal what a crash left and read the chain's last link, in ``turn``.

        Raises:
            PreconditionFailed: another writer moved the head meanwhile (read again).
            StoreError: the chain is damaged in a way no crash produces.
        """

    def head(self, entry: ChainEntry, manifest: RunManifest) -> bytes:
        """The head object naming ``entry``, the link of ``manifest``."""

    def before(self, entry: ChainEntry, manifest: RunManifest) -> None:
        """What is written before the link is appended."""

    def after(self, entry: ChainEntry, manifest: RunManifest) -> None:
        """What is written once the link is appended and the head moved."""


def link_run(
    store: Store,
    side: LinkSide,
    build: Callable[[dict[str, Any]], RunManifest],
    *,
    retention: Retention | None = None,
    legal_hold: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[RunManifest, bool]:
    """Link a closed run into the store chain: the one append step of every store.

    Each try is one turn at the chain (:meth:`~agc._core.storage.Store.chain_turn`):
    ``side`` heals and reads the last link; ``build`` makes the run's manifest with
    ``chain: {position: last + 1, prev: last link's digest}`` (signed, if it is); the
    side writes what precedes the link; the store appends the link and moves the head
    if no one moved it since it was read (``retention``, ``legal_hold``: asked of a link
    object); the side writes what follows. A try whose head was moved meanwhile backs
    off a random while, at most twice as long each time (capped), and starts again from
    the new head: of writers that read one head, one appends, none is lost, and
    positions stay contiguous.

    Returns the manifest linked and whether this call linked it (False: the chain had
    linked the run already, by an earlier try of the same write).

    Raises:
        StoreError: the chain cannot be healed or written, or its head changed on every
            one of many tries.
    """
    delay = _FIRST_DELAY_S
    for _ in range(_LINK_ATTEMPTS):
        try:
            with store.chain_turn(CHAIN) as turn:
                tip = side.tip(turn)
                if tip.linked is not None:
                    return tip.linked, False
                position, prev = tip.head.position + 1, tip.head.digest
                manifest = build({"position": position, "prev": prev})
                entry = ChainEntry(position, manifest.run_id, manifest_digest(manifest), prev)
                side.before(entry, manifest)
                append_link(
                    turn,
                    entry,
                    side.head(entry, manifest),
                    etag=tip.etag,
                    retention=retention,
                    legal_hold=legal_hold,
                )
                side.after(entry, manifest)
                return manifest, True
        except PreconditionFailed:
            # Someone appended first: back off a random while (no lock step), then retry.
            import random  # noqa: PLC0415 - only when two appenders meet; not the verifier's

            sleep(random.uniform(0, delay))
            delay = min(delay * 2, _MAX_DELAY_S)
    raise StoreError(
        f"could not link the run into the chain of {store.url}: the head changed on each of "
        f"{_LINK_ATTEMPTS} tries",
        hint="Try again; many hosts are sealing at once.",
    )


class _InPlace:
    """The side of a store folder: the intent ``audit/chain-pending.json`` and the
    run's manifest are written before the link, the intent removed after it (the module
    docstring gives the crash analysis). A plain class: ``agc-verify`` imports this
    module and a dataclass costs a compile at every start."""

    __slots__ = ("layout", "read_manifest", "run_id")

    def __init__(
        self, layout: StoreLayout, run_id: str, read_manifest: Callable[[str], RunManifest | None]
    ) -> None:
        self.layout = layout
        self.run_id = run_id
        self.read_manifest = read_manifest

    def tip(self, turn: ChainTurn) -> Tip:
        heal = heal_chain(self.layout, self.read_manifest, turn)
        if heal.linked == self.run_id:
            # An earlier try of this very link was completed from its intent.
            return Tip(heal.tip, None, linked=self.read_manifest(self.run_id))
        _refuse_odd_pending(self.layout)
        return Tip(heal.tip, _head_etag(self.layout))

    def head(self, entry: ChainEntry, manifest: RunManifest) -> bytes:  # noqa: ARG002
        return _head_bytes(entry)

    def before(self, entry: ChainEntry, manifest: RunManifest) -> None:
        pending = {"run_id": entry.run_id, "position": entry.position, "prev": entry.prev}
        atomic_write_bytes(
            chain_pending_path(self.layout), json.dumps(pending).encode() + b"\n", overwrite=True
        )
        atomic_write_bytes(
            self.layout.manifest_path(entry.run_id), manifest.to_bytes(), overwrite=True
        )

    def after(self, entry: ChainEntry, manifest: RunManifest) -> None:  # noqa: ARG002
        os.unlink(chain_pending_path(self.layout))


def link_closed_manifest(
    layout: StoreLayout,
    run_id: str,
    sign: Callable[[dict[str, Any]], RunManifest],
    read_manifest: Callable[[str], RunManifest | None],
) -> RunManifest:
    """Link a run whose manifest just became closed; call under the run's manifest lock.

    In a turn at the chain (the chain lock): heals the chain, records the intent, writes
    the manifest ``sign`` made with the given ``chain`` member, appends the link, moves
    the head and clears the intent (:func:`link_run`; the module docstring gives the
    crash analysis).

    Raises:
        StoreError: the chain cannot be healed or written.
    """
    store = FolderStore(layout.root)
    manifest, _ = link_run(store, _InPlace(layout, run_id, read_manifest), sign)
    return manifest


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
        fd = open_chain_log(path, os.O_RDWR)
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
        fd = open_chain_log(path, os.O_RDONLY)
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
        and is_run_id(run_id)
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
