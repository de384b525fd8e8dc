"""Verifying evidence in object storage: one run (its objects, versions and retention).

Every object is streamed (``GetObject``) and hashed as its bytes arrive, in one pass
that also counts records, keeps the last byte and hashes the sealed prefix of a longer
object; memory stays flat. What the bytes say is judged by the same pure functions as
for a folder store (:func:`~agc.integrity._verify.judge_artifact`, the signature rules),
so a run's findings mean the same in both. On top, each object's versions, delete
markers and Object Lock retention are judged (:mod:`agc.integrity._version_findings`).

The retention policy is the one asked for (``--retention-days``/``--retention-mode``),
else the bucket's default retention rule, else none (retention is then not judged, and a
bucket without Object Lock is a warning).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias

from agc._core import json as strict_json
from agc._core.digest import ALGORITHMS, SIDECAR_SUFFIXES, Algorithm, digests_equal, new_hasher
from agc._core.report import Finding
from agc._core.sidecar import MAX_SIDECAR_BYTES, Sidecar, parse_sidecar
from agc._core.signature_rule import signature_required
from agc._core.storage import BucketLock, ObjectInfo, ObjectVersion, Retention, Store
from agc._core.store import (
    ARTIFACT_KINDS,
    ArtifactKind,
    artifact_path,
    link_path,
    manifest_path,
    validate_run_id,
)
from agc.errors import JsonInvalidError, ManifestInvalidError, SidecarInvalidError
from agc.integrity._chain import ChainEntry
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
from agc.integrity._legacy import LegacyRun, detect_legacy_run
from agc.integrity._manifest import MAX_MANIFEST_BYTES, ArtifactSeal, RunManifest
from agc.integrity._quarantine import judge_quarantine, quarantine_name
from agc.integrity._run_chain import judge_run_links
from agc.integrity._chain_objects import CHAIN_DIR, HEAD_PATH, RemoteHead
from agc.integrity._version_findings import judge_object, object_lock_finding
from agc.integrity._store_io import stored_run_ids

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = [
    "ObjectCopy",
    "ObjectRunCheck",
    "VerifyPolicy",
    "check_object_run",
    "is_legacy_object_run",
    "list_run_versions",
    "read_head_object",
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
RunItem: TypeAlias = tuple[str, Sequence[ObjectVersion], _ManifestObject]
"""A run for :class:`ObjectRunCheck`: its id, its listed versions, its manifest object."""


@dataclass(frozen=True)
class VerifyPolicy:
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


@dataclass
class _Observed:
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
) -> _Observed | None:
    """Read the object once: digest, length, lines, last byte, sealed prefix, segments
    (and every chunk into ``copy``, when given)."""
    with store.open(path) as found:
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


def _read_sidecars(
    store: Store, path: str, present: set[str] | None, infos: dict[str, ObjectInfo]
) -> dict[Algorithm, Sidecar | str]:
    found: dict[Algorithm, Sidecar | str] = {}
    for algorithm in ALGORITHMS:
        where = path + SIDECAR_SUFFIXES[algorithm]
        if present is not None and where not in present:
            continue
        got = store.get(where, max_bytes=1 << 30)
        if got is None:
            continue
        data, info = got
        infos[where] = info
        if len(data) > MAX_SIDECAR_BYTES:
            found[algorithm] = f"is larger than {MAX_SIDECAR_BYTES} bytes; one line is expected"
            continue
        try:
            found[algorithm] = parse_sidecar(data, algorithm=algorithm)
        except SidecarInvalidError as exc:
            found[algorithm] = exc.message.removeprefix("sidecar ")
    return found


def _observe(
    store: Store,
    run_id: str,
    kind: ArtifactKind,
    seal: ArtifactSeal | None,
    present: set[str] | None,
    infos: dict[str, ObjectInfo],
    copy: ObjectCopy | None = None,
) -> ArtifactObservation:
    path = artifact_path(run_id, kind)
    sidecars = _read_sidecars(store, path, present, infos)
    local = Path(path)
    algorithm: Algorithm = seal.algorithm if seal else next(iter(sidecars), "blake3")
    observed = (
        None
        if present is not None and path not in present
        else _stream(store, path, algorithm, seal, copy)
    )
    if observed is None:
        return ArtifactObservation(kind, local, "absent", sidecars=sidecars)
    infos[path] = observed.info
    matches = seal is not None and digests_equal(seal.digest, observed.digest)
    located = None
    if seal is not None and sealed_bytes_differ(
        seal, observed.size, observed.digest, observed.prefix_digest
    ):
        located = _locate(store, path, seal, observed.info.version_id)
    return ArtifactObservation(
        kind=kind,
        path=local,
        file_type="file",
        bytes=observed.size,
        digest=observed.digest,
        algorithm=algorithm,
        ends_with_newline=observed.ends_with_newline,
        records=seal.records if matches and seal else observed.records,
        prefix_digest=observed.prefix_digest,
        segment_mismatch=observed.segment_mismatch,
        sidecars=sidecars,
        changed_lines=located,
    )


def _locate(
    store: Store, path: str, seal: ArtifactSeal, version_id: str | None
) -> tuple[int, int] | None:
    """:func:`~agc.integrity._verify.changed_lines` of an object whose sealed bytes
    differ: a second ``GetObject`` of the version just read, read only up to the last
    prefix digest that tells."""
    from agc._core.checkpoint import chunk_reader  # noqa: PLC0415 - only on a mismatch

    with store.open(path, version_id=version_id) as found:
        if found is None:
            return None  # gone since the first read: the finding stays unlocated
        chunks, info = found
        return changed_lines(seal, chunk_reader(chunks), info.size)


def _check_quarantine(
    store: Store, run_id: str, seal: ArtifactSeal, infos: dict[str, ObjectInfo]
) -> list[_Finding]:
    path = artifact_path(run_id, seal.kind).rsplit("/", 1)[0] + "/" + quarantine_name(seal)
    observed = _stream(store, path, seal.algorithm, None)
    if observed is None:
        return judge_quarantine(seal, None)
    infos[path] = observed.info
    return judge_quarantine(seal, (observed.digest, observed.size))


def _label(path: str, kind: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return kind if name.endswith(".jsonl") or kind == "manifest" else f"{kind} {name}"


def check_object_run(
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
    """Check one run of an object store; never raises on findings (see the module doc).

    Args:
        store: the object store.
        run_id: the run (validated first).
        trusted_keys, require_signature, allow_unsigned, allow_recovered: as
            :func:`check_run`.
        policy: the retention policy and the bucket's lock (default: read from the
            bucket, retention = its default rule).
        versions: the versions of the run's keys, as listed (default: listed here).
        bucket_findings: report a bucket without Object Lock in this run's report
            (``--all`` reports it once, for the store).
        manifest_object: the manifest's bytes and object facts as ``--all`` already read
            them (``None``: no such object); by default it is read here.
        copies: for each artifact kind given, where the object's bytes are copied as
            they are hashed (:class:`ObjectCopy`); an artifact not read (absent, or no
            current version) leaves its copy untouched.
        chain: judge the run against its chain link (``--all`` judges every run's
            links itself, from its one read of the chain): the link object at the
            position its manifest names (one read), or, for a run without a manifest,
            every link object (a deleted run is found by its link).

    Raises:
        RunIdInvalidError, UsageError: as :func:`check_run`.
        StoreError: the store cannot be read (exit 3).
    """
    required = signature_required(
        trusted_keys, require_signature=require_signature, allow_unsigned=allow_unsigned
    )
    run_id = validate_run_id(run_id)
    policy = policy or verify_policy(store)
    if versions is None:
        versions = list_run_versions(store, run_id)
    if not versions and chain and not _object_run_links(store, run_id, None):
        # Nothing of the run, in any version, and no link names it: a mistyped id.
        return run_missing_report(
            run_id,
            store.url,
            [(k, store.url_of(artifact_path(run_id, k))) for k in ARTIFACT_KINDS],
            closest_run_id(run_id, stored_run_ids(store, artifact_files=False)),
        )
    by_path = _group(versions, store)
    present = {path for path, found in by_path.items() if _current(found)}
    infos: dict[str, ObjectInfo] = {}
    findings: list[_Finding] = []
    manifest: RunManifest | None = None
    mpath = manifest_path(run_id)
    if mpath in present:
        got = (
            store.get(mpath, max_bytes=MAX_MANIFEST_BYTES + 1)
            if isinstance(manifest_object, _Unread)
            else manifest_object
        )
        if got is not None:
            data, infos[mpath] = got
            try:
                if len(data) > MAX_MANIFEST_BYTES:
                    raise ManifestInvalidError(
                        f"manifest is larger than {MAX_MANIFEST_BYTES} bytes (damaged)"
                    )
                manifest = RunManifest.from_bytes(data, expected_run_id=run_id)
            except ManifestInvalidError as exc:
                findings.append(
                    Finding(
                        "manifest-invalid",
                        f"run manifest invalid: {exc.message}",
                        artifact="manifest",
                    )
                )
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
    # A run in the legacy format, judged as in any store (the chain here is its link
    # objects). Object storage has no legacy shared tool-events file.
    legacy: LegacyRun | None = None
    if manifest is None and not findings:
        legacy, downgrade = detect_legacy_run(
            observations[0], linked=partial(_downgraded, store, run_id), shared_records=0
        )
        findings.extend(downgrade)
    quarantines = {
        seal.kind: _check_quarantine(store, run_id, seal, infos)
        for obs in observations
        if (seal := manifest.artifacts.get(obs.kind) if manifest else None) is not None
        and seal.quarantine is not None
    }
    # What only object storage shows, key by key (in a stable order). A finding about an
    # artifact's object (its file, sidecar or quarantine) is the artifact's too: its
    # entry is then not ok, as for any other error about it.
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
        if bucket_findings and not policy.lock.enabled
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
        shared_records=0,  # object storage has no legacy shared tool-events file
        trusted_keys=trusted_keys,
        require_signature=required,
        allow_recovered=allow_recovered,
        object_findings=object_findings,
        store_findings=bucket,
    )
    if not chain or legacy is not None or any(f.code == "manifest-invalid" for f in findings):
        return report
    return judge_run_links(
        report,
        manifest,
        _object_run_links(store, run_id, manifest),
        lambda _: None,  # a run in object storage is never re-opened
        lambda position: f"{run_id}@{position}.json",
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
    got = store.get(HEAD_PATH, max_bytes=MAX_MANIFEST_BYTES + 4096)
    if got is None:
        return None
    try:
        return RemoteHead.from_bytes(got[0])
    except (ValueError, UnicodeDecodeError):
        return "damaged"


def _read_head_object(store: Store) -> RemoteHead | None:
    head = read_head_object(store)
    return head if isinstance(head, RemoteHead) else None


def is_legacy_object_run(store: Store, run_id: str) -> bool:
    """Whether a run of an object store that has no manifest is in the legacy format, as
    :func:`check_object_run` decides it, without reading the transcript: its only sidecar
    is a digest-only SHA-256 one and the store chain does not link it (``agc runs``).

    Raises:
        StoreError: the store cannot be listed or read (exit 3).
    """
    transcript = artifact_path(run_id, "transcript")
    if store.exists(f"{transcript}{SIDECAR_SUFFIXES['blake3']}"):
        return False
    with store.open(f"{transcript}{SIDECAR_SUFFIXES['sha256']}") as found:
        if found is None:
            return False
        chunks, info = found
        if info.size > MAX_SIDECAR_BYTES:
            return False  # not a usable sidecar
        data = b"".join(chunks)
    try:
        sidecar = parse_sidecar(data, algorithm="sha256")
    except SidecarInvalidError:
        return False
    return sidecar.legacy and not _downgraded(store, run_id)


def _downgraded(store: Store, run_id: str) -> bool:
    """Whether the store chain links a run that has no manifest and would be read as
    legacy: a chained run had a manifest, so its manifest was removed and its sidecars
    rewritten in the legacy format (as a folder store judges it). A link or head that
    cannot be read counts as linking it: a store with a damaged chain is not a legacy
    store.

    Raises:
        StoreError: the store cannot be listed or read (exit 3).
    """
    for path in (*sorted(store.list_paths(CHAIN_DIR)), HEAD_PATH):
        with store.open(path) as found:
            if found is None:
                continue
            chunks, info = found
            if info.size > MAX_MANIFEST_BYTES:
                return True
            data = b"".join(chunks)
        if path == HEAD_PATH:
            try:
                return RemoteHead.from_bytes(data).run_id == run_id
            except (ValueError, UnicodeDecodeError):
                return True
        entry = _parse_link(data)
        if entry is None or entry.run_id == run_id:
            return True
    return False


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


@dataclass(frozen=True)
class ObjectRunCheck:
    """A picklable per-run check for ``--all --jobs`` / Dask workers: the store (never
    its client or credentials), the signature rules and the policy."""

    store: Store
    trusted: Mapping[str, bytes]
    require_signature: bool
    policy: VerifyPolicy
    allow_recovered: bool = False

    def __call__(self, item: RunItem) -> RunReport:
        run_id, versions, manifest_object = item
        return check_object_run(
            self.store,
            run_id,
            trusted_keys=_public_keys(self.trusted),
            require_signature=self.require_signature,
            allow_recovered=self.allow_recovered,
            policy=self.policy,
            versions=versions,
            bucket_findings=False,
            manifest_object=manifest_object,
            chain=False,
        )


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
