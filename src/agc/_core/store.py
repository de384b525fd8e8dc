"""Store location, layout and run-id rules: the one place that knows where evidence lives.

A store is a folder (``--store DIR``, else ``$AGC_HOME``, else ``~/.agc``), an object store
(``s3://bucket/prefix``) or, in tests, a store in memory; :func:`open_store` turns a
``--store`` value into a :class:`~agc._core.storage.Store`. Every backend lays evidence out
the same way (``docs/format.md``, ``docs/object-store.md``); paths are ``/``-separated and
relative to the store::

    audit/transcripts/<runId>.jsonl        + <runId>.jsonl.b3 (or .sha256) sidecar
    audit/tool-events/<runId>.jsonl        + sidecar
    audit/tool-events.jsonl                legacy shared file, read only
    audit/manifests/<runId>.json           one run manifest per sealed run
    audit/manifests/<runId>@<n>.json       a closed manifest kept when its run re-opened
    audit/chain.jsonl                      the chain log (a folder store)
    audit/chain-head.json                  the chain head
    audit/chain/<position>.json            one link object per position (an object store)

The path functions below (:func:`artifact_path`, :func:`manifest_path` …) are that table;
:class:`StoreLayout` gives the same paths under a folder.

Run ids are an allow-list (no ``/``, no ``\\``, nothing outside it, so a run id can
never escape the audit folders):
1-128 characters of ``[A-Za-z0-9._-]`` and never ``.`` or ``..``. A :class:`RunId` is a run
id checked once, where it enters: the command line and the public functions (front doors)
make one of the text they are given (``RunId(text)``, free for a ``RunId``), and what they
call takes it as it is; checking it again (the path functions below) is free.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, cast, overload

from agc._core.record import FrozenRecord, record
from agc._core.storage import ChainPaths, Store
from agc.errors import RunIdInvalidError, UsageError

if TYPE_CHECKING:
    # Imported when a store can be an object store (see remote_store): a folder store
    # (every agc-verify of a folder) does without it.
    from agc._core.objstore import ObjectStore

__all__ = [
    "ARTIFACT_DIRS",
    "ARTIFACT_KINDS",
    "AUDIT_DIR",
    "CHAIN",
    "CHAIN_DIR",
    "CHAIN_HEAD",
    "CHAIN_LOCK",
    "CHAIN_LOG",
    "CHAIN_PENDING",
    "CHAIN_QUARANTINE",
    "LEGACY_TOOL_EVENTS",
    "MANIFESTS_DIR",
    "RUN_ID_MAX_LENGTH",
    "ArtifactKind",
    "RunId",
    "StoreArg",
    "StoreLayout",
    "archived_manifest_path",
    "artifact_path",
    "folder_store",
    "is_run_id",
    "is_unmade_default",
    "link_path",
    "manifest_lock_path",
    "manifest_path",
    "open_store",
    "remote_store",
    "resolve_store",
    "validate_new_run_id",
    "validate_run_id",
]

RUN_ID_MAX_LENGTH: Final = 128
_RUN_ID_RE: Final = re.compile(r"[A-Za-z0-9._-]{1,128}")

StoreArg: TypeAlias = "str | os.PathLike[str] | ObjectStore | None"
"""A ``--store`` value: a folder, an ``s3://bucket/prefix`` URL or an
:class:`~agc._core.objstore.ObjectStore`, or ``None`` (``$AGC_HOME``, else ``~/.agc``)."""

# -- the layout ---------------------------------------------------------------------------

ArtifactKind = Literal["transcript", "tool-events"]
ARTIFACT_KINDS: Final[tuple[ArtifactKind, ...]] = ("transcript", "tool-events")

AUDIT_DIR: Final = "audit"
ARTIFACT_DIRS: Final[dict[ArtifactKind, str]] = {
    "transcript": "audit/transcripts",
    "tool-events": "audit/tool-events",
}
MANIFESTS_DIR: Final = "audit/manifests"
LEGACY_TOOL_EVENTS: Final = "audit/tool-events.jsonl"
CHAIN_LOG: Final = "audit/chain.jsonl"
CHAIN_HEAD: Final = "audit/chain-head.json"
CHAIN_LOCK: Final = "audit/.chain.lock"
CHAIN_PENDING: Final = "audit/chain-pending.json"
CHAIN_QUARANTINE: Final = "audit/chain.jsonl.quarantine"
CHAIN_DIR: Final = "audit/chain"
CHAIN: Final = ChainPaths(head=CHAIN_HEAD, log=CHAIN_LOG, links=CHAIN_DIR, lock=CHAIN_LOCK)
"""The chain's paths, as :meth:`~agc._core.storage.Store.chain_turn` takes them."""


def artifact_path(run_id: str, kind: ArtifactKind) -> str:
    """``audit/transcripts/<runId>.jsonl`` or ``audit/tool-events/<runId>.jsonl``.

    Raises:
        RunIdInvalidError: ``run_id`` is not a valid run id.
    """
    return f"{ARTIFACT_DIRS[kind]}/{validate_run_id(run_id)}.jsonl"


def manifest_path(run_id: str) -> str:
    """``audit/manifests/<runId>.json``.

    Raises:
        RunIdInvalidError: ``run_id`` is not a valid run id.
    """
    return f"{MANIFESTS_DIR}/{validate_run_id(run_id)}.json"


def archived_manifest_path(run_id: str, position: int) -> str:
    """``audit/manifests/<runId>@<position>.json``: a closed manifest kept when its run
    was re-opened, so the chain link at ``position`` can still be checked.

    Raises:
        RunIdInvalidError: ``run_id`` is not a valid run id.
    """
    return f"{MANIFESTS_DIR}/{validate_run_id(run_id)}@{position}.json"


def manifest_lock_path(run_id: str) -> str:
    """``audit/manifests/.<runId>.lock``: a folder store's lock on one manifest.

    Raises:
        RunIdInvalidError: ``run_id`` is not a valid run id.
    """
    return f"{MANIFESTS_DIR}/.{validate_run_id(run_id)}.lock"


def link_path(position: int) -> str:
    """``audit/chain/<position>.json``, the position zero-padded to 20 digits so that a
    listing returns the links in order."""
    return CHAIN.link(position)


# -- run ids ------------------------------------------------------------------------------


class RunId(str):
    """A run id that was checked (:func:`validate_run_id`): ``RunId(text)`` checks it, and
    :func:`validate_run_id` returns a ``RunId`` unchanged without checking it again.

    It is a ``str`` (equal to, and hashing as, its text), so it goes wherever a run id
    went before.

    Raises:
        RunIdInvalidError: as :func:`validate_run_id`.
    """

    __slots__ = ()

    def __new__(cls, value: str) -> RunId:
        if type(value) is cls:
            return value
        _check_run_id(value)
        return super().__new__(cls, value)


@overload
def validate_run_id(run_id: RunId) -> RunId: ...
@overload
def validate_run_id(run_id: str) -> str: ...
def validate_run_id(run_id: str) -> str:
    """Return ``run_id`` unchanged if it is a valid run id; a :class:`RunId` is returned
    without a check (it was checked when it was made). A plain ``str`` stays a plain
    ``str``: what reports and JSON carry is the text the caller gave.

    Raises:
        RunIdInvalidError: not a string, empty, longer than 128 characters, a character outside
            ``[A-Za-z0-9._-]`` (``/``, ``\\``, NUL, space …), or exactly ``.``/``..``.
    """
    if type(run_id) is not RunId:
        _check_run_id(run_id)
    return run_id


def is_run_id(text: object) -> bool:
    """Whether ``text`` is a valid run id (:func:`validate_run_id` accepts it): for a
    name read from a store (a listing, a chain link), where one that is not is skipped
    or reported, never raised."""
    try:
        _check_run_id(text)
    except RunIdInvalidError:
        return False
    return True


def _check_run_id(run_id: object) -> None:
    if not isinstance(run_id, str):
        raise RunIdInvalidError(f"run id must be a string, not {type(run_id).__name__}")
    if not run_id:
        raise RunIdInvalidError("run id is empty")
    if len(run_id) > RUN_ID_MAX_LENGTH:
        raise RunIdInvalidError(
            f"run id is {len(run_id)} characters long; the limit is {RUN_ID_MAX_LENGTH}"
        )
    if _RUN_ID_RE.fullmatch(run_id) is None:
        bad = next(ch for ch in run_id if _RUN_ID_RE.fullmatch(ch) is None)
        raise RunIdInvalidError(
            f"run id {run_id!r} contains the character {bad!r}",
            hint=_path_hint(run_id) if bad in "/\\" else None,
        )
    if run_id in {".", ".."}:
        raise RunIdInvalidError(f"run id {run_id!r} is not allowed")


def _path_hint(given: str) -> str:
    """The hint for a path given where a run id is expected: the run id and store of a
    file inside a store (``<store>/audit/transcripts/<runId>.jsonl``, a sidecar, a
    manifest), else that commands take run ids."""
    parts = Path(given).parts
    if (
        len(parts) >= 3
        and parts[-3] == "audit"
        and "/".join(parts[-3:-1]) in {*ARTIFACT_DIRS.values(), MANIFESTS_DIR}
    ):
        name = parts[-1]
        run_id = name[: name.find(".json")] if ".json" in name else ""
        if _RUN_ID_RE.fullmatch(run_id) and run_id not in {".", ".."}:
            store = str(Path(*parts[:-3])) if len(parts) > 3 else "."
            return (
                f"That is a file of run {run_id!r} in store {store}; commands take the run id "
                f"and the store: {run_id} --store {store}"
            )
    return (
        "A run id is a name, not a path: 1-128 characters from A-Z a-z 0-9 . _ - "
        "(`agc runs` lists the run ids of a store)."
    )


def validate_new_run_id(run_id: str) -> RunId:
    """``run_id`` as a :class:`RunId`, for a run about to be created: as
    :func:`validate_run_id`, and also refuse a run id that begins with ``-``, which
    every command line would read as an option (a run named ``--help`` would turn
    ``agc-verify "$RUN_ID"`` into a help screen that exits 0).

    Runs that already exist under such an id stay readable (``agc-verify -- -x``).

    Raises:
        RunIdInvalidError: as :func:`validate_run_id`, or the id begins with ``-``.
    """
    run_id = RunId(run_id)
    if run_id.startswith("-"):
        raise RunIdInvalidError(
            f"run id {run_id!r} begins with '-', which commands read as an option",
            hint="Begin the run id with a letter, a digit, '.' or '_' (for example "
            f"{'run' + run_id!r}).",
        )
    return run_id


_OBJSTORE: Final = "agc._core.objstore"


def remote_store(store: object) -> ObjectStore | None:
    """:func:`agc._core.objstore.object_store_of`, importing that module only when
    ``store`` can name an object store: an ``ObjectStore`` exists only once the module
    is imported, and a URL (``store`` or, for ``None``, ``$AGC_HOME``) begins ``s3:/``.

    Raises:
        UsageError: an ``s3://`` URL that is not valid.
    """
    if _OBJSTORE not in sys.modules and not may_name_object_store(store):
        return None
    from agc._core.objstore import object_store_of  # noqa: PLC0415 - see above

    return object_store_of(store)


def may_name_object_store(store: object) -> bool:
    """Whether ``store`` (not an ``ObjectStore``) could name one: its text, or for
    ``None`` that of ``$AGC_HOME``, begins ``s3:/`` (``s3://`` or a path made from it)."""
    named = (os.environ.get("AGC_HOME") or None) if store is None else store
    if isinstance(named, os.PathLike):
        named = os.fspath(named)
    return isinstance(named, str) and named.startswith("s3:/")


def resolve_store(store: str | os.PathLike[str] | None = None) -> Path:
    """Return the store folder: ``store`` if given, else ``$AGC_HOME``, else ``~/.agc``.

    The folder is not created here; writers create what they need.

    Raises:
        UsageError: the store is an object store (``s3://…``) and the caller works on
            folders only; nothing named ``s3:`` is ever created.
    """
    remote = remote_store(store)
    if remote is not None:
        raise UsageError(
            f"store {remote.url} is an object store; this works on a store folder only",
            hint="Give a folder with --store (see docs/object-store.md for what works on S3).",
        )
    if store is not None:
        return Path(store)
    env = os.environ.get("AGC_HOME")
    if env:
        return Path(env)
    return Path.home() / ".agc"


def is_unmade_default(store: object) -> bool:
    """Whether ``store`` is the default store (no ``--store``: ``$AGC_HOME`` or
    ``~/.agc``) and nothing has made it yet: a store nothing was recorded in, read as an
    empty store. Only a store whose folder could be made as it is counts (its parent
    is a folder): a default store in a folder that cannot be read, under a file or under
    a missing parent stays an error, as a named store that does not exist does (a
    mistyped path)."""
    if store is not None:
        return False
    path = resolve_store(None)
    try:
        os.lstat(path)
    except FileNotFoundError:
        pass  # nothing there, or a parent missing: the parent decides
    except OSError:
        return False  # there, but not to us (permissions, a file on the way)
    else:
        return False
    try:
        return stat.S_ISDIR(os.stat(path.parent).st_mode)  # nothing in the way of making it
    except OSError:
        return False


def folder_store(store: StoreArg) -> str | os.PathLike[str] | None:
    """``store`` when it names a folder store (or ``None``).

    Raises:
        UsageError: it names an object store (as :func:`resolve_store`).
    """
    if _OBJSTORE in sys.modules:  # no ObjectStore exists before its module is imported
        from agc._core.objstore import ObjectStore  # noqa: PLC0415

        if isinstance(store, ObjectStore):
            resolve_store(store.url)
            raise AssertionError  # pragma: no cover - resolve_store raised
    return cast("str | os.PathLike[str] | None", store)


@record
class StoreLayout(FrozenRecord):
    """The layout's paths under a store folder. Pure: computing a path never touches the
    disk.

    Every method that takes a run id validates it first (``RunIdInvalidError``).
    """

    root: Path

    @classmethod
    def at(cls, store: str | os.PathLike[str] | None = None) -> StoreLayout:
        """Layout of the store chosen by :func:`resolve_store`."""
        return cls(resolve_store(store))

    # Cached: ``agc-verify --all`` asks for these paths several times for every run.
    @cached_property
    def audit_dir(self) -> Path:
        return self.root / AUDIT_DIR

    @cached_property
    def manifests_dir(self) -> Path:
        return self.root / MANIFESTS_DIR

    @property
    def legacy_tool_events_path(self) -> Path:
        """The legacy shared ``audit/tool-events.jsonl`` (read only, filtered by run_id)."""
        return self.root / LEGACY_TOOL_EVENTS

    def artifact_dir(self, kind: ArtifactKind) -> Path:
        return self._artifact_dirs[kind]

    @cached_property
    def _artifact_dirs(self) -> dict[ArtifactKind, Path]:
        return {kind: self.root / folder for kind, folder in ARTIFACT_DIRS.items()}

    def path(self, store_path: str) -> Path:
        """The file of a path of the layout (``audit/chain.jsonl`` …)."""
        return self.root / store_path

    def artifact_path(self, run_id: str, kind: ArtifactKind) -> Path:
        """``audit/transcripts/<runId>.jsonl`` or ``audit/tool-events/<runId>.jsonl``."""
        return self.root / artifact_path(run_id, kind)

    def manifest_path(self, run_id: str) -> Path:
        return self.root / manifest_path(run_id)

    def manifest_lock_path(self, run_id: str) -> Path:
        return self.root / manifest_lock_path(run_id)


def open_store(store: StoreArg | Store = None) -> Store:
    """The store a ``--store`` value names: a :class:`~agc._core.storage.Store` as it is,
    an ``s3://bucket/prefix`` URL as an :class:`~agc._core.objstore.ObjectStore`, a folder
    (or ``None``: ``$AGC_HOME``, else ``~/.agc``) as a
    :class:`~agc._core.folderstore.FolderStore`. Nothing is read or created here.

    Raises:
        UsageError: an ``s3://`` URL that is not valid.
    """
    if isinstance(store, Store):
        return store
    remote = remote_store(store)
    if remote is not None:
        return remote
    # the folder backend (hashlib, the fs layer) only when a store is opened: a run id
    # or the layout alone does not need it
    from agc._core.folderstore import FolderStore  # noqa: PLC0415

    return FolderStore(resolve_store(store))
