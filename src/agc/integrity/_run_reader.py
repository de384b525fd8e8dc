"""The run reader: one run of any store observed through the store interface.

One reader for every store (a folder, an object store, one in memory): what stands at
each path of the run (:meth:`~agc._core.storage.Store.odd_entry`: a symlink or another
entry where an object should be, in a store that can hold one), its manifest and
sidecars, and each artifact's bytes, streamed once (:meth:`~agc._core.storage.Store.stream`)
and hashed as they arrive, in one pass that also counts records, keeps the last byte and
hashes the sealed prefix of a longer artifact and each earlier segment; memory stays
flat. A file not sealed for good is checked against its crash checkpoints too. What the
store showed is judged by the one pure judge (:func:`~agc.integrity._judge.judge_run`),
so a run's findings mean the same in every store.

What only some stores show is asked of the store, never guessed from its type: a
:attr:`~agc._core.storage.Store.versioned` store lists every version and delete marker of
the run's keys, judged with each object's Object Lock retention
(:mod:`agc.integrity._version_findings`); a store whose objects can be locked
(:attr:`~agc._core.storage.Store.lockable`) and are not is reported; the store chain is
read in the store's form (a log in a store written in place, link objects and a head
object in a store written object by object).

The retention policy is the one asked for (``--retention-days``/``--retention-mode``),
else the bucket's default retention rule, else none (retention is then not judged, and a
bucket without Object Lock is a warning).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Container, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias

from agc._core import json as strict_json
from agc._core.capture_failures import failure_lines
from agc._core.digest import ALGORITHMS, SIDECAR_SUFFIXES, Algorithm, digests_equal, new_hasher
from agc._core.record import FrozenRecord, field, record, replace
from agc._core.report import Finding
from agc._core.sidecar import MAX_SIDECAR_BYTES, Sidecar, parse_sidecar
from agc._core.signature_rule import signature_required
from agc._core.storage import BucketLock, ObjectInfo, ObjectVersion, Retention, Store
from agc._core.store import (
    ARTIFACT_KINDS,
    ArtifactKind,
    StoreLayout,
    artifact_path,
    link_path,
    manifest_path,
    validate_run_id,
)
from agc.errors import (
    JsonInvalidError,
    ManifestInvalidError,
    SidecarInvalidError,
    StoreError,
    UnsafePathError,
)
from agc.integrity._chain import ChainEntry, pending_link, run_links
from agc.integrity._judge import (
    ArtifactObservation,
    RunFindingCode,
    RunReport,
    changed_lines,
    closest_run_id,
    judge_run,
    run_missing_report,
    sealed_bytes_differ,
)
from agc.integrity._legacy import (
    EVERY_RUN,
    LegacyRun,
    chained_run_ids,
    count_legacy_tool_events,
    detect_legacy_run,
    has_legacy_sidecars,
)
from agc.integrity._manifest import MAX_MANIFEST_BYTES, ArtifactSeal, RunManifest
from agc.integrity._quarantine import judge_quarantine, quarantine_name
from agc.integrity._run_chain import judge_run_links
from agc.integrity._store_io import (
    archived_manifest_path,
    read_archived_manifest,
    stored_run_ids,
)
from agc.integrity._version_findings import judge_object, object_lock_finding

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from agc._core.checkpoint import Checkpoint, PrefixCheck
    from agc.integrity._chain_objects import RemoteHead

__all__ = [
    "ObjectCopy",
    "RunCheck",
    "VerifyPolicy",
    "chained_store_run_ids",
    "check_object_run",
    "check_store_run",
    "is_legacy_store_run",
    "list_run_versions",
    "read_head_object",
    "read_run",
    "run_paths",
    "verify_policy",
]

_Finding: TypeAlias = Finding[RunFindingCode]
_LINK_NAME: Final = re.compile(r"(?P<position>[0-9]{20})\.json")
_QUARANTINE_REST: Final = re.compile(r"\.quarantine(-\d+)?")
_QUARANTINE_TAIL: Final = re.compile(r"\.quarantine(-\d+)?\Z")


class _Unread:
    """The manifest object was not read yet (as opposed to ``None``: there is none)."""

    def __repr__(self) -> str:
        return "UNREAD"


UNREAD: Final = _Unread()
_ManifestObject: TypeAlias = "tuple[bytes, ObjectInfo] | _Unread | None"
RunItem: TypeAlias = (
    "tuple[str, Sequence[ObjectVersion] | None, Collection[str] | None, _ManifestObject]"
)
"""A run for :class:`RunCheck`: its id; what a listing of the store showed of it (the
versions of its keys in a versioned store, else the paths of its artifact files and
sidecars, or ``None``: look each one up); its manifest object as already read
(:data:`UNREAD`: read it)."""


@record
class VerifyPolicy(FrozenRecord):
    """What the verifier asks of object storage.

    Attributes:
        retention: the retention every object must have (``None``: not judged).
        asked: the retention was asked for explicitly (a bucket without Object Lock is
            then an error, not a warning).
        lock: the bucket's Object Lock configuration.
    """

    retention: Retention | None
    asked: bool
    lock: BucketLock


class ObjectCopy(Protocol):
    """Where :func:`check_object_run` copies an artifact's bytes while it hashes them.

    The copy receives exactly the chunks the digest is computed over, from the one
    ``GetObject`` the check makes, so a reader of the copy reads the bytes that were
    judged (never a second fetch, which a writer of the bucket could answer with others).
    """

    def begin(self, info: ObjectInfo, seal: ArtifactSeal | None) -> None:
        """The object answered (``info``: its version, size, ETag); ``seal``: the
        manifest's entry it is judged against (``None``: the run has none)."""

    def write(self, chunk: bytes, /) -> object:
        """One piece of the body, in order (raise ``StoreError`` to stop the check)."""


def verify_policy(store: Store, retention: Retention | None = None) -> VerifyPolicy:
    """The policy for ``store``: ``retention`` if given, else the bucket's default."""
    lock = store.bucket_lock()
    return VerifyPolicy(retention or lock.default, retention is not None, lock)


def run_paths(run_id: str, kind: ArtifactKind) -> tuple[str, ...]:
    """The artifact file and sidecar paths of one artifact (quarantine files come from
    the manifest)."""
    path = artifact_path(run_id, kind)
    return (path, *(path + SIDECAR_SUFFIXES[a] for a in ALGORITHMS))


def _group(versions: Iterable[ObjectVersion], store: Store) -> dict[str, list[ObjectVersion]]:
    by_path: dict[str, list[ObjectVersion]] = defaultdict(list)
    for version in versions:
        by_path[store.relative(version.key)].append(version)
    return by_path


def _current(versions: Sequence[ObjectVersion]) -> bool:
    """The key has a current version that is not a delete marker."""
    return any(v.is_latest and not v.is_delete_marker for v in versions)


@record
class _Observed(FrozenRecord):
    """One streamed object: its observation facts and what the service said about it."""

    digest: str
    size: int
    records: int
    ends_with_newline: bool
    prefix_digest: str | None
    segment_mismatch: Mapping[str, Any] | None
    info: ObjectInfo


def _stream(
    store: Store,
    path: str,
    algorithm: Algorithm,
    seal: ArtifactSeal | None,
    copy: ObjectCopy | None = None,
    *,
    count_lines: bool = True,
) -> _Observed | None:
    """Read the object once: digest, length, last byte, sealed prefix, segments, and
    its lines when ``count_lines`` (else ``records`` is 0: a sealed file's count is
    needed only when its digest differs, :func:`_count_and_locate`); every chunk goes
    into ``copy``, when given."""
    with store.stream(path) as found:
        if found is None:
            return None
        chunks, info = found
        if copy is not None:
            copy.begin(info, seal)
        hasher = new_hasher(algorithm)
        # Hashers that stop at a length: the sealed length (to tell "extended"), and each
        # earlier segment of a re-opened file.
        caps: list[tuple[int, Any, Mapping[str, Any] | None]] = []
        mismatch: Mapping[str, Any] | None = None
        if seal is not None:
            if info.size > seal.bytes:
                caps.append((seal.bytes, new_hasher(seal.algorithm), None))
            for earlier in seal.segments:
                length = earlier.get("bytes")
                if isinstance(length, int):
                    caps.append((length, new_hasher(seal.algorithm), earlier))
        total = lines = 0
        last = b""
        for chunk in chunks:
            for limit, capped, _ in caps:
                if total < limit:
                    capped.update(chunk[: limit - total])
            hasher.update(chunk)
            if copy is not None:
                copy.write(chunk)
            if count_lines:
                lines += chunk.count(b"\n")
            total += len(chunk)
            last = chunk[-1:]
    prefix_digest = None
    for limit, capped, which in caps:
        if which is None:
            prefix_digest = capped.hexdigest() if total >= limit else None
        elif mismatch is None and (
            total < limit or not digests_equal(str(which.get("digest", "")), capped.hexdigest())
        ):
            mismatch = which
    for earlier in seal.segments if seal else ():
        if not isinstance(earlier.get("bytes"), int) and mismatch is None:
            mismatch = earlier
    return _Observed(
        digest=hasher.hexdigest(),
        size=total,
        records=lines,
        ends_with_newline=total == 0 or last == b"\n",
        prefix_digest=prefix_digest,
        segment_mismatch=mismatch,
        info=info,
    )


def _take(chunks: Iterable[bytes], limit: int) -> bytes:
    """At most ``limit`` bytes of a stream (the rest is not read)."""
    taken = bytearray()
    for chunk in chunks:
        taken += chunk[: limit - len(taken)]
        if len(taken) >= limit:
            break
    return bytes(taken)


def _read_small(
    store: Store, path: str, limit: int, infos: dict[str, ObjectInfo]
) -> bytes | str | None:
    """The first ``limit`` + 1 bytes of the object at ``path`` (more: it is larger than
    ``limit``); ``None`` when there is none; ``"symlink"`` or ``"other"`` for what
    stands there that is not an object (:meth:`~agc._core.storage.Store.odd_entry`).

    Raises:
        StoreError: it cannot be read.
    """
    odd = store.odd_entry(path)
    if odd is not None:
        return odd
    try:
        with store.stream(path) as found:
            if found is None:
                return None
            chunks, infos[path] = found
            return _take(chunks, limit + 1)
    except UnsafePathError:
        return "symlink"  # swapped in since it was looked at


def _read_sidecars(
    store: Store, path: str, present: Container[str] | None, infos: dict[str, ObjectInfo]
) -> dict[Algorithm, Sidecar | str]:
    """Every sidecar of the artifact at ``path``: parsed, or the problem that makes it
    unusable (the rule of :func:`agc._core.sidecar.read_sidecar`, in any store)."""
    found: dict[Algorithm, Sidecar | str] = {}
    for algorithm in ALGORITHMS:
        where = path + SIDECAR_SUFFIXES[algorithm]
        if present is not None and where not in present:
            continue
        data = _read_small(store, where, MAX_SIDECAR_BYTES, infos)
        if data is None:
            continue
        if isinstance(data, str):
            found[algorithm] = "is a symlink or not a regular file"
        elif len(data) > MAX_SIDECAR_BYTES:
            found[algorithm] = f"is larger than {MAX_SIDECAR_BYTES} bytes; one line is expected"
        else:
            try:
                found[algorithm] = parse_sidecar(data, algorithm=algorithm)
            except SidecarInvalidError as exc:
                found[algorithm] = exc.message.removeprefix("sidecar ")
    return found


def _read_checkpoints(store: Store, path: str) -> list[Checkpoint]:
    """The crash checkpoints of the artifact at ``path`` (``<name>.ckpt``); none when
    there is no usable checkpoint object (nothing of the file then counts as verified).

    Raises:
        StoreError: it is larger than a checkpoint file may be, or cannot be read.
    """
    from agc._core.checkpoint import (  # noqa: PLC0415 - only for a file not sealed for good
        CHECKPOINT_SUFFIX,
        MAX_CHECKPOINT_BYTES,
        parse_checkpoints,
    )

    where = path + CHECKPOINT_SUFFIX
    if store.odd_entry(where) is not None:
        return []
    try:
        got = store.get(where, max_bytes=MAX_CHECKPOINT_BYTES)
    except UnsafePathError:
        return []
    return [] if got is None else parse_checkpoints(got[0])[0]


def _check_prefix(
    store: Store, path: str, checkpoints: list[Checkpoint], size: int, version_id: str | None
) -> PrefixCheck:
    """The artifact's first ``size`` bytes checked against its crash checkpoints: a
    second read of the version just read (none when there is no checkpoint)."""
    from agc._core.checkpoint import check_prefix_read, chunk_reader  # noqa: PLC0415

    if not checkpoints:
        return check_prefix_read(_nothing, checkpoints, size=size)
    with store.open(path, version_id=version_id) as found:
        # Gone since the first read: no checkpoint's prefix matches.
        read = _nothing if found is None else chunk_reader(found[0])
        return check_prefix_read(read, checkpoints, size=size)


def _nothing(_length: int, _offset: int) -> bytes:
    """A read of a stream that holds nothing."""
    return b""


def _observe(
    store: Store,
    run_id: str,
    kind: ArtifactKind,
    seal: ArtifactSeal | None,
    present: Container[str] | None,
    infos: dict[str, ObjectInfo],
    copy: ObjectCopy | None = None,
) -> ArtifactObservation:
    """What the store shows of one artifact: what stands at its path (an object, a
    symlink or another entry, nothing), its sidecars, and the facts of its bytes read
    once (:func:`_stream`); its crash checkpoints when it is not sealed for good.

    ``present``: the paths a listing found (``None``: look each one up).

    Raises:
        StoreError: the store cannot be read.
    """
    path = artifact_path(run_id, kind)
    sidecars = _read_sidecars(store, path, present, infos)
    local = Path(path)
    algorithm: Algorithm = seal.algorithm if seal else next(iter(sidecars), "blake3")
    if present is not None and path not in present:
        return ArtifactObservation(kind, local, "absent", sidecars=sidecars)
    odd = store.odd_entry(path)
    if odd is not None:
        return ArtifactObservation(kind, local, odd, sidecars=sidecars)
    # Checkpoints first, bytes second: a live writer writes bytes before the checkpoint
    # that covers them, so every checkpoint read here is within the bytes read after.
    checkpoints = _read_checkpoints(store, path) if seal is None or not seal.closed else None
    try:
        observed = _stream(store, path, algorithm, seal, copy, count_lines=seal is None)
    except UnsafePathError:  # swapped in since it was looked at
        return ArtifactObservation(kind, local, "symlink", sidecars=sidecars)
    if observed is None:
        return ArtifactObservation(kind, local, "absent", sidecars=sidecars)
    infos[path] = observed.info
    version_id = observed.info.version_id
    prefix = (
        None
        if checkpoints is None
        else _check_prefix(store, path, checkpoints, observed.size, version_id)
    )
    records, located = observed.records, None
    if seal is not None:
        if digests_equal(seal.digest, observed.digest):
            records = seal.records
        else:
            differ = sealed_bytes_differ(
                seal, observed.size, observed.digest, observed.prefix_digest
            )
            records, located = _count_and_locate(store, path, seal, version_id, locate=differ)
    return ArtifactObservation(
        kind=kind,
        path=local,
        file_type="file",
        bytes=observed.size,
        digest=observed.digest,
        algorithm=algorithm,
        ends_with_newline=observed.ends_with_newline,
        records=records,
        prefix_digest=observed.prefix_digest,
        segment_mismatch=observed.segment_mismatch,
        sidecars=sidecars,
        prefix=prefix,
        changed_lines=located,
    )


def _count_and_locate(
    store: Store, path: str, seal: ArtifactSeal, version_id: str | None, *, locate: bool
) -> tuple[int, tuple[int, int] | None]:
    """The lines of an artifact whose digest differs from its seal and, when ``locate``
    (its sealed bytes differ), :func:`~agc.integrity._judge.changed_lines`: one second
    read of the version just read (only such an artifact is read twice).
    ``(0, None)`` when it is gone since the first read."""
    from agc._core.checkpoint import chunk_reader  # noqa: PLC0415 - only on a mismatch

    with store.open(path, version_id=version_id) as found:
        if found is None:
            return 0, None  # gone since the first read: the finding stays unlocated
        chunks, info = found
        counted = _Counted(chunks)
        located = changed_lines(seal, chunk_reader(counted), info.size) if locate else None
        for _ in counted:  # the rest of the lines
            pass
        return counted.lines, located


class _Counted:
    """The chunks of a stream, counting the lines of every chunk taken."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self.lines = 0

    def __iter__(self) -> _Counted:
        return self

    def __next__(self) -> bytes:
        chunk = next(self._chunks)
        self.lines += chunk.count(b"\n")
        return chunk


def _check_quarantine(
    store: Store, run_id: str, seal: ArtifactSeal, infos: dict[str, ObjectInfo]
) -> list[_Finding]:
    """The torn bytes ``agc recover`` moved beside a file: present and as sealed."""
    kind, name = seal.kind, quarantine_name(seal)
    path = artifact_path(run_id, kind).rsplit("/", 1)[0] + "/" + name
    odd = store.odd_entry(path)
    try:
        observed = (
            None
            if odd is not None
            else _stream(store, path, seal.algorithm, None, count_lines=False)
        )
    except UnsafePathError:
        odd = "symlink"
    if odd is not None:
        what = "is a symlink" if odd == "symlink" else "is not a file"
        return [Finding("not-regular-file", f"{kind} quarantine file {name} {what}", artifact=kind)]
    if observed is None:
        return judge_quarantine(seal, None)
    infos[path] = observed.info
    return judge_quarantine(seal, (observed.digest, observed.size))


def _label(path: str, kind: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return kind if name.endswith(".jsonl") or kind == "manifest" else f"{kind} {name}"


def _read_manifest(
    store: Store,
    run_id: str,
    present: Container[str] | None,
    infos: dict[str, ObjectInfo],
    manifest_object: tuple[bytes, ObjectInfo] | _Unread | None,
) -> tuple[RunManifest | None, list[_Finding]]:
    """The run's manifest, or the finding that makes it unusable."""
    mpath = manifest_path(run_id)
    if present is not None and mpath not in present:
        return None, []
    if isinstance(manifest_object, _Unread):
        data = _read_small(store, mpath, MAX_MANIFEST_BYTES, infos)
    elif manifest_object is not None:
        data, infos[mpath] = manifest_object
    else:
        data = None
    if data is None:
        return None, []
    if isinstance(data, str):
        finding: _Finding = Finding(
            "not-regular-file", "run manifest is a symlink or not a file", artifact="manifest"
        )
        return None, [finding]
    try:
        if len(data) > MAX_MANIFEST_BYTES:
            raise ManifestInvalidError(
                f"manifest is larger than {MAX_MANIFEST_BYTES} bytes (damaged)"
            )
        return RunManifest.from_bytes(data, expected_run_id=run_id), []
    except ManifestInvalidError as exc:
        return None, [
            Finding("manifest-invalid", f"run manifest invalid: {exc.message}", artifact="manifest")
        ]


def check_store_run(
    store: Store,
    run_id: str,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
    allow_recovered: bool = False,
    policy: VerifyPolicy | None = None,
    versions: Sequence[ObjectVersion] | None = None,
    bucket_findings: bool = True,
    manifest_object: tuple[bytes, ObjectInfo] | _Unread | None = UNREAD,
    copies: Mapping[ArtifactKind, ObjectCopy] | None = None,
    chain: bool = True,
) -> RunReport:
    """Check one run of any store; never raises on findings (see the module doc).
    Public as :func:`agc.integrity.check_object_run` (the same function).

    Args:
        store: the store (a folder, an object store, one in memory).
        run_id: the run (validated first).
        trusted_keys, require_signature, allow_unsigned, allow_recovered: as
            :func:`~agc.integrity.check_run`.
        policy: the retention policy and the bucket's lock (default: read from the
            store, retention = its default rule).
        versions: the versions of the run's keys, as listed (default: listed here, in
            a :attr:`~agc._core.storage.Store.versioned` store).
        bucket_findings: report a store without Object Lock in this run's report
            (``--all`` reports it once, for the store).
        manifest_object: the manifest's bytes and object facts as ``--all`` already read
            them (``None``: no such object); by default it is read here.
        copies: for each artifact kind given, where the object's bytes are copied as
            they are hashed (:class:`ObjectCopy`); an artifact not read (absent, or not
            an object) leaves its copy untouched.
        chain: judge the run against its links in the store chain (``--all`` judges
            every run's links itself, from its one read of the chain).

    Raises:
        RunIdInvalidError, UsageError: as :func:`~agc.integrity.check_run`.
        StoreError: the store cannot be read (exit 3).
    """
    return read_run(
        store,
        run_id,
        trusted_keys=trusted_keys,
        require_signature=signature_required(
            trusted_keys, require_signature=require_signature, allow_unsigned=allow_unsigned
        ),
        allow_recovered=allow_recovered,
        policy=policy,
        versions=versions,
        bucket_findings=bucket_findings,
        manifest_object=manifest_object,
        copies=copies,
        chain=chain,
    )[0]


check_object_run = check_store_run
"""The public name of :func:`check_store_run` (the same function: every store holds
objects at paths)."""


def read_run(
    store: Store,
    run_id: str,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None,
    require_signature: bool,
    allow_recovered: bool = False,
    policy: VerifyPolicy | None = None,
    versions: Sequence[ObjectVersion] | None = None,
    present: Container[str] | None = None,
    bucket_findings: bool = True,
    manifest_object: tuple[bytes, ObjectInfo] | _Unread | None = UNREAD,
    copies: Mapping[ArtifactKind, ObjectCopy] | None = None,
    chain: bool = True,
    shared_events: bool = True,
) -> tuple[RunReport, RunManifest | str | None]:
    """:func:`check_store_run` (``require_signature`` already resolved by
    :func:`~agc._core.signature_rule.signature_required`), with the manifest it judged
    the run by: ``None`` when the run has none, or why it is unusable (the message of
    a ``manifest-invalid`` or ``not-regular-file`` finding of the report).

    ``present``: the paths of the run's artifact files and sidecars that a listing of
    the store found (``--all``); what it does not name is not looked for.
    ``shared_events``: the legacy shared tool-events file may be in the store (``--all``
    knows from its listing).

    Raises:
        RunIdInvalidError, StoreError: as :func:`check_store_run`.
    """
    run_id = validate_run_id(run_id)
    kinds_paths = [(k, store.url_of(artifact_path(run_id, k))) for k in ARTIFACT_KINDS]
    listed = present is not None or versions is not None
    if not listed and not store.exists_at_all():
        # No store at all holds no run either: the same verdict as an empty store
        # (``run-missing``, exit 1), not an unreadable one.
        where = " (the store folder does not exist)"
        return run_missing_report(run_id, store.url, kinds_paths, None, where), None
    policy = policy or verify_policy(store)
    if versions is None and present is None and store.versioned:
        versions = list_run_versions(store, run_id)
        if not versions and chain and not _has_links(store, run_id):
            # Nothing of the run, in any version, and no link names it: a mistyped id.
            return _run_missing(store, run_id, kinds_paths), None
    by_path = _group(versions or (), store)
    if versions is not None:
        present = {path for path, found in by_path.items() if _current(found)}
    infos: dict[str, ObjectInfo] = {}
    # A listing of versions names the manifest too; one of files (--all on a folder)
    # names the artifacts' only, and the manifest is looked up.
    manifest, findings = _read_manifest(
        store, run_id, present if versions is not None else None, infos, manifest_object
    )
    judged: RunManifest | str | None = findings[0].message if findings else manifest
    observations = [
        _observe(
            store,
            run_id,
            kind,
            manifest.artifacts.get(kind) if manifest else None,
            present,
            infos,
            (copies or {}).get(kind),
        )
        for kind in ARTIFACT_KINDS
    ]
    # Records naming the run in the legacy shared file are never part of it: reported
    # as unverified, for legacy and agc runs alike.
    shared_records = count_legacy_tool_events(store, run_id) if shared_events else 0
    legacy: LegacyRun | None = None
    if manifest is None and not findings:
        legacy, downgrade = detect_legacy_run(
            observations[0],
            linked=partial(_links_run, store, run_id),
            shared_records=shared_records,
        )
        findings.extend(downgrade)
    if (
        versions is None
        and manifest is None
        and not findings
        and not shared_records
        and all(o.file_type == "absent" and not o.sidecars for o in observations)
    ):
        # A store that keeps no versions: nothing of the run is there now.
        missing = _run_missing(store, run_id, kinds_paths)
        return (_judge_links(missing, store, None) if chain else missing), None
    quarantines = {
        seal.kind: _check_quarantine(store, run_id, seal, infos)
        for obs in observations
        if (seal := manifest.artifacts.get(obs.kind) if manifest else None) is not None
        and seal.quarantine is not None
    }
    # What only a versioned store shows, key by key (in a stable order). A finding about
    # an artifact's object (its file, sidecar or quarantine) is the artifact's too: its
    # entry is then not ok, as for any other error about it.
    mpath = manifest_path(run_id)
    kinds = {artifact_path(run_id, k).rsplit("/", 1)[0]: k for k in ARTIFACT_KINDS}
    object_findings: list[Finding[Any]] = []
    for path in sorted(set(by_path) | set(infos)):
        kind = "manifest" if path == mpath else kinds.get(path.rsplit("/", 1)[0], "store")
        object_findings.extend(
            judge_object(
                _label(path, kind), kind, by_path.get(path, ()), infos.get(path), policy.retention
            )
        )
    bucket = (
        [object_lock_finding(store.lock_scope, policy_asked=policy.asked)]
        if bucket_findings and store.lockable and not policy.lock.enabled
        else []
    )
    report = judge_run(
        run_id,
        store.url,
        [(obs, store.url_of(str(obs.path))) for obs in observations],
        manifest,
        findings,
        legacy=legacy,
        quarantines=quarantines,
        shared_records=shared_records,
        trusted_keys=trusted_keys,
        require_signature=require_signature,
        allow_recovered=allow_recovered,
        object_findings=object_findings,
        store_findings=bucket,
    )
    if chain:
        report = _judge_links(report, store, judged, legacy=legacy is not None)
    if store.folder is not None:
        report = _judge_capture(report, store.folder)
    return report, judged


def _judge_capture(report: RunReport, folder: Path) -> RunReport:
    """``report`` with a ``capture-failed`` error when a failure of capturing the run's
    client session is kept for the store folder ``folder`` (hooks write to a store on
    this host: :mod:`agc._core.capture_failures`): an event a hook could not write is
    missing from the run, however well what is there was sealed."""
    failures = failure_lines(folder.absolute(), run_id=report.run_id)
    if not failures:
        return report
    codes = sorted({str(line.get("code")) for line in failures})
    finding: _Finding = Finding(
        "capture-failed",
        f"{len(failures)} hook event(s) of this run's session could not be captured "
        f"({', '.join(codes)}); `agc hooks status` says why",
        artifact="tool-events",
        actual={"failures": len(failures), "codes": codes},
    )
    return replace(report, findings=(*report.findings, finding))


def _run_missing(
    store: Store, run_id: str, kinds_paths: Sequence[tuple[ArtifactKind, str]]
) -> RunReport:
    """The report on a run of which the store holds nothing at all: one finding, which
    every artifact shares (none of them is there). When the store holds a run of a
    close id (a typo), the message asks "did you mean" it."""
    return run_missing_report(run_id, store.url, kinds_paths, _close_run_id(store, run_id))


def _close_run_id(store: Store, run_id: str) -> str | None:
    """The stored run id most like ``run_id`` (:func:`~agc.integrity._judge.closest_run_id`),
    or ``None``; a store that cannot be listed has none (the finding stands without a
    suggestion)."""
    try:
        # A run being written in place has its files before its manifest.
        stored = stored_run_ids(store, artifact_files=store.folder is not None)
    except StoreError:
        return None
    return closest_run_id(run_id, stored)


# -- the run's links in the store chain -------------------------------------------------
#
# The chain's form is the store's: a store written in place (a folder) keeps a log,
# ``audit/chain.jsonl``, with kept manifests of re-opened runs; a store written object
# by object keeps one link object per position and a head object.


def _has_links(store: Store, run_id: str) -> bool:
    return bool(_object_run_links(store, run_id, None))


def _links_run(store: Store, run_id: str) -> bool:
    """Whether the store chain links a run that has no manifest (a downgraded run, not
    a legacy one); a chain that cannot be read counts as linking it."""
    return run_id in chained_store_run_ids(store)


def chained_store_run_ids(store: Store) -> Container[str]:
    """The run ids the store chain links, read once (for a listing of many runs asking
    whether each is a legacy one), in the store's form of the chain: the log of a store
    written in place, the link objects and the head of a store written object by object.
    A chain that cannot be read (a link or the head damaged, larger than a manifest can
    be, or the log not a regular file) links every run: a store with a damaged chain is
    not a legacy store.

    Raises:
        StoreError: the store cannot be listed or read (exit 3).
    """
    if store.folder is not None:
        return chained_run_ids(StoreLayout(store.folder))
    from agc.integrity._chain_objects import CHAIN_DIR, HEAD_PATH, RemoteHead  # noqa: PLC0415 - object stores only

    linked: set[str] = set()
    for path in (*sorted(store.list_paths(CHAIN_DIR)), HEAD_PATH):
        with store.open(path) as found:
            if found is None:
                continue
            chunks, info = found
            if info.size > MAX_MANIFEST_BYTES:
                return EVERY_RUN
            data = b"".join(chunks)
        if path == HEAD_PATH:
            try:
                linked.add(RemoteHead.from_bytes(data).run_id)
            except (ValueError, UnicodeDecodeError):
                return EVERY_RUN
            continue
        entry = _parse_link(data)
        if entry is None:
            return EVERY_RUN
        linked.add(entry.run_id)
    return frozenset(linked)


def _judge_links(
    report: RunReport, store: Store, judged: RunManifest | str | None, *, legacy: bool = False
) -> RunReport:
    """``report`` judged against the run's links in the store chain."""
    if store.folder is not None:
        return _judge_log_links(report, StoreLayout(store.folder), judged)
    if legacy or isinstance(judged, str):
        return report
    run_id = report.run_id
    return judge_run_links(
        report,
        judged,
        _object_run_links(store, run_id, judged),
        lambda _: None,  # a run in object storage is never re-opened
        lambda position: f"{run_id}@{position}.json",
    )


def _judge_log_links(
    report: RunReport, layout: StoreLayout, judged: RunManifest | str | None
) -> RunReport:
    """``report`` judged against the run's links in ``audit/chain.jsonl``."""
    run_id = report.run_id
    try:
        links = run_links(layout, run_id)
    except UnsafePathError:
        links = ()  # not followed; `agc-verify --all` reports the chain as invalid
    pending = False
    if not links and isinstance(judged, RunManifest) and judged.chain is not None:
        pending = pending_link(layout) == (run_id, judged.chain.get("position"))

    def archived(position: int) -> RunManifest | None:
        try:
            return read_archived_manifest(layout, run_id, position)
        except (ManifestInvalidError, UnsafePathError):
            return None  # unusable: judged as missing

    return judge_run_links(
        report,
        judged,
        links,
        archived,
        lambda position: archived_manifest_path(layout, run_id, position).name,
        link_pending=pending,
    )


def _object_run_links(store: Store, run_id: str, manifest: RunManifest | None) -> list[ChainEntry]:
    """The run's links: the one at the position its manifest names (its link object,
    or the head while that object is pending); every link of the chain when the run has
    no manifest to name one.

    Raises:
        StoreError: the store cannot be listed or read (exit 3).
    """
    if manifest is not None:
        position = (manifest.chain or {}).get("position")
        if not isinstance(position, int):
            return []
        head = _read_head_object(store)
        if head is not None and head.position == position:
            return [head.entry] if head.run_id == run_id else []
        got = store.get(link_path(position), max_bytes=MAX_MANIFEST_BYTES)
        entry = _parse_link(got[0]) if got is not None else None
        return [entry] if entry is not None and entry.run_id == run_id else []
    from agc.integrity._chain_objects import CHAIN_DIR  # noqa: PLC0415 - object stores only

    found: list[ChainEntry] = []
    for path in sorted(store.list_paths(CHAIN_DIR)):
        got = store.get(path, max_bytes=MAX_MANIFEST_BYTES)
        entry = _parse_link(got[0]) if got is not None else None
        if entry is not None and entry.run_id == run_id:
            found.append(entry)
    head = _read_head_object(store)
    if (
        head is not None
        and head.run_id == run_id
        and head.position not in {e.position for e in found}
    ):
        found.append(head.entry)
    return found


def read_head_object(store: Store) -> RemoteHead | str | None:
    """The chain head object of an object store: ``None`` when there is none,
    ``"damaged"`` when it cannot be parsed (``agc-verify --all`` reports it).

    Raises:
        StoreError: the head cannot be read (exit 3).
    """
    from agc.integrity._chain_objects import HEAD_PATH, RemoteHead  # noqa: PLC0415 - object stores only

    got = store.get(HEAD_PATH, max_bytes=MAX_MANIFEST_BYTES + 4096)
    if got is None:
        return None
    try:
        return RemoteHead.from_bytes(got[0])
    except (ValueError, UnicodeDecodeError):
        return "damaged"


def _read_head_object(store: Store) -> RemoteHead | None:
    head = read_head_object(store)
    return None if head is None or isinstance(head, str) else head


def is_legacy_store_run(
    store: Store, run_id: str, *, chained: Container[str] | None = None
) -> bool:
    """Whether a run that has no manifest is in the legacy format, as the reader decides
    it (:func:`~agc.integrity._legacy.detect_legacy_run`), without reading its
    transcript: its transcript's only sidecar is a digest-only SHA-256 one and the store
    chain does not link it (``agc runs``, ``agc show``, ``agc recover``). Call it only
    for a run whose manifest does not exist.

    Args:
        chained: the run ids the chain links, read once for a listing of many runs
            (:func:`chained_store_run_ids`); ``None`` reads the chain
            when the sidecar is a legacy one.

    Raises:
        StoreError: a sidecar or the chain is present but cannot be read (exit 3).
    """
    sidecars = _read_sidecars(store, artifact_path(run_id, "transcript"), None, {})
    if not has_legacy_sidecars(sidecars):
        return False
    return run_id not in chained if chained is not None else not _links_run(store, run_id)


def list_run_versions(store: Store, run_id: str) -> list[ObjectVersion]:
    """Every version and delete marker of the run's keys (artifact files, their
    sidecars and quarantine files, the manifest); empty when the store never held the run.

    Raises:
        RunIdInvalidError: bad run id.
        StoreError: the store cannot be listed (exit 3).
    """
    run_id = validate_run_id(run_id)
    return [
        v
        for prefix in (*(artifact_path(run_id, k) for k in ARTIFACT_KINDS), manifest_path(run_id))
        for v in store.list_versions(prefix)
    ]


# -- the whole store ------------------------------------------------------------------


@record
class RunCheck(FrozenRecord):
    """A picklable per-run check of any store for ``--all`` (``--jobs`` processes, Dask
    workers): the store (never a client or credentials), the signature rules, the
    policy, and whether the legacy shared tool-events file is in the store.

    ``keys``: the trusted keys themselves, for a check run in this process (they do not
    pickle: a worker makes them from ``trusted``, their raw bytes).
    """

    store: Store
    trusted: Mapping[str, bytes]
    require_signature: bool
    policy: VerifyPolicy
    allow_recovered: bool = False
    shared_events: bool = True
    keys: Mapping[str, Ed25519PublicKey] | None = field(default=None, compare=False)

    def __call__(self, item: RunItem) -> tuple[RunReport, RunManifest | str | None]:
        """The run's report, and the manifest it was judged by (see :func:`read_run`);
        its links in the store chain are judged once the chain is read."""
        run_id, versions, present, manifest_object = item
        keys = self.keys
        if keys is None and self.trusted:
            keys = _public_keys(self.trusted)
        report, manifest = read_run(
            self.store,
            run_id,
            trusted_keys=keys,
            require_signature=self.require_signature,
            allow_recovered=self.allow_recovered,
            policy=self.policy,
            versions=versions,
            present=present,
            bucket_findings=False,  # reported once, for the store
            manifest_object=manifest_object,
            chain=False,
            shared_events=self.shared_events,
        )
        if isinstance(manifest, RunManifest) and manifest.closed:
            # The chain check needs this digest; computed here it is computed by the
            # worker (in parallel) and travels with the pickled manifest.
            _ = manifest.digest
        return report, manifest

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["keys"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)


_KEY_CACHE: dict[tuple[tuple[str, bytes], ...], dict[str, Any]] = {}


def _public_keys(raw: Mapping[str, bytes]) -> dict[str, Any] | None:
    if not raw:
        return None
    cache_key = tuple(sorted(raw.items()))
    if cache_key not in _KEY_CACHE:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
            Ed25519PublicKey,
        )

        _KEY_CACHE[cache_key] = {k: Ed25519PublicKey.from_public_bytes(v) for k, v in raw.items()}
    return _KEY_CACHE[cache_key]


def _companion(path: str, base: str) -> bool:
    """Whether ``path`` is a sidecar or a quarantine file of the artifact at ``base``."""
    rest = path[len(base) :] if path.startswith(base) else ""
    return rest in SIDECAR_SUFFIXES.values() or _QUARANTINE_REST.fullmatch(rest) is not None


def _companion_index(paths: Iterable[str]) -> dict[str, list[str]]:
    """For every path that may be an artifact file: the listed paths that are it or its
    companions (:func:`_companion`), in the order of ``paths``.

    A path is filed under itself and under each base it is a companion of: itself minus
    a sidecar suffix, and itself minus a trailing ``.quarantine`` / ``.quarantine-N``.
    """
    index: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        bases = {path}
        bases.update(path[: -len(s)] for s in SIDECAR_SUFFIXES.values() if path.endswith(s))
        found = _QUARANTINE_TAIL.search(path)
        if found is not None:
            bases.add(path[: found.start()])
        for base in bases:
            if base == path or _companion(path, base):
                index[base].append(path)
    return dict(index)


def _parse_link(data: bytes) -> ChainEntry | None:
    try:
        raw = strict_json.loads(data)
        entry = ChainEntry(
            position=raw["position"],
            run_id=raw["run_id"],
            manifest_digest=raw["manifest_digest"],
            prev=raw["prev"],
        )
    except (JsonInvalidError, KeyError, TypeError):
        return None
    if not (
        isinstance(entry.position, int)
        and not isinstance(entry.position, bool)
        and isinstance(entry.run_id, str)
        and isinstance(entry.manifest_digest, str)
        and (entry.prev is None or isinstance(entry.prev, str))
        and set(raw) == {"position", "run_id", "manifest_digest", "prev"}
    ):
        return None
    try:
        validate_run_id(entry.run_id)
    except Exception:
        return None
    return entry
