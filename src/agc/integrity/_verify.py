"""The run verifier: is a run's evidence complete and untouched?

``check_run`` returns a :class:`RunReport` and never raises on findings; ``verify_run``
raises :class:`~agc.errors.VerificationError` when the report is not complete. The report
answers ``complete`` (computed from its findings) and ``missing`` (the message of every
error finding, "transcript checksum mismatch" …), and holds the structured findings
with stable codes (:data:`RunFindingCode`).

The work is split in two: :func:`observe_artifact` is the only part that reads files
(streamed, memory flat); :func:`judge_artifact` is pure and turns an observation plus the
manifest entry into findings.

Finding codes (stable, documented in ``docs/format.md``):

========================  ==============================================================
``run-missing``           the store holds nothing of the run: no manifest, no file, no
                          chain link (a mistyped run id, the wrong store, or no store
                          folder at all)
``missing``               the file was never written (no manifest entry, no file)
``deleted``               the manifest sealed the file but it is gone; or (run level)
                          the store chain links the run but its manifest is gone
``modified``              same length, different digest (or digest differs, length unknown)
``truncated``             shorter than sealed
``extended``              the sealed bytes are intact and more bytes follow them
``torn-tail``             the last line is unterminated (a crash mid-write)
``unsealed``              the file exists but was never sealed (no sidecar, no manifest)
``sidecar-missing``       the manifest sealed the file but its sidecar is gone
``sidecar-invalid``       the sidecar is malformed, names another file, or disagrees
                          with the manifest
``manifest-missing``      sidecars exist but the run manifest does not
``manifest-invalid``      the manifest is damaged or belongs to another run
``replaced``              the run's manifest is not the one its chain link recorded (its
                          files were replaced: deleted and written again, or copied in)
``unchained``             a closed manifest that the store chain does not link
``empty``                 the transcript holds no records (never complete)
``not-regular-file``      a symlink or other non-file stands where a file should
``unexpected``            a sidecar of an algorithm the manifest does not use
``legacy-format``         (warning) a legacy store: digest-only SHA-256 sidecar, no
                          manifest (see :mod:`agc.integrity._legacy`)
``unverified-records``    (warning) records naming the run in the legacy shared
                          ``audit/tool-events.jsonl``: no seal covers them
``recovered``             sealed by ``agc recover`` after a crash: an error when bytes
                          no crash checkpoint vouched for were sealed (or the count is
                          unknown), unless recovered runs are allowed; else a warning
``bad-signature``         the manifest's signature does not verify
``unknown-key``           the manifest is signed by a key that is not trusted
``unsigned``              no signature, and one is required (trusted keys were given,
                          or ``require_signature``; ``allow_unsigned`` relaxes it)
``signature-not-verified`` (warning) signed, but no trusted key was given to check it
========================  ==============================================================

``unsealed`` (a crash before ``close()``) carries the verified prefix: the bytes and
records up to the last checkpoint that matches, and the unverified tail after it; a
prefix that does not match its checkpoint is ``modified``, one shorter than a checkpoint
``truncated``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, get_args

from agc._core.digest import (
    ALGORITHMS,
    Algorithm,
    digest_bytes,
    digest_fd,
    digests_equal,
)
from agc._core.fs import open_nofollow
from agc._core.report import Finding, Report
from agc._core.sidecar import Sidecar, read_sidecars, sidecar_name
from agc._core.signature_rule import judge_trust, signature_required
from agc._core.store import (
    ARTIFACT_KINDS,
    ArtifactKind,
    StoreArg,
    StoreLayout,
    folder_store,
    remote_store,
    validate_run_id,
)
from agc.errors import (
    ManifestInvalidError,
    ReportInvalidError,
    StoreError,
    UnsafePathError,
    VerificationError,
)
from agc.integrity._chain import pending_link, run_links
from agc.integrity._legacy import (
    LegacyFindingCode,
    count_legacy_tool_events,
    detect_legacy_run,
    unverified_records_finding,
)
from agc.integrity._manifest import ArtifactSeal, RunManifest
from agc.integrity._quarantine import judge_quarantine, quarantine_name
from agc.integrity._s3_findings import ObjectStoreFindingCode
from agc.integrity._store_io import (
    archived_manifest_path,
    iter_json_objects,
    read_archived_manifest,
    read_manifest,
)
from agc.integrity._verdict import Verdict, verdict_of

if TYPE_CHECKING:
    from collections.abc import Iterable

    # cryptography is imported only when a signature is actually checked: agc-verify
    # gates CI and pays its import time on every run. Checkpoints likewise, only for
    # a file that is not sealed for good.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from agc._core.checkpoint import Checkpoint, PrefixCheck, ReadAt

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

RunFindingCode = Literal[
    "run-missing",
    "missing",
    "deleted",
    "modified",
    "truncated",
    "extended",
    "torn-tail",
    "unsealed",
    "sidecar-missing",
    "sidecar-invalid",
    "manifest-missing",
    "manifest-invalid",
    "replaced",
    "unchained",
    "empty",
    "not-regular-file",
    "unexpected",
    "recovered",
    "bad-signature",
    "unknown-key",
    "unsigned",
    "signature-not-verified",
    LegacyFindingCode,
    ObjectStoreFindingCode,
]
"""The finding codes of a run report (documented in ``docs/format.md``)."""

_Finding: TypeAlias = Finding[RunFindingCode]


@dataclass(frozen=True)
class ArtifactObservation:
    """What is on disk for one artifact, gathered by :func:`observe_artifact`.

    Attributes:
        kind: the artifact kind.
        path: the artifact file's path.
        file_type: ``"file"``, ``"absent"``, ``"symlink"`` or ``"other"``.
        bytes: file length in bytes (``None`` unless a regular file).
        digest: digest of the whole file with ``algorithm`` (``None`` if not hashed).
        algorithm: the algorithm used for ``digest``.
        ends_with_newline: True if the file is empty or its last byte is ``\\n``.
        records: number of ``\\n``-terminated lines, counted only when needed.
        segment_mismatch: the first earlier segment (of a re-opened file) whose prefix no
            longer hashes to the digest it was sealed with.
        prefix_digest: digest of the first ``expected bytes`` when the file is longer
            than its seal (tells "extended" from "modified").
        sidecars: parsed sidecar (or the error text) by algorithm, for sidecars present.
        prefix: the file checked against its crash checkpoints (unsealed files only).
        changed_lines: when the sealed bytes differ, the 1-based range of lines
            ``(first, last)`` between two of the seal's prefix digests where the first
            change lies (see :func:`changed_lines`).
    """

    kind: ArtifactKind
    path: Path
    file_type: Literal["file", "absent", "symlink", "other"]
    bytes: int | None = None
    digest: str | None = None
    algorithm: Algorithm | None = None
    ends_with_newline: bool = True
    records: int | None = None
    prefix_digest: str | None = None
    segment_mismatch: Mapping[str, Any] | None = None
    sidecars: Mapping[Algorithm, Sidecar | str] = field(default_factory=dict)
    prefix: PrefixCheck | None = None
    changed_lines: tuple[int, int] | None = None


@dataclass(frozen=True)
class ArtifactReport(Report[RunFindingCode]):
    """Per-artifact outcome, an entry of a :class:`RunReport`.

    Attributes:
        kind: the artifact kind; ``path``: its file.
        findings: the findings about this artifact (they are also in the run's report).
        algorithm, digest, bytes, records: what was verified (``None`` where not known).
        legacy: the run is in the legacy store format.
    """

    CODES = frozenset(get_args(RunFindingCode))

    kind: ArtifactKind
    path: str
    findings: tuple[_Finding, ...]
    algorithm: str | None
    digest: str | None
    bytes: int | None
    records: int | None
    legacy: bool = False

    @property
    def ok(self) -> bool:
        """True when the artifact has no error finding."""
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (an entry of the run report: no ``schema_version`` of its own)."""
        return self._members()

    def _members(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "ok": self.ok,
            "algorithm": self.algorithm,
            "digest": self.digest,
            "bytes": self.bytes,
            "records": self.records,
            "legacy": self.legacy,
        }


_FINDING_KEYS: Final = ("code", "artifact", "severity", "message", "expected", "actual")


def finding_json(finding: _Finding) -> dict[str, Any]:
    """A run finding as JSON: its fixed members, and ``lines`` (``[first, last]``) when
    the finding names where a change begins."""
    data = finding.to_dict(_FINDING_KEYS)
    if finding.lines is not None:
        data["lines"] = list(finding.lines)
    return data


@dataclass(frozen=True)
class RunReport(Report[RunFindingCode]):
    """The verdict on one run.

    Attributes:
        run_id: the run.
        store: the store folder.
        findings: every finding, errors and warnings.
        artifacts: one report per artifact kind.
        manifest: whether a valid manifest was found.
        legacy: True for a run in the legacy store format (:mod:`agc.integrity._legacy`).
        signature: ``signature-valid``, ``bad-signature``, ``unknown-key``, ``unsigned``,
            or ``not-checked`` (signed, but no trusted key was given).
        key_id: the key id named by the manifest's signature, if any.

    Raises:
        ReportInvalidError: an artifact's finding is not among the run's findings.
    """

    CODES = frozenset(get_args(RunFindingCode))

    run_id: str
    store: str
    findings: tuple[_Finding, ...]
    artifacts: tuple[ArtifactReport, ...]
    manifest: bool
    legacy: bool = False
    signature: str = "unsigned"
    key_id: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        known = {id(f) for f in self.findings}
        if any(id(f) not in known for a in self.artifacts for f in a.findings):
            raise ReportInvalidError("an artifact's finding is missing from the run's findings")

    @property
    def complete(self) -> bool:
        """True only if every artifact is present, sealed and matches, and the transcript
        holds at least one record: no error finding."""
        return not self.errors

    @property
    def missing(self) -> tuple[str, ...]:
        """The message of every error finding, in order."""
        return tuple(f.message for f in self.errors)

    @property
    def verdict(self) -> Verdict:
        """The verdict a person reads: ``complete``, or the code of the most severe
        error finding, with its category (:mod:`agc.integrity._verdict`)."""
        return verdict_of(self.findings)

    def _members(self) -> dict[str, Any]:
        verdict = self.verdict
        return {
            "run_id": self.run_id,
            "store": self.store,
            "complete": self.complete,
            "verdict_word": verdict.word,
            "verdict_category": verdict.category,
            "missing": list(self.missing),
            "findings": [finding_json(f) for f in self.findings],
            "artifacts": [a.to_dict() for a in self.artifacts],
            "manifest": self.manifest,
            "legacy": self.legacy,
            "signature": self.signature,
            "key_id": self.key_id,
        }


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


def sealed_bytes_differ(
    seal: ArtifactSeal, size: int, digest: str, prefix_digest: str | None
) -> bool:
    """Whether the file no longer holds the sealed bytes unchanged at its start (it is
    not shorter than sealed: that is truncation). ``digest``: of the whole file;
    ``prefix_digest``: of its first ``seal.bytes`` bytes when it is longer."""
    if size < seal.bytes:
        return False
    if size == seal.bytes:
        return not digests_equal(seal.digest, digest)
    return prefix_digest is None or not digests_equal(seal.digest, prefix_digest)


def changed_lines(seal: ArtifactSeal, read: ReadAt, size: int) -> tuple[int, int]:
    """Where the first change to a sealed file lies, as a 1-based range of lines.

    The seal's prefix digests (the earlier segments of a re-opened file and the
    checkpoints taken while it was written, each at a record boundary) split the file
    into stretches of whole lines; the first prefix whose digest differs ends the
    stretch that holds the first changed byte. With none differing it is the stretch
    after the last one, up to the seal's last record. A file sealed without checkpoints
    is one stretch: ``(1, records)``.

    Args:
        seal: the artifact's seal.
        read: ``read(length, offset)`` of the file's bytes, offsets in increasing order
            (see :func:`agc._core.checkpoint.check_prefix_read`).
        size: the file's length in bytes.

    Raises:
        OSError: reading failed.
    """
    from agc._core.checkpoint import check_prefix_read  # noqa: PLC0415 - see TYPE_CHECKING

    newlines_before: dict[int, int] = {0: 0}  # offset read up to -> newlines before it
    total = reached = 0

    def counting(length: int, offset: int) -> bytes | memoryview:
        nonlocal total, reached
        chunk = read(length, offset)
        if offset == reached:  # each byte counted once (reads go forward)
            total += (chunk if isinstance(chunk, bytes) else bytes(chunk)).count(b"\n")
            reached += len(chunk)
            newlines_before[reached] = total
        return chunk

    check = check_prefix_read(counting, [c for c, _ in _prefix_digests(seal)], size=size)
    # Line numbers are the file's own (its newlines before an offset), never the records
    # a checkpoint claims: a forged count cannot move the range off the bytes it names.
    first = newlines_before.get(check.verified_bytes, check.verified_records) + 1
    stop = check.mismatch or check.beyond_end
    if check.mismatch is not None:
        last = newlines_before.get(check.mismatch.bytes, check.mismatch.records)
    else:
        last = seal.records if stop is None else stop.records
    return first, max(first, last)


def _prefix_digests(
    seal: ArtifactSeal, *, segments_only: bool = False
) -> list[tuple[Checkpoint, Mapping[str, Any]]]:
    """The seal's prefix digests as checkpoints, each with the manifest member it came
    from: its earlier segments and (unless ``segments_only``) its checkpoints."""
    from agc._core.checkpoint import Checkpoint  # noqa: PLC0415 - see TYPE_CHECKING

    members = [*seal.segments, *(() if segments_only else seal.checkpoints)]
    return [
        (
            Checkpoint(
                records=member["records"],
                bytes=member["bytes"],
                algorithm=seal.algorithm,
                digest=str(member["digest"]),
                ts=0,
            ),
            member,
        )
        for member in members
    ]


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


def judge_artifact(
    obs: ArtifactObservation,
    *,
    seal: ArtifactSeal | None,
    manifest_present: bool = False,
) -> list[_Finding]:
    """Turn an observation and the manifest's seal into findings. Pure.

    Args:
        obs: what is on disk.
        seal: the manifest's entry for this artifact, if any.
        manifest_present: the run has a manifest (so a sealed artifact must be in it).
    """
    kind = obs.kind
    findings: list[_Finding] = []
    expected = _seal_facts(seal)

    if obs.file_type == "symlink":
        return [Finding("not-regular-file", f"{kind} is a symlink (not followed)", artifact=kind)]
    if obs.file_type == "other":
        return [Finding("not-regular-file", f"{kind} is not a regular file", artifact=kind)]
    if obs.file_type == "absent":
        if seal is not None:
            return [
                Finding(
                    "deleted",
                    f"{kind} file missing (deleted after sealing)",
                    artifact=kind,
                    expected=expected,
                )
            ]
        return [Finding("missing", f"{kind} file missing", artifact=kind)]

    actual = {"digest": obs.digest, "bytes": obs.bytes, "records": obs.records}
    sidecar = _judge_sidecars(obs, seal, findings)

    if seal is None and sidecar is None:
        findings.append(_judge_unsealed(obs, actual))
    elif seal is not None and not seal.closed:
        findings.extend(_judge_reopened(obs, seal, expected, actual))
    elif seal is not None:
        findings.extend(_judge_against_seal(obs, seal, expected, actual))
    elif sidecar is not None and obs.digest is not None:
        if manifest_present:
            findings.append(
                Finding(
                    "unsealed",
                    f"{kind} has a sidecar but no entry in the run manifest "
                    "(interrupted while sealing?)",
                    artifact=kind,
                    actual=actual,
                )
            )
        if not digests_equal(sidecar.digest, obs.digest):
            findings.append(
                Finding(
                    "modified",
                    f"{kind} checksum mismatch",
                    artifact=kind,
                    expected={"digest": sidecar.digest},
                    actual=actual,
                )
            )

    if obs.segment_mismatch is not None and not any(f.code == "modified" for f in findings):
        findings.append(
            Finding(
                "modified",
                f"{kind}: an earlier segment ({obs.segment_mismatch.get('bytes')} bytes, sealed "
                "before the file was re-opened) no longer matches its seal",
                artifact=kind,
                expected=dict(obs.segment_mismatch),
                actual=actual,
            )
        )
    if not obs.ends_with_newline and not any(f.code == "truncated" for f in findings):
        findings.append(
            Finding(
                "torn-tail", f"{kind} ends in an unterminated line", artifact=kind, actual=actual
            )
        )
    if kind == "transcript" and obs.bytes == 0:
        findings.append(Finding("empty", "transcript has no records", artifact=kind, actual=actual))
    return findings


def _unsealed_facts(
    obs: ArtifactObservation, verified_bytes: int, verified_records: int
) -> dict[str, Any]:
    size = obs.bytes or 0
    return {
        "digest": obs.digest,
        "bytes": size,
        "records": obs.records,
        "verified_bytes": verified_bytes,
        "verified_records": verified_records,
        "unverified_bytes": size - verified_bytes,
        "torn_tail": not obs.ends_with_newline,
        "checkpoints": obs.prefix.checkpoints if obs.prefix else 0,
    }


def _judge_unsealed(obs: ArtifactObservation, actual: dict[str, Any]) -> _Finding:
    """A file that was never sealed: crashed (or still being written)."""
    kind, prefix = obs.kind, obs.prefix
    if prefix is not None and prefix.mismatch is not None:
        lines = (
            prefix.verified_records + 1,
            max(prefix.verified_records + 1, prefix.mismatch.records),
        )
        return Finding(
            "modified",
            f"{kind} prefix does not match its checkpoint at {prefix.mismatch.bytes} bytes",
            artifact=kind,
            expected=prefix.mismatch.to_dict(),
            actual=actual,
            lines=lines,
        )
    if prefix is not None and prefix.beyond_end is not None:
        return Finding(
            "truncated",
            f"{kind} is shorter than its checkpoint at {prefix.beyond_end.bytes} bytes",
            artifact=kind,
            expected=prefix.beyond_end.to_dict(),
            actual=actual,
        )
    verified_bytes = prefix.verified_bytes if prefix else 0
    verified_records = prefix.verified_records if prefix else 0
    facts = _unsealed_facts(obs, verified_bytes, verified_records)
    return Finding(
        "unsealed",
        f"{kind} not sealed (no checksum sidecar): {verified_records} records "
        f"({verified_bytes} bytes) verified by checkpoints, "
        f"{facts['unverified_bytes']} bytes unverified",
        artifact=kind,
        actual=facts,
    )


def _judge_reopened(
    obs: ArtifactObservation,
    seal: ArtifactSeal,
    expected: dict[str, Any],
    actual: dict[str, Any],
) -> list[_Finding]:
    """A sealed file re-opened for a new segment: the sealed prefix must still match."""
    kind = obs.kind
    assert obs.bytes is not None
    sealed_prefix_ok = (
        obs.bytes == seal.bytes and digests_equal(seal.digest, obs.digest or "")
    ) or (
        obs.bytes > seal.bytes
        and obs.prefix_digest is not None
        and digests_equal(seal.digest, obs.prefix_digest)
    )
    if not sealed_prefix_ok:
        return _judge_against_seal(obs, replace(seal, reopened_at_ms=None), expected, actual)
    facts = _unsealed_facts(obs, seal.bytes, seal.records)
    return [
        Finding(
            "unsealed",
            f"{kind} was re-opened for a new segment that is not sealed yet: "
            f"{seal.records} records ({seal.bytes} bytes) verified by the previous seal, "
            f"{facts['unverified_bytes']} bytes unverified",
            artifact=kind,
            expected=expected,
            actual=facts,
        )
    ]


def _judge_sidecars(
    obs: ArtifactObservation, seal: ArtifactSeal | None, findings: list[_Finding]
) -> Sidecar | None:
    """Check the sidecar(s); return the one that counts, appending findings."""
    kind = obs.kind
    wanted = seal.algorithm if seal is not None else obs.algorithm
    for algorithm in obs.sidecars:
        if seal is not None and algorithm != seal.algorithm:
            findings.append(
                Finding(
                    "unexpected",
                    f"unexpected {sidecar_name(obs.path.name, algorithm)}: the run was "
                    f"sealed with {seal.algorithm}",
                    artifact=kind,
                )
            )
    parsed = obs.sidecars.get(wanted) if wanted is not None else None
    if parsed is None:
        if seal is not None:
            findings.append(
                Finding(
                    "sidecar-missing",
                    f"{kind} checksum sidecar missing",
                    artifact=kind,
                    expected={"digest": seal.digest},
                )
            )
        return None
    if isinstance(parsed, str):
        findings.append(
            Finding("sidecar-invalid", f"{kind} checksum sidecar invalid: {parsed}", artifact=kind)
        )
        return None
    if parsed.file_name is not None and parsed.file_name != obs.path.name:
        findings.append(
            Finding(
                "sidecar-invalid",
                f"{kind} checksum sidecar names {parsed.file_name!r}, not {obs.path.name!r}",
                artifact=kind,
            )
        )
    if seal is not None and not digests_equal(parsed.digest, seal.digest):
        findings.append(
            Finding(
                "sidecar-invalid",
                f"{kind} checksum sidecar disagrees with the run manifest",
                artifact=kind,
                expected={"digest": seal.digest},
                actual={"digest": parsed.digest},
            )
        )
    if seal is not None and parsed.legacy:
        findings.append(
            Finding(
                "sidecar-invalid",
                f"{kind} checksum sidecar is in the legacy format but the run has a manifest",
                artifact=kind,
            )
        )
    return parsed


def _judge_against_seal(
    obs: ArtifactObservation,
    seal: ArtifactSeal,
    expected: dict[str, Any],
    actual: dict[str, Any],
) -> list[_Finding]:
    kind = obs.kind
    assert obs.digest is not None
    assert obs.bytes is not None
    if digests_equal(seal.digest, obs.digest) and obs.bytes == seal.bytes:
        return []
    if obs.bytes < seal.bytes:
        where = "at a record boundary" if obs.ends_with_newline else "inside a record"
        return [
            Finding(
                "truncated",
                f"{kind} truncated {where} ({seal.bytes - obs.bytes} bytes gone)",
                artifact=kind,
                expected=expected,
                actual=actual,
            )
        ]
    if (
        obs.bytes > seal.bytes
        and obs.prefix_digest is not None
        and digests_equal(seal.digest, obs.prefix_digest)
    ):
        extra = (obs.records or 0) - seal.records
        return [
            Finding(
                "extended",
                f"{kind} has {extra} record(s) appended after sealing",
                artifact=kind,
                expected=expected,
                actual=actual,
            )
        ]
    return [
        Finding(
            "modified",
            f"{kind} checksum mismatch",
            artifact=kind,
            expected=expected,
            actual=actual,
            lines=obs.changed_lines,
        )
    ]


def _seal_facts(seal: ArtifactSeal | None) -> dict[str, Any]:
    if seal is None:
        return {}
    return {"digest": seal.digest, "bytes": seal.bytes, "records": seal.records}


# -- the run ----------------------------------------------------------------------------


def check_run(
    run_id: str,
    store: StoreArg = None,
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

    ``store`` may be an object store (``s3://bucket/prefix``): its objects are streamed
    and hashed as they are read, and what only object storage shows (newer versions,
    delete markers, retention) is reported too (:mod:`agc.integrity._s3_verify`).
    """
    remote = remote_store(store)
    if remote is not None:
        from agc.integrity._s3_verify import check_object_run  # noqa: PLC0415 - boto3

        return check_object_run(
            remote,
            run_id,
            trusted_keys=trusted_keys,
            require_signature=require_signature,
            allow_unsigned=allow_unsigned,
            allow_recovered=allow_recovered,
        )
    store = folder_store(store)
    require_signature = signature_required(
        trusted_keys, require_signature=require_signature, allow_unsigned=allow_unsigned
    )
    validate_run_id(run_id)
    report, _ = check_folder_run(
        run_id,
        StoreLayout.at(store),
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
            layout, run_id, observations[0], shared_records=shared_records
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
    artifact_reports: list[ArtifactReport] = []
    for obs in observations:
        seal = manifest.artifacts.get(obs.kind) if manifest else None
        own = judge_artifact(obs, seal=seal, manifest_present=manifest is not None)
        if legacy is not None:
            own = legacy.judge(obs, own)
        if seal is not None and seal.quarantine is not None:
            own.extend(_check_quarantine(obs.path, seal))
        findings.extend(own)
        artifact_reports.append(
            ArtifactReport(
                kind=obs.kind,
                path=str(obs.path),
                findings=tuple(own),
                algorithm=obs.algorithm,
                digest=obs.digest,
                bytes=obs.bytes,
                records=obs.records,
                legacy=legacy is not None,
            )
        )
    if shared_records:
        findings.append(unverified_records_finding(shared_records))

    has_modern_sidecar = any(
        isinstance(s, Sidecar) and not s.legacy for o in observations for s in o.sidecars.values()
    )
    if (
        manifest is None
        and legacy is None
        and has_modern_sidecar
        and not _has_code(findings, "manifest-invalid")
    ):
        findings.insert(0, Finding("manifest-missing", "run manifest missing", artifact="manifest"))

    status, key_id = _judge_signature(manifest, trusted_keys, require_signature, findings)
    recovered = recovered_findings(manifest, allow_recovered=allow_recovered)
    findings.extend(recovered)
    report = RunReport(
        run_id=run_id,
        store=str(layout.root),
        findings=tuple(findings),
        artifacts=tuple(with_artifact_findings(artifact_reports, recovered)),
        manifest=manifest is not None,
        legacy=legacy is not None,
        signature=status,
        key_id=key_id,
    )
    if chain:
        report = _judge_links(report, layout, judged)
    return report, judged


def _judge_links(
    report: RunReport, layout: StoreLayout, judged: RunManifest | str | None
) -> RunReport:
    """``report`` judged against the run's links in ``audit/chain.jsonl``."""
    from agc.integrity._run_chain import judge_run_links  # noqa: PLC0415 - it imports this

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


def with_artifact_findings(
    entries: Iterable[ArtifactReport], findings: Iterable[_Finding]
) -> list[ArtifactReport]:
    """``entries`` with each of ``findings`` about an artifact (its ``artifact`` is the
    entry's kind) added to that entry: a finding judged after the entries were made (a
    ``recovered`` seal, an object's versions) is the artifact's too, so an error about it
    makes its entry not ok, as any other error about the artifact does."""
    extra = list(findings)
    return [
        replace(entry, findings=(*entry.findings, *(f for f in extra if f.artifact == entry.kind)))
        for entry in entries
    ]


def recovered_findings(
    manifest: RunManifest | None, *, allow_recovered: bool = False
) -> list[_Finding]:
    """A ``recovered`` finding for each artifact ``agc recover`` sealed after a crash.

    It is an error when bytes of the file were never vouched for by a crash checkpoint
    (or an earlier seal), or when the manifest predates the counts of what was vouched
    for (then nothing is known to be vouched for), unless ``allow_recovered``; a
    warning when every byte was vouched for, or when recovered runs are allowed.
    """
    if manifest is None:
        return []
    findings: list[_Finding] = []
    for seal in manifest.artifacts.values():
        if not seal.recovered:
            continue
        torn = (seal.quarantine or {}).get("bytes", 0)
        unvouched = seal.unvouched
        if unvouched is None:
            detail = (
                "recorded by an earlier release that did not keep how much crash "
                "checkpoints vouched for, so none of its "
                f"{seal.bytes} bytes ({seal.records} records) counts as vouched for"
            )
            counts = {"unverified_bytes": seal.bytes, "unverified_records": seal.records}
        elif unvouched == (0, 0):
            detail = "every byte was vouched for by a crash checkpoint"
            counts = {"unverified_bytes": 0, "unverified_records": 0}
        else:
            detail = (
                f"{unvouched[0]} bytes ({unvouched[1]} records) were never vouched for "
                "by a crash checkpoint"
            )
            counts = {"unverified_bytes": unvouched[0], "unverified_records": unvouched[1]}
        vouched = unvouched == (0, 0)
        findings.append(
            Finding(
                "recovered",
                f"{seal.kind} was sealed by `agc recover` after a crash: {detail} "
                f"({torn} torn bytes quarantined)",
                "warning" if vouched or allow_recovered else "error",
                artifact=seal.kind,
                actual={
                    "bytes": seal.bytes,
                    "records": seal.records,
                    **counts,
                    "quarantined_bytes": torn,
                },
            )
        )
    return findings


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


def run_missing_report(
    run_id: str,
    store: str,
    paths: Iterable[tuple[ArtifactKind, str]],
    close: str | None,
    where: str = "",
) -> RunReport:
    """``run-missing``: the store (named ``store``) holds nothing of ``run_id``; each
    artifact's entry (``(kind, path)``) shares the one finding, which asks "did you
    mean" ``close`` when a stored run id is close to it."""
    guess = "" if close is None else f"; did you mean {close!r}?"
    finding: _Finding = Finding("run-missing", f"no run {run_id!r} in store {store}{where}{guess}")
    return RunReport(
        run_id=run_id,
        store=store,
        findings=(finding,),
        artifacts=tuple(
            ArtifactReport(kind, path, (finding,), None, None, None, None) for kind, path in paths
        ),
        manifest=False,
    )


CLOSE_ID_RATIO: Final = 0.6
"""How alike a stored run id must be to a missing one to be suggested: ``difflib``'s
similarity ratio (twice the matched characters over both lengths), its default cutoff."""
CLOSE_ID_COMPARISONS: Final = 100
"""At most this many stored ids are compared in full (``SequenceMatcher.ratio``, whose
cost grows with the product of the two lengths), so that a mistyped id in a store of
many runs of long, alike ids is answered at once. With more candidates than that, those
kept share the longest start and end with the id asked for (a typo leaves the rest of
an id as it was), then are most alike by their characters' counts (``quick_ratio``)."""


def _shared_ends(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share at their start plus at their end."""

    def common(x: str, y: str) -> int:
        pairs = enumerate(zip(x, y, strict=False))
        return next((i for i, (p, q) in pairs if p != q), min(len(x), len(y)))

    start = common(a, b)
    return start + common(a[start:][::-1], b[start:][::-1])


def _close_run_id(run_id: str, layout: StoreLayout) -> str | None:
    """The stored run id most like ``run_id`` (``difflib`` ratio at least
    :data:`CLOSE_ID_RATIO`, ties to the greater id: ``difflib.get_close_matches``'s
    answer when at most :data:`CLOSE_ID_COMPARISONS` ids pass its quick tests), or
    ``None``; a store that cannot be listed has none (the finding stands without a
    suggestion)."""
    from agc.integrity._runs import stored_run_ids  # noqa: PLC0415 - only when missing

    try:
        stored = stored_run_ids(layout)
    except StoreError:
        return None
    return closest_run_id(run_id, stored)


def closest_run_id(run_id: str, stored: Iterable[str]) -> str | None:
    """The id of ``stored`` most like ``run_id``, by the rule of :func:`_close_run_id`
    (any store's run ids), or ``None``."""
    import difflib  # noqa: PLC0415 - only for a run that is not there
    import heapq  # noqa: PLC0415 - same

    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(run_id)
    alike: list[tuple[float, str]] = []
    for candidate in stored:
        matcher.set_seq1(candidate)
        if matcher.real_quick_ratio() >= CLOSE_ID_RATIO:
            bound = matcher.quick_ratio()
            if bound >= CLOSE_ID_RATIO:
                alike.append((bound, candidate))
    if len(alike) > CLOSE_ID_COMPARISONS:
        alike = heapq.nlargest(
            CLOSE_ID_COMPARISONS, alike, key=lambda c: (_shared_ends(c[1], run_id), c)
        )
    best: tuple[float, str] | None = None
    for bound, candidate in sorted(alike, reverse=True):
        if best is not None and bound < best[0]:
            break  # quick_ratio bounds ratio from above: none left can beat the best
        matcher.set_seq1(candidate)
        score = (matcher.ratio(), candidate)
        if score[0] >= CLOSE_ID_RATIO and (best is None or score > best):
            best = score
    return None if best is None else best[1]


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


def _judge_signature(
    manifest: RunManifest | None,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None,
    require_signature: bool,
    findings: list[_Finding],
) -> tuple[str, str | None]:
    trust = judge_trust(
        None if manifest is None else manifest.document(),
        trusted_keys,
        required=require_signature,
    )
    # The key id is shown only when well-formed; anything else is store content.
    key_id = trust.key_id
    if trust.code == "unsigned":
        message = "run has no signed manifest" if manifest is None else "run manifest is not signed"
        findings.append(Finding("unsigned", message, artifact="manifest"))
    elif trust.reason == "no-trusted-key":
        if trust.code == "unknown-key":
            findings.append(
                Finding(
                    "unknown-key",
                    "no trusted key given to check the signature",
                    artifact="manifest",
                )
            )
        else:
            findings.append(
                Finding(
                    "signature-not-verified",
                    f"run manifest is signed (key id {key_id or '(malformed)'}) but no trusted "
                    "key was given, so the signature was not checked",
                    "warning",
                    artifact="manifest",
                )
            )
    elif trust.code == "unknown-key":
        findings.append(
            Finding(
                "unknown-key",
                f"run manifest is signed by an untrusted key {key_id or '(malformed key id)'}",
                artifact="manifest",
            )
        )
    elif trust.code == "bad-signature":
        findings.append(
            Finding("bad-signature", "run manifest signature is invalid", artifact="manifest")
        )
    return trust.status, key_id


def _has_code(findings: list[_Finding], code: str) -> bool:
    return any(f.code == code for f in findings)


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
