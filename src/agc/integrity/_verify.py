"""The run verifier: is a run's evidence complete and untouched?

``check_run`` returns a :class:`RunReport` and never raises on findings; ``verify_run``
raises :class:`~agc.errors.VerificationError` when the report is not complete. The report
answers ``complete`` (computed from its findings) and ``missing`` (the message of every
error finding, "transcript checksum mismatch" …), and holds the structured findings
with stable codes (:data:`RunFindingCode`).

The work is split in two: :func:`observe_artifact` is the only part that reads files
(streamed, memory flat); :func:`judge_artifact` is pure and turns an observation plus the
manifest entry into findings.

The findings and their codes are judged in :mod:`agc.integrity._judge` (its table of
codes is the one ``docs/format.md`` documents).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Container, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from agc._core.digest import (
    ALGORITHMS,
    Algorithm,
    digest_bytes,
    digest_fd,
    digests_equal,
)
from agc._core.folderstore import FolderStore
from agc._core.fs import open_nofollow
from agc._core.report import Finding
from agc._core.sidecar import Sidecar, read_sidecars
from agc._core.signature_rule import signature_required
from agc._core.storage import Store
from agc._core.store import (
    ARTIFACT_KINDS,
    ArtifactKind,
    StoreArg,
    StoreLayout,
    open_store,
    validate_run_id,
)
from agc.errors import (
    ManifestInvalidError,
    StoreError,
    UnsafePathError,
    VerificationError,
)
from agc.integrity._chain import pending_link, run_links
from agc.integrity._judge import (
    ArtifactReport,
    RunFindingCode,
    RunReport,
    _prefix_digests,
    changed_lines,
    closest_run_id,
    judge_artifact,
    judge_run,
    run_missing_report,
    sealed_bytes_differ,
)
from agc.integrity._legacy import (
    chain_links_run,
    count_legacy_tool_events,
    detect_legacy_run,
)
from agc.integrity._manifest import ArtifactSeal, RunManifest
from agc.integrity._observation import ArtifactObservation
from agc.integrity._quarantine import judge_quarantine, quarantine_name
from agc.integrity._run_chain import judge_run_links
from agc.integrity._store_io import (
    archived_manifest_path,
    iter_json_objects,
    read_archived_manifest,
    read_manifest,
)

if TYPE_CHECKING:
    # cryptography is imported only when a signature is actually checked: agc-verify
    # gates CI and pays its import time on every run. Checkpoints likewise, only for
    # a file that is not sealed for good.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from agc._core.checkpoint import Checkpoint, PrefixCheck, ReadAt

_Finding: TypeAlias = Finding[RunFindingCode]

__all__ = [
    "ArtifactObservation",
    "ArtifactReport",
    "Finding",
    "RunFindingCode",
    "RunReport",
    "check_run",
    "judge_artifact",
    "observe_artifact",
    "read_tool_events",
    "verify_run",
]


# -- observation (I/O) ----------------------------------------------------------------


def observe_artifact(
    path: Path,
    kind: ArtifactKind,
    *,
    seal: ArtifactSeal | None,
    listed: Container[str] | None = None,
) -> ArtifactObservation:
    """Read what is on disk for one artifact: file type, length, digest, sidecars.

    The file is opened without following symlinks; a file of at most
    :data:`IN_MEMORY_BYTES` is read in one call and judged from those bytes, a larger
    one is streamed (memory stays flat). Either way the facts are the same.
    Lines are counted only when the digest does not match the seal or there is no seal.
    ``listed``: the names in the file's folder from an earlier listing (sidecars not
    among them are not looked for).

    Raises:
        StoreError: a file exists but cannot be read (a sidecar too: see
            :mod:`agc._core.sidecar` for the one rule every sidecar reader follows).
    """
    sidecars = read_sidecars(path, listed=listed)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return ArtifactObservation(kind, path, "absent", sidecars=sidecars)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    if stat.S_ISLNK(mode):
        return ArtifactObservation(kind, path, "symlink", sidecars=sidecars)
    if not stat.S_ISREG(mode):
        return ArtifactObservation(kind, path, "other", sidecars=sidecars)
    algorithm = _choose_algorithm(seal, sidecars)
    try:
        # O_NONBLOCK: a FIFO swapped in since the lstat is not waited on for ever.
        fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    except UnsafePathError:
        return ArtifactObservation(kind, path, "symlink", sidecars=sidecars)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        # Checkpoints first, size second: a live writer writes bytes before the
        # checkpoint that covers them, so every checkpoint read here is within ``size``
        # (the other order reports a run being written as truncated).
        checkpoints = _read_checkpoints(path) if seal is None or not seal.closed else None
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            return ArtifactObservation(kind, path, "other", sidecars=sidecars)
        size = opened.st_size
        data = os.read(fd, size) if size <= IN_MEMORY_BYTES else None
        if data is not None and len(data) == size:
            facts = _facts_of_bytes(data, seal, algorithm)
        else:  # large, or shorter than fstat said (truncated meanwhile): streamed
            os.lseek(fd, 0, os.SEEK_SET)
            facts = _facts_of_fd(fd, size, seal, algorithm)
        prefix = None if checkpoints is None else _check_prefix(fd, checkpoints, size)
        digest, ends_with_newline, records, prefix_digest, segment_mismatch = facts
        located = None
        if seal is not None and sealed_bytes_differ(seal, size, digest, prefix_digest):
            # Only now, with the whole digest already wrong: a second pass over the file.
            located = changed_lines(seal, _fd_reader(fd), size)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    finally:
        os.close(fd)
    return ArtifactObservation(
        kind=kind,
        path=path,
        file_type="file",
        bytes=size,
        digest=digest,
        algorithm=algorithm,
        ends_with_newline=ends_with_newline,
        records=records if records is not None else (seal.records if seal else None),
        prefix_digest=prefix_digest,
        segment_mismatch=segment_mismatch,
        sidecars=sidecars,
        prefix=prefix,
        changed_lines=located,
    )


def _fd_reader(fd: int) -> ReadAt:
    return lambda length, offset: os.pread(fd, length, offset)


IN_MEMORY_BYTES: Final = 1 << 20
"""Files up to this size (most of a store: small runs) are read whole, in one call, and
hashed, counted and compared from memory; larger ones are streamed (memory flat)."""

# digest, ends with a newline, records (None: not counted), prefix digest, changed segment
_Facts: TypeAlias = tuple[str, bool, "int | None", "str | None", "Mapping[str, Any] | None"]


def _facts_of_fd(fd: int, size: int, seal: ArtifactSeal | None, algorithm: Algorithm) -> _Facts:
    """The facts of the first ``size`` bytes of ``fd`` (positioned at 0), streamed."""
    digest, _ = digest_fd(fd, algorithm, limit=size)
    ends_with_newline = size == 0 or os.pread(fd, 1, size - 1) == b"\n"
    matches_seal = seal is not None and digests_equal(seal.digest, digest)
    records = None if matches_seal else _count_lines(fd, size)
    segment_mismatch = prefix_digest = None
    if seal is not None:
        segment_mismatch = _first_changed_segment(seal, size, _fd_reader(fd))
        if not matches_seal and size > seal.bytes:
            os.lseek(fd, 0, os.SEEK_SET)
            prefix_digest = digest_fd(fd, seal.algorithm, limit=seal.bytes)[0]
    return digest, ends_with_newline, records, prefix_digest, segment_mismatch


def _facts_of_bytes(data: bytes, seal: ArtifactSeal | None, algorithm: Algorithm) -> _Facts:
    """:func:`_facts_of_fd` for a file read whole into ``data``."""
    size = len(data)
    digest = digest_bytes(data, algorithm)
    ends_with_newline = size == 0 or data[-1] == 0x0A
    matches_seal = seal is not None and digests_equal(seal.digest, digest)
    records = None if matches_seal else data.count(b"\n")
    segment_mismatch = prefix_digest = None
    if seal is not None:
        view = memoryview(data)
        segment_mismatch = _first_changed_segment(
            seal, size, lambda length, offset: view[offset : offset + length]
        )
        if not matches_seal and size > seal.bytes:
            prefix_digest = digest_bytes(view[: seal.bytes], seal.algorithm)
    return digest, ends_with_newline, records, prefix_digest, segment_mismatch


def _check_prefix(fd: int, checkpoints: list[Checkpoint], size: int) -> PrefixCheck:
    from agc._core.checkpoint import check_prefix  # noqa: PLC0415 - see TYPE_CHECKING

    return check_prefix(fd, checkpoints, size=size)


def _read_checkpoints(path: Path) -> list[Checkpoint]:
    from agc._core.checkpoint import read_checkpoints  # noqa: PLC0415 - see TYPE_CHECKING

    try:
        return read_checkpoints(path)[0]
    except UnsafePathError:
        return []  # not a checkpoint file: nothing of the file counts as verified


def _first_changed_segment(seal: ArtifactSeal, size: int, read: ReadAt) -> Mapping[str, Any] | None:
    """The first earlier segment (of a re-opened file) whose prefix no longer hashes to
    the digest it was sealed with, or lies past the file's ``size``; ``None`` when every
    one matches (the rule of :func:`~agc._core.checkpoint.check_prefix_read`).

    ``read(length, offset)``: the file's bytes, as for :func:`changed_lines`.
    """
    if not seal.segments:
        return None
    from agc._core.checkpoint import check_prefix_read  # noqa: PLC0415 - see TYPE_CHECKING

    pairs = _prefix_digests(seal, segments_only=True)
    check = check_prefix_read(read, [c for c, _ in pairs], size=size)
    stop = check.mismatch or check.beyond_end
    return None if stop is None else next(m for c, m in pairs if c is stop)


def _choose_algorithm(
    seal: ArtifactSeal | None, sidecars: Mapping[Algorithm, Sidecar | str]
) -> Algorithm:
    if seal is not None:
        return seal.algorithm
    for algorithm in ALGORITHMS:
        if algorithm in sidecars:
            return algorithm
    return "blake3"


def _count_lines(fd: int, size: int) -> int:
    """Newlines in the first ``size`` bytes (a live writer may be appending after them)."""
    count = position = 0
    while position < size and (chunk := os.pread(fd, min(8 << 20, size - position), position)):
        count += chunk.count(b"\n")
        position += len(chunk)
    return count


# -- judgement (pure) -----------------------------------------------------------------


# -- the run ----------------------------------------------------------------------------


def check_run(
    run_id: str,
    store: StoreArg | Store = None,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
    allow_recovered: bool = False,
) -> RunReport:
    """Check one run's evidence and return a report; never raises on findings.

    Args:
        run_id: the run id (validated first: ``RunIdInvalidError``, nothing touched).
        store: the store folder (``--store`` / ``$AGC_HOME`` / ``~/.agc``).
        trusted_keys: Ed25519 public keys by key id. With any, every run must carry a
            valid signature by one of them: an unsigned run (a stripped signature, a
            legacy-format store, a segment sealed without the key, a fabricated run)
            is incomplete (``unsigned``), a bad one ``bad-signature``, another key's
            ``unknown-key``.
        require_signature: the explicit spelling of that rule; without trusted keys it
            makes every run incomplete (``unknown-key``: nothing to check against).
        allow_unsigned: with trusted keys, let an unsigned run pass (signed runs are
            still checked). The only way to relax the rule.
        allow_recovered: let a run that ``agc recover`` sealed with bytes no crash
            checkpoint vouched for pass (its ``recovered`` finding is then a warning).

    Raises:
        RunIdInvalidError: bad run id.
        UsageError: ``require_signature`` and ``allow_unsigned`` together.
        StoreError: the store or a file in it cannot be read (exit 3).

    ``store`` may be an object store (``s3://bucket/prefix``), or any
    :class:`~agc._core.storage.Store` (one in memory, in tests): its objects are streamed
    and hashed as they are read, and what only a versioned store shows (newer versions,
    delete markers, retention) is reported too (:mod:`agc.integrity._run_reader`).
    """
    opened = open_store(store)
    if not isinstance(opened, FolderStore):
        from agc.integrity._run_reader import check_object_run  # noqa: PLC0415 - not a folder

        return check_object_run(
            opened,
            run_id,
            trusted_keys=trusted_keys,
            require_signature=require_signature,
            allow_unsigned=allow_unsigned,
            allow_recovered=allow_recovered,
        )
    require_signature = signature_required(
        trusted_keys, require_signature=require_signature, allow_unsigned=allow_unsigned
    )
    run_id = validate_run_id(run_id)
    report, _ = check_folder_run(
        run_id,
        StoreLayout(opened.root),
        trusted_keys=trusted_keys,
        require_signature=require_signature,
        allow_recovered=allow_recovered,
    )
    return report


def check_folder_run(
    run_id: str,
    layout: StoreLayout,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None,
    require_signature: bool,
    listed: Mapping[ArtifactKind, Container[str]] | None = None,
    shared_events: bool = True,
    allow_recovered: bool = False,
    chain: bool = True,
) -> tuple[RunReport, RunManifest | str | None]:
    """:func:`check_run` on a folder store, with the manifest it judged the run by.

    The run is judged against its links in the store chain too (``replaced``,
    ``deleted``, ``unchained``: :mod:`agc.integrity._run_chain`) unless ``chain`` is
    false: ``agc-verify --all`` reads the chain once and judges every run's links
    itself.

    ``agc-verify --all`` judges the store chain against that same manifest, read once.
    The second member is the manifest, ``None`` when the run has none, or why it is
    unusable (a ``manifest-invalid`` or ``not-regular-file`` finding of the report).
    ``listed`` (names in each artifact folder) and ``shared_events`` (the legacy shared
    tool-events file is in the store) come from the listing ``--all`` took: what it did
    not list is not looked for, and the store folder is known to be there (it is looked
    at again only for a run of which nothing is found).

    Raises:
        RunIdInvalidError, StoreError: as :func:`check_run`.
    """
    if listed is None and not os.path.lexists(layout.root):
        # No store at all holds no run either: the same verdict as an empty store
        # (``run-missing``, exit 1), not an unreadable one.
        absent = [
            observe_artifact(layout.artifact_path(run_id, kind), kind, seal=None)
            for kind in ARTIFACT_KINDS
        ]
        return _run_missing(run_id, layout, absent, store_exists=False), None
    if listed is None and not layout.root.is_dir():
        raise StoreError(f"store {layout.root} is not a folder")
    findings: list[_Finding] = []
    manifest: RunManifest | None = None
    try:
        manifest = read_manifest(layout, run_id)
    except ManifestInvalidError as exc:
        findings.append(
            Finding("manifest-invalid", f"run manifest invalid: {exc.message}", artifact="manifest")
        )
    except UnsafePathError:
        findings.append(
            Finding(
                "not-regular-file", "run manifest is a symlink or not a file", artifact="manifest"
            )
        )
    judged: RunManifest | str | None = findings[0].message if findings else manifest

    observations: list[ArtifactObservation] = []
    for kind in ARTIFACT_KINDS:
        seal = manifest.artifacts.get(kind) if manifest else None
        path = layout.artifact_path(run_id, kind)
        names = listed[kind] if listed is not None else None
        observations.append(observe_artifact(path, kind, seal=seal, listed=names))

    # Records naming the run in the legacy shared file are never part of it: reported
    # as unverified, for legacy and agc runs alike.
    shared_records = count_legacy_tool_events(layout, run_id) if shared_events else 0
    legacy = None
    if manifest is None and not findings:
        legacy, downgrade = detect_legacy_run(
            observations[0],
            linked=partial(chain_links_run, layout, run_id),
            shared_records=shared_records,
        )
        findings.extend(downgrade)
    if (
        manifest is None
        and not findings
        and not shared_records
        and all(o.file_type == "absent" and not o.sidecars for o in observations)
    ):
        exists = listed is None or os.path.lexists(layout.root)
        missing = _run_missing(run_id, layout, observations, store_exists=exists)
        return (_judge_links(missing, layout, None) if chain else missing), None
    quarantines = {
        seal.kind: _check_quarantine(obs.path, seal)
        for obs in observations
        if (seal := manifest.artifacts.get(obs.kind) if manifest else None) is not None
        and seal.quarantine is not None
    }
    report = judge_run(
        run_id,
        str(layout.root),
        [(obs, str(obs.path)) for obs in observations],
        manifest,
        findings,
        legacy=legacy,
        quarantines=quarantines,
        shared_records=shared_records,
        trusted_keys=trusted_keys,
        require_signature=require_signature,
        allow_recovered=allow_recovered,
    )
    if chain:
        report = _judge_links(report, layout, judged)
    return report, judged


def _judge_links(
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


def _run_missing(
    run_id: str,
    layout: StoreLayout,
    observations: list[ArtifactObservation],
    *,
    store_exists: bool = True,
) -> RunReport:
    """The report on a run of which the store holds nothing at all: one finding, which
    every artifact shares (none of them is there). When the store holds a run of a
    close id (a typo), the message asks "did you mean" it."""
    where = "" if store_exists else " (the store folder does not exist)"
    close = _close_run_id(run_id, layout) if store_exists else None
    return run_missing_report(
        run_id, str(layout.root), [(o.kind, str(o.path)) for o in observations], close, where
    )


def _close_run_id(run_id: str, layout: StoreLayout) -> str | None:
    """The stored run id most like ``run_id`` (``difflib`` ratio at least
    :data:`CLOSE_ID_RATIO`, ties to the greater id: ``difflib.get_close_matches``'s
    answer when at most :data:`CLOSE_ID_COMPARISONS` ids pass its quick tests), or
    ``None``; a store that cannot be listed has none (the finding stands without a
    suggestion)."""
    from agc.integrity._runs import stored_run_ids  # noqa: PLC0415 - only when missing

    try:
        stored = stored_run_ids(FolderStore(layout.root))
    except StoreError:
        return None
    return closest_run_id(run_id, stored)


def _check_quarantine(path: Path, seal: ArtifactSeal) -> list[_Finding]:
    """The torn bytes ``agc recover`` moved beside a file: present and as sealed."""
    kind, name = seal.kind, quarantine_name(seal)
    target = path.with_name(name)
    try:
        fd = open_nofollow(target, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return judge_quarantine(seal, None)
    except UnsafePathError:
        return [
            Finding(
                "not-regular-file", f"{kind} quarantine file {name} is a symlink", artifact=kind
            )
        ]
    except OSError as exc:
        raise StoreError(f"cannot read {target}: {exc.strerror}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return [
                Finding(
                    "not-regular-file",
                    f"{kind} quarantine file {name} is not a file",
                    artifact=kind,
                )
            ]
        observed = digest_fd(fd, seal.algorithm)
    except OSError as exc:
        raise StoreError(f"cannot read {target}: {exc.strerror}") from exc
    finally:
        os.close(fd)
    return judge_quarantine(seal, observed)


def verify_run(
    run_id: str,
    store: StoreArg = None,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
    allow_recovered: bool = False,
) -> RunReport:
    """Like :func:`check_run`, but raise when the run is not complete.

    Raises:
        VerificationError: the report has error findings (``exc.report`` holds it).
        RunIdInvalidError, UsageError, StoreError: as :func:`check_run`.
    """
    report = check_run(
        run_id,
        store,
        trusted_keys=trusted_keys,
        require_signature=require_signature,
        allow_unsigned=allow_unsigned,
        allow_recovered=allow_recovered,
    )
    if not report.complete:
        raise VerificationError(
            f"run {run_id} is incomplete: " + "; ".join(report.missing), report=report
        )
    return report


def read_tool_events(
    run_id: str,
    store: str | os.PathLike[str] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield the records of the run's own tool-events file (what ``check_run`` verifies).

    Records naming the run in the legacy shared ``audit/tool-events.jsonl`` are NOT
    yielded: no seal covers them (``check_run`` reports them as ``unverified-records``);
    :func:`~agc.integrity.read_legacy_tool_events` reads them for a caller who asks.
    Lines that are not JSON objects are skipped here (the verifier, not this reader,
    reports damage).

    Raises:
        RunIdInvalidError: bad run id.
        UnsafePathError: the file is a symlink.
        StoreError: it is not a regular file (a FIFO, a folder) or cannot be read.
    """
    layout = StoreLayout.at(store)
    yield from iter_json_objects(layout.artifact_path(run_id, "tool-events"))
