"""The store interface: what every evidence store (a folder, S3, memory) does.

A store holds objects at ``/``-separated paths inside it (``audit/transcripts/r1.jsonl``,
laid out by the one table in :mod:`agc._core.store`). Evidence is written once and never
replaced, so the interface is small: read an object (whole or streamed), list paths and
versions, create an object only where none exists, and replace one object only if it is
unchanged since it was read (compare-and-swap). What a backend does or does not keep
(object versions, Object Lock retention) is answered by the store itself
(:attr:`Store.versioned`, :meth:`Store.bucket_lock`), never guessed from its type by a
feature.

The semantics follow the S3 API, the most constrained backend (see "Add preconditions to
S3 operations with conditional requests" and "Using versioning in S3 buckets" in the S3
documentation):

* a missing path, or one whose current version is a delete marker, reads as ``None``;
* :meth:`Store.put_new` fails with :class:`PreconditionFailed` when the path exists
  (``If-None-Match: *``); :meth:`Store.put_swap` when its ETag changed (``If-Match``);
* a failure of the store (unreachable, refused, a file that cannot be read) is a
  :class:`~agc.errors.StoreError` (exit 3);
* a retention or legal hold asked of a store without Object Lock is refused
  (``StoreError``), never dropped silently.

The store-wide chain (one link per closed run, and a head naming the last) is appended
through :meth:`Store.chain_turn`, the one primitive whose mechanism differs by backend: a
folder holds an exclusive lock for the turn and appends the link to one log file before
it replaces the head; a store of objects holds no lock (S3 has none) and swaps the head
by compare-and-swap (``If-Match`` / ``If-None-Match: *``) before it creates the link
object. Either way, of two appenders that read the same head exactly one wins.

Implementations: :class:`agc._core.folderstore.FolderStore`,
:class:`agc._core.objstore.ObjectStore` (S3; the only module that imports boto3) and
:class:`agc._core.memstore.MemoryStore` (for tests). :func:`agc._core.store.open_store`
turns a ``--store`` value into one. ``tests/_core/test_store_contract.py`` holds every
implementation to this contract.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import BinaryIO, Final, Literal, TypeAlias

from agc._core.record import FrozenRecord, record
from agc.errors import StoreError, UsageError

__all__ = [
    "LOCK_MODES",
    "MAX_RETENTION_DAYS",
    "BucketLock",
    "ChainPaths",
    "ChainTurn",
    "ListedObject",
    "LockMode",
    "ObjectInfo",
    "ObjectVersion",
    "Opened",
    "PreconditionFailed",
    "Retention",
    "Store",
    "check_store_path",
    "is_store_path",
]

LockMode = Literal["COMPLIANCE", "GOVERNANCE"]
LOCK_MODES: Final[tuple[LockMode, ...]] = ("COMPLIANCE", "GOVERNANCE")
MAX_RETENTION_DAYS: Final = 36500
"""S3 accepts retention periods of up to 100 years."""


class PreconditionFailed(Exception):  # noqa: N818 - the S3 error's own name
    """A conditional write was refused: the key exists (``If-None-Match``) or its ETag
    changed (``If-Match``), or a concurrent conditional write to it is in progress."""

    def __init__(self, key: str, *, conflict: bool = False) -> None:
        super().__init__(key)
        self.key = key
        self.conflict = conflict


@record
class Retention(FrozenRecord):
    """An Object Lock retention: ``mode`` for ``days`` days from the upload.

    Raises:
        UsageError: an unknown mode, or days outside 1..36500.
    """

    mode: LockMode
    days: int

    def __post_init__(self) -> None:
        if self.mode not in LOCK_MODES:
            raise UsageError(f"retention mode {self.mode!r} is not one of {', '.join(LOCK_MODES)}")
        if not isinstance(self.days, int) or not 1 <= self.days <= MAX_RETENTION_DAYS:
            raise UsageError(f"retention days must be 1..{MAX_RETENTION_DAYS}, not {self.days!r}")

    def covers(self, other: Retention) -> bool:
        """True when this retention is at least as strong as ``other`` (a policy):
        as many days or more, and COMPLIANCE when the policy says COMPLIANCE."""
        return self.days >= other.days and (other.mode == "GOVERNANCE" or self.mode == "COMPLIANCE")


@record
class BucketLock(FrozenRecord):
    """The bucket's Object Lock configuration (``GetObjectLockConfiguration``).

    Attributes:
        enabled: Object Lock is enabled on the bucket.
        default: the bucket's default retention rule, if any (years given as 365 days).
    """

    enabled: bool
    default: Retention | None = None


@record
class ObjectVersion(FrozenRecord):
    """One entry of ``ListObjectVersions`` (or of an S3 Inventory report).

    ``last_modified`` is Unix time in milliseconds; ``version_id`` is ``"null"`` for an
    object written while versioning was off.
    """

    key: str
    version_id: str
    is_latest: bool
    is_delete_marker: bool
    last_modified_ms: int
    size: int = 0
    etag: str | None = None
    lock_mode: str | None = None
    retain_until_ms: int | None = None
    legal_hold: bool | None = None


@record
class ListedObject(FrozenRecord):
    """One current object as a listing names it (``ListObjectsV2``'s ``Contents``),
    without reading it.

    Attributes:
        path: its path inside the store.
        size: its length in bytes.
        last_modified_ms: when it was last written, Unix time in milliseconds.
    """

    path: str
    size: int
    last_modified_ms: int


@record
class ObjectInfo(FrozenRecord):
    """What a ``GetObject`` answered about the object besides its bytes.

    ``lock_mode``, ``retain_until_ms`` and ``legal_hold`` are ``None`` when the object has
    none (or the caller may not read them: ``s3:GetObjectRetention`` /
    ``s3:GetObjectLegalHold``).
    """

    key: str
    etag: str
    version_id: str | None
    size: int
    last_modified_ms: int
    lock_mode: str | None = None
    retain_until_ms: int | None = None
    legal_hold: bool | None = None


# A string, never evaluated: a subscript with a string would compile it at each import.
Opened: TypeAlias = "AbstractContextManager[tuple[Iterator[bytes], ObjectInfo] | None]"
"""What :meth:`Store.open` returns: a context manager giving ``None`` for a missing path,
else ``(chunks, info)``; the chunks are the body in order, in pieces of at most 1 MiB."""


def check_store_path(path: str) -> str:
    """Return ``path`` if it is a path inside a store, or a prefix of paths ending in
    ``/``: non-empty ``/``-separated segments, none of them ``.`` or ``..``, no NUL, not
    absolute.

    Paths come from the layout (:mod:`agc._core.store`), built from validated run ids;
    any other path is a bug in agc.

    Raises:
        ValueError: ``path`` is not such a path.
    """
    segments = path.removesuffix("/").split("/")
    if "\0" in path or any(part in {"", ".", ".."} for part in segments):
        raise ValueError(f"{path!r} is not a path inside a store")
    return path


def is_store_path(path: str) -> bool:
    """Whether ``path`` is a path inside a store (as :func:`check_store_path` accepts;
    ``""`` is not one): for names that come from a listing, not from the layout."""
    try:
        check_store_path(path)
    except ValueError:
        return False
    return True


@record
class ChainPaths(FrozenRecord):
    """Where a store keeps its chain (the layout table, :mod:`agc._core.store`, names
    the one instance).

    Attributes:
        head: the head object, the one object ever replaced.
        log: the log file a folder appends each link to, one line each.
        links: the folder of a store of objects, holding one link object per position.
        lock: a folder's lock file, held for a turn at the chain.
    """

    head: str
    log: str
    links: str
    lock: str

    def link(self, position: int) -> str:
        """``<links>/<position>.json``, the position zero-padded to 20 digits so that a
        listing returns the links in order."""
        return f"{self.links}/{position:020d}.json"


class ChainTurn(abc.ABC):
    """One writer's turn at a store's chain (:meth:`Store.chain_turn`)."""

    @abc.abstractmethod
    def append(
        self,
        position: int,
        link: bytes,
        head: bytes,
        *,
        etag: str | None,
        retention: Retention | None = None,
        legal_hold: bool = False,
    ) -> str:
        """Append ``link`` (one whole line: a JSON object and ``\n``) as the chain's
        ``position``-th link and replace the head with ``head``, only if the head's ETag
        is still ``etag`` (``None``: only if there is no head). Returns the new ETag.

        Of appenders that read the same head, exactly one succeeds. A writer stopped
        between the two writes leaves the log and the head one link apart, in an order
        the store fixes: a folder appends the link first (its head then lags the log by
        one link); a store of objects swaps the head first (its head then names a link
        object not yet created, so the head must carry what the link holds).
        ``retention`` and ``legal_hold`` are asked of the link object.

        Raises:
            PreconditionFailed: the head is no longer ``etag``; nothing was written.
            StoreError: a link object exists at ``position`` with other bytes (nothing
                more is written), a retention is asked of a store without Object Lock,
                or the store cannot be written (``FileWriteError`` for a full disk).
        """


class _SwapTurn(ChainTurn):
    """A turn at the chain of a store of objects: the head by compare-and-swap, then the
    link object, create-only (a link object already holding ``link`` is a retry)."""

    def __init__(self, store: Store, paths: ChainPaths) -> None:
        self._store, self._paths = store, paths

    def append(
        self,
        position: int,
        link: bytes,
        head: bytes,
        *,
        etag: str | None,
        retention: Retention | None = None,
        legal_hold: bool = False,
    ) -> str:
        store = self._store
        swapped = store.put_swap(self._paths.head, head, etag=etag)
        store.put_exact(
            self._paths.link(position), link, retention=retention, legal_hold=legal_hold
        )
        return swapped


class Store(abc.ABC):
    """An evidence store: objects at paths, written once (see the module docstring)."""

    @property
    def versioned(self) -> bool:
        """Whether the store can keep every version of an object (S3, where the bucket's
        versioning is on), so that :meth:`list_versions` shows a replaced or deleted
        object; a folder keeps only the current bytes."""
        return False

    @property
    def lockable(self) -> bool:
        """Whether the store's objects can carry Object Lock retention, so that a store
        without Object Lock is worth a finding: a store written object by object; a
        folder's files cannot carry one (:attr:`folder`)."""
        return self.folder is None

    @property
    @abc.abstractmethod
    def url(self) -> str:
        """The store's name for messages: a folder path, ``s3://bucket/prefix`` … (never
        a credential)."""

    @abc.abstractmethod
    def url_of(self, path: str) -> str:
        """The name of one object for messages."""

    @property
    def lock_scope(self) -> str:
        """What the store's Object Lock configuration belongs to, for messages (an S3
        bucket's name); the store's own name where it has no other."""
        return self.url

    def key(self, path: str) -> str:
        """The backend's key for ``path`` (as in :attr:`ObjectInfo.key`); the path itself
        where the backend has no prefix."""
        return path

    def relative(self, key: str) -> str:
        """The path inside the store of a key made by :meth:`key`."""
        return key

    @abc.abstractmethod
    def get(
        self, path: str, *, max_bytes: int, version_id: str | None = None
    ) -> tuple[bytes, ObjectInfo] | None:
        """Read a small object whole; ``None`` if it does not exist.

        Raises:
            StoreError: larger than ``max_bytes``, refused or unreadable.
        """

    @abc.abstractmethod
    def open(self, path: str, *, version_id: str | None = None) -> Opened:
        """Stream an object (memory stays flat whatever its size): see :data:`Opened`.

        Raises:
            StoreError: refused or unreadable (also while reading the body).
        """

    def stream(self, path: str) -> Opened:
        """Stream the current object for a reader that hashes its bytes itself: as
        :meth:`open`, but ``info.etag`` may be empty (a folder does not read its file
        once more to name it).

        Raises:
            UnsafePathError: a symlink stands at ``path`` (a store that can hold one).
            StoreError: refused or unreadable (also while reading the body).
        """
        return self.open(path)

    def odd_entry(self, path: str) -> Literal["symlink", "other"] | None:  # noqa: ARG002
        """What stands at ``path`` that is not an object, in a store that can hold such
        entries (a folder): ``"symlink"``, or ``"other"`` (a folder, a FIFO, a device);
        ``None`` for an object or nothing. A store of objects holds nothing else: always
        ``None``, with no request.

        Raises:
            StoreError: the store cannot be read.
        """
        return None

    def exists_at_all(self) -> bool:
        """Whether the store itself is there: a folder store's folder exists. A store of
        objects answers ``True`` (a bucket that is not there is a ``StoreError`` of its
        first request).

        Raises:
            StoreError: something else stands where the store should be (a file in place
                of the folder).
        """
        return True

    @abc.abstractmethod
    def exists(self, path: str) -> bool:
        """Whether ``path`` has a current version.

        Raises:
            StoreError: refused or unreachable.
        """

    @abc.abstractmethod
    def list_paths(self, path_prefix: str) -> Iterator[str]:
        """The paths of the current objects whose path begins with ``path_prefix``.

        Raises:
            StoreError: refused or unreachable.
        """

    @abc.abstractmethod
    def list_objects(self, path_prefix: str) -> Iterator[ListedObject]:
        """The current objects whose path begins with ``path_prefix``, in path order,
        with their sizes and modification times, as one listing gives them (no object is
        read): the paths of :meth:`list_paths`.

        Raises:
            StoreError: refused or unreachable.
        """

    def list_names(self, folder: str) -> list[str]:
        """The sorted names directly inside ``folder`` (a sub-folder once); empty when
        there are none. A store of objects names the current objects (and the first
        segment of deeper paths); a folder store every entry a listing of the folder
        shows, objects or not (a symlink, a temporary file, a sub-folder).

        Raises:
            StoreError: refused or unreachable.
        """
        prefix = f"{folder.rstrip('/')}/"
        return sorted({path[len(prefix) :].split("/", 1)[0] for path in self.list_paths(prefix)})

    @abc.abstractmethod
    def list_versions(self, path_prefix: str) -> Iterator[ObjectVersion]:
        """Every version and delete marker of every object under ``path_prefix``: the
        versions in key order (newest first within a key), then the delete markers. A
        store that is not :attr:`versioned` lists each current object once
        (``version_id`` ``"null"``).

        Raises:
            StoreError: refused or unreachable.
        """

    def holds(self, path_prefix: str) -> bool:
        """Whether anything is, or was, at a path beginning with ``path_prefix``: in a
        :attr:`versioned` store any version or delete marker counts (an object deleted
        is not one never written); a folder counts any entry, followed nowhere.

        Raises:
            StoreError: refused or unreachable.
        """
        return any(True for _ in self.list_versions(path_prefix))

    @abc.abstractmethod
    def put_new(
        self,
        path: str,
        body: bytes | BinaryIO,
        *,
        retention: Retention | None = None,
        legal_hold: bool = False,
        now_ms: int | None = None,
    ) -> ObjectInfo:
        """Create ``path``, never over an existing object; ``body`` is bytes or a file
        open for reading at its start.

        Raises:
            PreconditionFailed: the path exists (or a concurrent write to it is under way).
            StoreError: refused (a retention or legal hold on a store without Object
                Lock) or unreachable.
        """

    def put_exact(
        self,
        path: str,
        data: bytes,
        *,
        retention: Retention | None = None,
        legal_hold: bool = False,
    ) -> bool:
        """Create ``path`` holding ``data`` (:meth:`put_new`); True if written, False if
        it already held exactly ``data`` (a retry, or another writer completing the same
        step).

        Raises:
            StoreError: the object exists with other bytes (changed by hand or by an
                attacker: nothing is written over it), or the write failed.
        """
        try:
            self.put_new(path, data, retention=retention, legal_hold=legal_hold)
        except PreconditionFailed:
            if self._holds_exactly(path, data):
                return False
            raise StoreError(
                f"{self.url_of(path)} exists with other content; agc does not write over it",
                hint="Run `agc-verify --all` on the store to see what changed.",
            ) from None
        return True

    def _holds_exactly(self, path: str, data: bytes) -> bool:
        with self.open(path) as found:
            if found is None:
                return False
            chunks, info = found
            return info.size == len(data) and b"".join(chunks) == data

    @abc.abstractmethod
    def put_swap(
        self,
        path: str,
        data: bytes,
        *,
        etag: str | None,
        retention: Retention | None = None,
        legal_hold: bool = False,
    ) -> str:
        """Compare-and-swap: replace ``path`` only if its ETag is still ``etag``, or
        create it only if absent when ``etag`` is ``None``. Returns the new ETag.

        Raises:
            PreconditionFailed: someone else changed, created or deleted it first.
            StoreError: refused or unreachable.
        """

    def chain_turn(self, paths: ChainPaths) -> AbstractContextManager[ChainTurn]:
        """A turn at the store's chain at ``paths``: read the head inside it, then
        :meth:`ChainTurn.append`. A folder holds its exclusive lock (``paths.lock``) for
        the turn, so writers on one host take turns; a store of objects holds nothing,
        and a writer whose head was moved meanwhile gets ``PreconditionFailed`` from the
        append and reads the head again.

        Raises:
            StoreError: the lock cannot be taken (``FileWriteError`` for a full disk).
        """
        return contextlib.nullcontext(_SwapTurn(self, paths))

    @abc.abstractmethod
    def bucket_lock(self) -> BucketLock:
        """The store's Object Lock configuration (``enabled=False`` where the backend
        has none).

        Raises:
            StoreError: the store cannot be read.
        """

    # -- the write side: how evidence is written to the store ------------------------------

    @property
    def folder(self) -> Path | None:
        """The local folder the store is, where runs are written in place (files, fsync,
        locks); ``None`` for a store written object by object, where a run is written in
        a local staging folder (:meth:`staging_name`) and then published."""
        return None

    @property
    def retention(self) -> Retention | None:
        """The Object Lock retention asked of every object written (``None``: none asked;
        the bucket's default, if any, applies)."""
        return None

    @property
    def legal_hold(self) -> bool:
        """Whether an Object Lock legal hold is asked of every object written."""
        return False

    def with_policy(self, *, retention: Retention | None, legal_hold: bool) -> Store:
        """The same store (the same objects), asking ``retention`` and ``legal_hold`` of
        every object written to it (:attr:`retention`, :attr:`legal_hold`); a store that
        keeps no write policy gives itself back when none is asked.

        Raises:
            UsageError: a retention or legal hold asked of a store whose objects cannot
                carry one (a folder: its files have no Object Lock).
        """
        if retention is None and not legal_hold:
            return self
        raise UsageError(
            f"store {self.url} has no Object Lock: a retention or legal hold cannot be asked of it",
            hint="Object Lock needs an object store (docs/object-store.md).",
        )

    def staging_name(self) -> str:
        """A relative folder name unique to this store, under which this host keeps the
        runs it staged for it: ``<bucket>/<prefix with "/" as "+", "+" for none>``
        (prefix segments never hold ``+``).

        Raises:
            UsageError: the store is a folder (:attr:`folder`): nothing is staged for it.
        """
        raise UsageError(f"store {self.url} is written in place; nothing is staged for it")

    def __str__(self) -> str:
        return self.url
