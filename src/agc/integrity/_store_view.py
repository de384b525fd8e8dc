"""The whole store as ``agc-verify --all`` reads it: one view over the store interface.

The view lists the store, reads its manifests, its chain and its head, and answers the
store checks (:func:`~agc.integrity._store_verify.check_store`) from one listing, so the
runs, the stray files and the chain are judged against the same state. What a backend
genuinely does differently is a property of the store (:class:`~agc._core.storage.Store`),
never guessed from its type:

* :attr:`Store.folder <agc._core.storage.Store.folder>`: a store written in place is
  listed folder by folder, every entry (a temporary file, a symlink, a sub-folder is
  seen too); its chain is one log (``audit/chain.jsonl``, appended under a lock, with
  ``audit/chain-pending.json`` while a link is made) and a re-opened run's closed
  manifest is kept as ``<run>@<n>.json``. A store written object by object is listed
  once, every version under ``audit/`` (or an S3 Inventory report); its chain is one link
  object per position (``audit/chain/<n>.json``), its head may name a link whose object
  is not written yet, and its runs are never re-opened.
* :meth:`Store.bucket_lock <agc._core.storage.Store.bucket_lock>` and object versions:
  judged for a store written object by object, through the :class:`VerifyPolicy` asked
  of it (:mod:`agc.integrity._version_findings`): each link object's versions, delete
  markers and retention, and a store without Object Lock reported once.

The layout is the one table of :mod:`agc._core.store`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from agc._core.digest import SIDECAR_SUFFIXES
from agc._core.report import Finding
from agc._core.storage import ObjectInfo, ObjectVersion, Store
from agc._core.store import (
    ARTIFACT_DIRS,
    ARTIFACT_KINDS,
    AUDIT_DIR,
    CHAIN_HEAD,
    CHAIN_LOCK,
    CHAIN_LOG,
    LEGACY_TOOL_EVENTS,
    MANIFESTS_DIR,
    ArtifactKind,
    StoreLayout,
    archived_manifest_path,
    artifact_path,
    manifest_path,
)
from agc.errors import ManifestInvalidError, StoreError, UnsafePathError
from agc.integrity._chain import (
    ChainEntry,
    ChainHead,
    pending_intent_mode,
    pending_link,
    read_chain,
    read_head,
)
from agc.integrity._chain_objects import CHAIN_DIR, RemoteHead
from agc.integrity._manifest import MAX_MANIFEST_BYTES, RunManifest
from agc.integrity._run_reader import (
    _LINK_NAME,
    UNREAD,
    RunItem,
    VerifyPolicy,
    _companion_index,
    _current,
    _group,
    _parse_link,
    read_head_object,
)
from agc.integrity._store_io import read_archived_manifest, read_manifest
from agc.integrity._version_findings import judge_object, object_lock_finding

__all__ = ["StoreView"]

_MAX_LINK_BYTES: Final = 4096
_THREADS: Final = 16


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


_AUDIT_NAMES: Final = frozenset(_name(d) for d in ARTIFACT_DIRS.values()) | {"manifests"}
_LOG_AUDIT: Final = _AUDIT_NAMES | {
    _name(p) for p in (CHAIN_LOG, CHAIN_HEAD, CHAIN_LOCK, LEGACY_TOOL_EVENTS)
}
"""The names a store written in place keeps in ``audit/``."""
_OBJECT_AUDIT: Final = _AUDIT_NAMES | {_name(CHAIN_DIR.rstrip("/")), _name(CHAIN_HEAD)}
"""The names a store written object by object keeps in ``audit/``."""
_FOLDERS: Final = frozenset({*ARTIFACT_DIRS.values(), MANIFESTS_DIR, CHAIN_DIR.rstrip("/")})
"""The folders of the layout: the only names under which an object store keeps keys."""
_LOG_FOLDERS: Final = (AUDIT_DIR, *ARTIFACT_DIRS.values(), MANIFESTS_DIR)
"""The folders of a store written in place, ``audit`` first."""


class StoreView:
    """A store as :func:`~agc.integrity._store_verify.check_store` reads it (see the
    module docstring for what depends on the store).

    Attributes:
        store: the store.
        label: its name for the report.
        policy: what is asked of a store written object by object (its retention and
            Object Lock; ``None`` for a store written in place).
        versions: every version under ``audit/`` by path, as listed once (empty for a
            store written in place, which is listed folder by folder).
        known_audit: the names in ``audit/`` that the layout explains.
    """

    def __init__(
        self,
        store: Store,
        policy: VerifyPolicy | None = None,
        listing: Iterable[ObjectVersion] | None = None,
    ) -> None:
        self.store = store
        self.label = store.url
        self.policy = policy
        folder = store.folder
        self.layout = None if folder is None else StoreLayout(folder)
        self.versions: dict[str, list[ObjectVersion]] = {}
        if self.layout is None:
            source = store.list_versions(f"{AUDIT_DIR}/") if listing is None else listing
            audit = store.key(f"{AUDIT_DIR}/")
            self.versions = dict(_group((v for v in source if v.key.startswith(audit)), store))
        self.known_audit = _OBJECT_AUDIT if self.layout is None else _LOG_AUDIT
        # A manifest as read (a string or an exception: why it is unusable).
        self._manifests: dict[str, RunManifest | str | Exception | None] = {}
        self._manifest_objects: dict[str, tuple[bytes, ObjectInfo] | None] = {}
        self._links: dict[str, tuple[bytes, ObjectInfo] | None] = {}
        self._listings: dict[str, list[str] | None] = {}
        self._listed_sets: dict[ArtifactKind, frozenset[str]] = {}
        self._companions: dict[str, list[str]] | None = None

    # -- the listing ------------------------------------------------------------------------

    def current(self, path: str) -> bool:
        """Whether the listing holds a current version of ``path`` (never a delete marker)."""
        return _current(self.versions.get(path, ()))

    def list_dir(self, folder: str) -> list[str] | None:
        """Sorted names directly inside ``folder`` (a ``/``-path in the store; a
        sub-folder once), ``None`` when there are none. Listed once: the runs, the stray
        files and the chain checks see one listing."""
        if folder not in self._listings:
            self._listings[folder] = self._list(folder)
        return self._listings[folder]

    def _list(self, folder: str) -> list[str] | None:
        if self.layout is not None:
            # Every entry, objects or not: a stray symlink or temporary file is reported.
            is_folder = (self.layout.root / folder).is_dir()
            try:
                return self.store.list_names(folder) if is_folder else None
            except UnsafePathError:
                return None  # a symlink in place of the folder (store_findings says so)
        prefix = folder.rstrip("/") + "/"
        names = set()
        for path, found in self.versions.items():
            if path.startswith(prefix) and _current(found):
                name, deeper, _ = path[len(prefix) :].partition("/")
                # A key below a name that is no folder of the layout (an evidence
                # object's key plus '/…', or a trailing '/') is named with its '/', so
                # it is judged apart from the object it would otherwise hide behind.
                names.add(f"{name}/" if deeper and f"{prefix}{name}" not in _FOLDERS else name)
        return sorted(names) if names else None

    def listed_names(self, run_id: str) -> dict[ArtifactKind, frozenset[str]]:
        """The names of the run's artifact files and sidecars in the listing."""
        found: dict[ArtifactKind, frozenset[str]] = {}
        for kind in ARTIFACT_KINDS:
            if kind not in self._listed_sets:
                self._listed_sets[kind] = frozenset(self.list_dir(ARTIFACT_DIRS[kind]) or ())
            names = self._listed_sets[kind]
            base = f"{run_id}.jsonl"
            found[kind] = frozenset(
                n for n in (base, *(base + s for s in SIDECAR_SUFFIXES.values())) if n in names
            )
        return found

    def run_versions(self, run_id: str) -> list[ObjectVersion]:
        """The listed versions of every key of the run: its manifest, then per artifact
        the artifact file and its companions (sidecars, quarantine files) in listing
        order. One look-up per artifact in an index made once, so ``--all`` stays linear
        in the number of keys (a scan of the listing per run is quadratic)."""
        if self._companions is None:
            self._companions = _companion_index(self.versions)
        paths = [manifest_path(run_id)]
        for kind in ARTIFACT_KINDS:
            paths.extend(self._companions.get(artifact_path(run_id, kind), ()))
        return [v for p in paths for v in self.versions.get(p, ())]

    def run_item(self, run_id: str) -> RunItem:
        """What :class:`~agc.integrity._run_reader.RunCheck` needs for a run of a
        versioned store: its versions and the manifest object as :meth:`prefetch` read it
        (handed over once: the run is checked against the same bytes as the chain, and
        the object is not fetched twice)."""
        return (
            run_id,
            self.run_versions(run_id),
            None,
            self._manifest_objects.pop(run_id, UNREAD),
        )

    def artifact_exists(self, run_id: str, kind: ArtifactKind) -> bool:
        if self.layout is not None:
            return os.path.lexists(self.layout.artifact_path(run_id, kind))
        return self.current(artifact_path(run_id, kind))

    # -- manifests --------------------------------------------------------------------------

    def prefetch(self, run_ids: Iterable[str]) -> None:
        """A hint: these manifests and the chain are about to be read. A store written
        object by object reads the manifests and every link object here, 16 at a time;
        a folder's files are read when needed."""
        if self.layout is not None:
            return
        wanted = [r for r in run_ids if r not in self._manifests]
        links = sorted(
            p
            for p in self.versions
            if p.startswith(CHAIN_DIR)
            and _LINK_NAME.fullmatch(p[len(CHAIN_DIR) :])  # any other key is a stray
            and self.current(p)
        )
        with ThreadPoolExecutor(_THREADS) as pool:
            for run_id, manifest in zip(
                wanted, pool.map(self._fetch_manifest, wanted), strict=True
            ):
                self._manifests[run_id] = manifest
            for path, got in zip(links, pool.map(self._fetch_link, links), strict=True):
                self._links[path] = got

    def _fetch_link(self, path: str) -> tuple[bytes, ObjectInfo] | None:
        return self.store.get(path, max_bytes=_MAX_LINK_BYTES + 1)

    def _fetch_manifest(self, run_id: str) -> RunManifest | Exception | None:
        if not self.current(manifest_path(run_id)):
            return None
        try:
            got = self.store.get(manifest_path(run_id), max_bytes=MAX_MANIFEST_BYTES + 1)
        except StoreError as exc:
            return exc
        self._manifest_objects[run_id] = got
        if got is None:
            return None
        if len(got[0]) > MAX_MANIFEST_BYTES:
            return ManifestInvalidError(
                f"manifest is larger than {MAX_MANIFEST_BYTES} bytes (damaged)"
            )
        try:
            return RunManifest.from_bytes(got[0], expected_run_id=run_id)
        except ManifestInvalidError as exc:
            return exc

    def remember(self, manifests: Iterable[tuple[str, RunManifest | str | None]]) -> None:
        """Keep the manifests the runs' checks read: :meth:`read_manifest` returns these
        (a string: why the manifest is unusable, raised as ``ManifestInvalidError``)."""
        self._manifests.update(manifests)

    def read_manifest(self, run_id: str) -> RunManifest | None:
        """As :func:`~agc.integrity._store_io.read_manifest` (read once, then kept).

        Raises:
            ManifestInvalidError, UnsafePathError, StoreError: the manifest is unusable.
        """
        if run_id not in self._manifests:
            if self.layout is not None:
                return read_manifest(self.layout, run_id)  # read afresh until remembered
            self._manifests[run_id] = self._fetch_manifest(run_id)
        found = self._manifests[run_id]
        if isinstance(found, str):
            raise ManifestInvalidError(found)
        if isinstance(found, Exception):
            raise found
        return found

    def read_archived(self, run_id: str, position: int) -> RunManifest | None:
        """The closed manifest kept for a superseded link, ``None`` if absent (a store
        written object by object never re-opens a run)."""
        if self.layout is None:
            return None
        return read_archived_manifest(self.layout, run_id, position)

    def archived_name(self, run_id: str, position: int) -> str:
        return _name(archived_manifest_path(run_id, position))

    # -- the chain --------------------------------------------------------------------------

    def read_chain(self, findings: list[Finding[Any]]) -> list[ChainEntry]:
        """The chain's links in position order; unusable ones become findings."""
        if self.layout is None:
            return self._read_link_objects(findings)
        try:
            entries, unusable = read_chain(self.layout)
        except UnsafePathError:
            findings.append(
                Finding(
                    "chain-invalid",
                    "audit/chain.jsonl is a symlink or not a regular file (not followed)",
                    artifact="store",
                )
            )
            return []
        if unusable:
            findings.append(
                Finding(
                    "chain-invalid",
                    f"{unusable} unreadable line(s) in audit/chain.jsonl",
                    artifact="store",
                )
            )
        return entries

    def _read_link_objects(self, findings: list[Finding[Any]]) -> list[ChainEntry]:
        """The link objects in position order, each object's versions and retention
        judged; a link only the head names is a pending one."""
        retention = self.policy.retention if self.policy is not None else None
        entries: list[ChainEntry] = []
        unusable: list[str] = []
        for path in sorted(p for p in self.versions if p.startswith(CHAIN_DIR)):
            match = _LINK_NAME.fullmatch(path[len(CHAIN_DIR) :])
            if match is None:
                findings.append(_unexpected_object(path))
                continue
            findings.extend(
                judge_object(
                    f"chain link {int(match['position'])}",
                    "store",
                    self.versions[path],
                    (self._links.get(path) or (b"", None))[1],
                    retention,
                )
            )
            if not self.current(path):
                continue
            if path not in self._links:
                self._links[path] = self._fetch_link(path)
            got = self._links[path]
            entry = _parse_link(got[0]) if got is not None else None
            if entry is None or entry.position != int(match["position"]):
                unusable.append(path)
                continue
            entries.append(entry)
        if unusable:
            findings.append(
                Finding(
                    "chain-invalid",
                    f"{len(unusable)} unreadable chain link object(s) under {CHAIN_DIR}",
                    artifact="store",
                )
            )
        head = read_head_object(self.store)
        if isinstance(head, RemoteHead) and (
            not entries or entries[-1].position == head.position - 1
        ):
            # The head's own link object is not written yet: a link being made, or its
            # writer died after the swap (the next seal or `agc recover` writes it).
            entries.append(head.entry)
            findings.append(
                Finding(
                    "link-pending",
                    f"the link of run {head.run_id} at position {head.position} is in the "
                    "chain head but its link object is not written yet; the next seal or "
                    "`agc recover` completes it",
                    "warning",
                    artifact="store",
                )
            )
        return entries

    def read_head(self) -> ChainHead | None:
        """The head (``ChainHead(0, None)`` without a chain), ``None`` if damaged."""
        if self.layout is not None:
            return read_head(self.layout)
        head = read_head_object(self.store)
        if head is None:
            return ChainHead(position=0, digest=None)
        if isinstance(head, str):
            return None
        return head.head

    def pending_link(self) -> tuple[str, int] | None:
        """The run id and position of a link being made but not in the chain yet (of a
        store written object by object, such a link is among :meth:`read_chain`'s)."""
        return None if self.layout is None else pending_link(self.layout)

    def store_findings(self, findings: list[Finding[Any]]) -> None:
        """Findings about the store itself: a store without the Object Lock asked of it;
        a folder whose link intent is not a regular file."""
        if self.policy is not None and not self.policy.lock.enabled:
            findings.append(
                object_lock_finding(self.store.lock_scope, policy_asked=self.policy.asked)
            )
        if self.layout is None:
            # An object at a folder's own key ('audit/transcripts'): listed folder by
            # folder, it would hide behind the folder's name.
            findings.extend(_unexpected_object(f) for f in sorted(_FOLDERS) if self.current(f))
            return
        # A symlink in place of a folder of the store is not followed: nothing below it
        # is listed as the store's, and the store is not complete.
        for folder in _LOG_FOLDERS:
            if (self.layout.root / folder).is_symlink():
                findings.append(
                    Finding(
                        "unexpected",
                        f"{folder} is a symlink, not a folder of the store (not followed)",
                        artifact="store",
                    )
                )
                if folder == AUDIT_DIR:
                    break  # nothing of the store below it
        # An intent is only ever written by rename: a folder, FIFO or symlink in its
        # place is no crash's doing, and every seal refuses to link while it is there.
        mode = pending_intent_mode(self.layout)
        if mode is not None and not stat.S_ISREG(mode):
            findings.append(
                Finding(
                    "chain-invalid",
                    "audit/chain-pending.json is a symlink or not a regular file: no run "
                    "can be linked until it is removed",
                    artifact="store",
                )
            )


def _unexpected_object(path: str) -> Finding[Any]:
    shown = path if path.isprintable() else repr(path)
    return Finding(
        "unexpected", f"unexpected object {shown} (no manifest lists it)", artifact="store"
    )
