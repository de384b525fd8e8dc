"""The run verifier: is a run's evidence complete and untouched?

``check_run`` returns a :class:`RunReport` and never raises on findings; ``verify_run``
raises :class:`~agc.errors.VerificationError` when the report is not complete. Seed 004's
``checkTranscriptIntegrity`` answered ``{complete, missing}``; the report keeps those two
fields (``missing`` holds the seed's human strings, "transcript checksum mismatch" …)
and adds structured :class:`Finding` objects with stable codes.

The work is split in two: :func:`observe_artifact` is the only part that reads files
(streamed, memory flat); :func:`judge_artifact` is pure and turns an observation plus the
manifest entry into findings.

Finding codes (stable, documented in ``docs/format.md``):

========================  ==============================================================
``run-missing``           the store holds nothing of the run: no manifest, no file, no
                          chain link (a mistyped run id, or the wrong store)
``missing``               the file was never written (no manifest entry, no file)
``deleted``               the manifest sealed the file but it is gone
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
``empty``                 the transcript holds no records (never complete)
``not-regular-file``      a symlink or other non-file stands where a file should
``unexpected``            a sidecar of an algorithm the manifest does not use
``legacy-format``         (warning) a seed-004 store: digest-only SHA-256 sidecar, no
                          manifest
``recovered``             (warning) sealed by ``agc recover`` after a crash
``bad-signature``         the manifest's signature does not verify
``unknown-key``           the manifest is signed by a key that is not trusted
``unsigned``              no signature, and ``require_signature`` was asked for
========================  ==============================================================

``unsealed`` (a crash before ``close()``) carries the verified prefix: the bytes and
records up to the last checkpoint that matches, and the unverified tail after it; a
prefix that does not match its checkpoint is ``modified``, one shorter than a checkpoint
``truncated``.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from agc._core.checkpoint import (
    CHECKPOINT_SUFFIX,
    Checkpoint,
    PrefixCheck,
    check_prefix,
    parse_checkpoints,
)
from agc._core.digest import (
    ALGORITHMS,
    SIDECAR_SUFFIXES,
    Algorithm,
    digest_fd,
    digests_equal,
)
from agc._core.fs import open_nofollow, read_small_file
from agc._core.sidecar import Sidecar, parse_sidecar
from agc._core.store import ARTIFACT_KINDS, ArtifactKind, StoreLayout, validate_run_id
from agc.errors import (
    ManifestInvalidError,
    SidecarInvalidError,
    StoreError,
    UnsafePathError,
    VerificationError,
)
from agc.integrity._chain import read_chain
from agc.integrity._manifest import ArtifactSeal, RunManifest
from agc.integrity._store_io import read_manifest

if TYPE_CHECKING:
    # cryptography is imported only when a signature is actually checked: agc-verify
    # gates CI and pays its import time on every run.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "ArtifactObservation",
    "ArtifactReport",
    "Finding",
    "RunReport",
    "check_run",
    "judge_artifact",
    "observe_artifact",
    "read_tool_events",
    "verify_run",
]

REPORT_SCHEMA_VERSION: Final = 1
Severity = Literal["error", "warning"]
_MAX_SIDECAR_BYTES: Final = 4096
_KEY_ID: Final = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Finding:
    """One thing that is wrong (or, for warnings, worth knowing) about a run.

    Attributes:
        code: stable kebab-case code (see the module docstring).
        artifact: ``"transcript"``, ``"tool-events"``, ``"manifest"`` or ``None``.
        message: the human string, e.g. ``"transcript checksum mismatch"``.
        severity: ``"error"`` makes the run incomplete; ``"warning"`` does not.
        expected: what the seal says (``digest``, ``bytes``, ``records`` …), if known.
        actual: what is on disk now, if known.
    """

    code: str
    artifact: str | None
    message: str
    severity: Severity = "error"
    expected: Mapping[str, Any] | None = None
    actual: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "artifact": self.artifact,
            "severity": self.severity,
            "message": self.message,
            "expected": dict(self.expected) if self.expected is not None else None,
            "actual": dict(self.actual) if self.actual is not None else None,
        }


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


@dataclass(frozen=True)
class ArtifactReport:
    """Per-artifact outcome: ``ok`` is True when the artifact has no error finding."""

    kind: ArtifactKind
    path: str
    ok: bool
    algorithm: str | None
    digest: str | None
    bytes: int | None
    records: int | None
    legacy: bool = False

    def to_dict(self) -> dict[str, Any]:
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


@dataclass(frozen=True)
class RunReport:
    """The verdict on one run.

    Attributes:
        run_id: the run.
        store: the store folder.
        complete: True only if every artifact is present, sealed and matches, and the
            transcript holds at least one record (no error finding).
        missing: human strings, one per error finding (seed 004's ``missing`` list).
        findings: every finding, errors and warnings.
        artifacts: one report per artifact kind.
        manifest: whether a valid manifest was found.
        legacy: True for a run written by seed 004's implementation.
        signature: ``signature-valid``, ``bad-signature``, ``unknown-key``, ``unsigned``,
            or ``not-checked`` (signed, but no trusted key was given).
        key_id: the key id named by the manifest's signature, if any.
    """

    run_id: str
    store: str
    complete: bool
    missing: tuple[str, ...]
    findings: tuple[Finding, ...]
    artifacts: tuple[ArtifactReport, ...]
    manifest: bool
    legacy: bool = False
    signature: str = "unsigned"
    key_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with ``schema_version`` (the ``--json`` contract)."""
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "run_id": self.run_id,
            "store": self.store,
            "complete": self.complete,
            "missing": list(self.missing),
            "findings": [f.to_dict() for f in self.findings],
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
) -> ArtifactObservation:
    """Read what is on disk for one artifact: file type, length, digest, sidecars.

    The file is opened without following symlinks and streamed (memory stays flat).
    Lines are counted only when the digest does not match the seal or there is no seal.

    Raises:
        StoreError: a file exists but cannot be read.
    """
    sidecars = _read_sidecars(path)
    try:
        info = path.lstat()
    except FileNotFoundError:
        return ArtifactObservation(kind, path, "absent", sidecars=sidecars)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    if stat.S_ISLNK(info.st_mode):
        return ArtifactObservation(kind, path, "symlink", sidecars=sidecars)
    if not stat.S_ISREG(info.st_mode):
        return ArtifactObservation(kind, path, "other", sidecars=sidecars)
    algorithm = _choose_algorithm(seal, sidecars)
    try:
        fd = open_nofollow(path, os.O_RDONLY)
    except UnsafePathError:
        return ArtifactObservation(kind, path, "symlink", sidecars=sidecars)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        size = os.fstat(fd).st_size
        digest, _ = digest_fd(fd, algorithm)
        ends_with_newline = size == 0 or os.pread(fd, 1, size - 1) == b"\n"
        matches_seal = seal is not None and digests_equal(seal.digest, digest)
        records = None if matches_seal else _count_lines(fd)
        segment_mismatch = _first_changed_segment(fd, seal, size) if seal else None
        prefix_digest = None
        if seal is not None and not matches_seal and size > seal.bytes:
            os.lseek(fd, 0, os.SEEK_SET)
            prefix_digest, _ = digest_fd(fd, seal.algorithm, limit=seal.bytes)
        prefix = None
        if seal is None or not seal.closed:
            checkpoints = _read_checkpoints(path)
            prefix = check_prefix(fd, checkpoints, size=size)
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
    )


def _read_checkpoints(path: Path) -> list[Checkpoint]:
    try:
        data = read_small_file(path.with_name(path.name + CHECKPOINT_SUFFIX), max_bytes=1 << 30)
    except (FileNotFoundError, UnsafePathError):
        return []
    except OSError as exc:
        raise StoreError(f"cannot read the checkpoints of {path}: {exc}") from exc
    return parse_checkpoints(data)[0]


def _first_changed_segment(fd: int, seal: ArtifactSeal, size: int) -> Mapping[str, Any] | None:
    """Check each earlier segment's prefix against the digest it was sealed with."""
    for segment in seal.segments:
        length = segment.get("bytes")
        if not isinstance(length, int) or length > size:
            return segment
        os.lseek(fd, 0, os.SEEK_SET)
        digest, _ = digest_fd(fd, seal.algorithm, limit=length)
        if not digests_equal(str(segment.get("digest", "")), digest):
            return segment
    return None


def _choose_algorithm(
    seal: ArtifactSeal | None, sidecars: Mapping[Algorithm, Sidecar | str]
) -> Algorithm:
    if seal is not None:
        return seal.algorithm
    for algorithm in ALGORITHMS:
        if algorithm in sidecars:
            return algorithm
    return "blake3"


def _read_sidecars(path: Path) -> dict[Algorithm, Sidecar | str]:
    found: dict[Algorithm, Sidecar | str] = {}
    for algorithm in ALGORITHMS:
        sidecar_path = path.with_name(path.name + SIDECAR_SUFFIXES[algorithm])
        try:
            data = read_small_file(sidecar_path, max_bytes=_MAX_SIDECAR_BYTES)
        except FileNotFoundError:
            continue
        except UnsafePathError:
            found[algorithm] = "is a symlink or not a regular file"
            continue
        except StoreError as exc:
            found[algorithm] = str(exc)
            continue
        except OSError as exc:
            if exc.errno in {errno.EACCES, errno.EPERM}:
                raise StoreError(f"cannot read {sidecar_path}: {exc.strerror}") from exc
            found[algorithm] = exc.strerror or str(exc)
            continue
        try:
            found[algorithm] = parse_sidecar(data, algorithm=algorithm)
        except SidecarInvalidError as exc:
            found[algorithm] = exc.message.removeprefix("sidecar ")
    return found


def _count_lines(fd: int) -> int:
    os.lseek(fd, 0, os.SEEK_SET)
    count = 0
    while chunk := os.read(fd, 8 * 1024 * 1024):
        count += chunk.count(b"\n")
    return count


# -- judgement (pure) -----------------------------------------------------------------


def judge_artifact(
    obs: ArtifactObservation,
    *,
    seal: ArtifactSeal | None,
    legacy_events: int | None = None,
    manifest_present: bool = False,
) -> list[Finding]:
    """Turn an observation and the manifest's seal into findings. Pure.

    Args:
        obs: what is on disk.
        seal: the manifest's entry for this artifact, if any.
        manifest_present: the run has a manifest (so a sealed artifact must be in it).
        legacy_events: for tool events of a manifest-less run, the number of records
            for this run in the seed's shared ``audit/tool-events.jsonl`` (``None``
            when not consulted).
    """
    kind = obs.kind
    findings: list[Finding] = []
    expected = _seal_facts(seal)

    if obs.file_type == "symlink":
        return [Finding("not-regular-file", kind, f"{kind} is a symlink (not followed)")]
    if obs.file_type == "other":
        return [Finding("not-regular-file", kind, f"{kind} is not a regular file")]
    if obs.file_type == "absent":
        if seal is not None:
            return [
                Finding(
                    "deleted",
                    kind,
                    f"{kind} file missing (deleted after sealing)",
                    expected=expected,
                )
            ]
        if kind == "tool-events" and legacy_events:
            return [
                Finding(
                    "legacy-format",
                    kind,
                    f"tool events read from the legacy shared file ({legacy_events} records)",
                    severity="warning",
                )
            ]
        return [Finding("missing", kind, f"{kind} file missing")]

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
                    kind,
                    f"{kind} has a sidecar but no entry in the run manifest "
                    "(interrupted while sealing?)",
                    actual=actual,
                )
            )
        if not digests_equal(sidecar.digest, obs.digest):
            findings.append(
                Finding(
                    "modified",
                    kind,
                    f"{kind} checksum mismatch",
                    expected={"digest": sidecar.digest},
                    actual=actual,
                )
            )
        if sidecar.legacy:
            findings.append(
                Finding(
                    "legacy-format",
                    kind,
                    f"{kind} has a legacy digest-only SHA-256 sidecar (seed 004 format)",
                    severity="warning",
                )
            )

    if obs.segment_mismatch is not None and not any(f.code == "modified" for f in findings):
        findings.append(
            Finding(
                "modified",
                kind,
                f"{kind}: an earlier segment ({obs.segment_mismatch.get('bytes')} bytes, sealed "
                "before the file was re-opened) no longer matches its seal",
                expected=dict(obs.segment_mismatch),
                actual=actual,
            )
        )
    if not obs.ends_with_newline and not any(f.code == "truncated" for f in findings):
        findings.append(
            Finding("torn-tail", kind, f"{kind} ends in an unterminated line", actual=actual)
        )
    if kind == "transcript" and obs.bytes == 0:
        findings.append(Finding("empty", kind, "transcript has no records", actual=actual))
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


def _judge_unsealed(obs: ArtifactObservation, actual: dict[str, Any]) -> Finding:
    """A file that was never sealed: crashed (or still being written)."""
    kind, prefix = obs.kind, obs.prefix
    if prefix is not None and prefix.mismatch is not None:
        return Finding(
            "modified",
            kind,
            f"{kind} prefix does not match its checkpoint at {prefix.mismatch.bytes} bytes",
            expected=prefix.mismatch.to_dict(),
            actual=actual,
        )
    if prefix is not None and prefix.beyond_end is not None:
        return Finding(
            "truncated",
            kind,
            f"{kind} is shorter than its checkpoint at {prefix.beyond_end.bytes} bytes",
            expected=prefix.beyond_end.to_dict(),
            actual=actual,
        )
    verified_bytes = prefix.verified_bytes if prefix else 0
    verified_records = prefix.verified_records if prefix else 0
    facts = _unsealed_facts(obs, verified_bytes, verified_records)
    return Finding(
        "unsealed",
        kind,
        f"{kind} not sealed (no checksum sidecar): {verified_records} records "
        f"({verified_bytes} bytes) verified by checkpoints, "
        f"{facts['unverified_bytes']} bytes unverified",
        actual=facts,
    )


def _judge_reopened(
    obs: ArtifactObservation,
    seal: ArtifactSeal,
    expected: dict[str, Any],
    actual: dict[str, Any],
) -> list[Finding]:
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
            kind,
            f"{kind} was re-opened for a new segment that is not sealed yet: "
            f"{seal.records} records ({seal.bytes} bytes) verified by the previous seal, "
            f"{facts['unverified_bytes']} bytes unverified",
            expected=expected,
            actual=facts,
        )
    ]


def _judge_sidecars(
    obs: ArtifactObservation, seal: ArtifactSeal | None, findings: list[Finding]
) -> Sidecar | None:
    """Check the sidecar(s); return the one that counts, appending findings."""
    kind = obs.kind
    wanted = seal.algorithm if seal is not None else obs.algorithm
    for algorithm in obs.sidecars:
        if seal is not None and algorithm != seal.algorithm:
            findings.append(
                Finding(
                    "unexpected",
                    kind,
                    f"unexpected {obs.path.name}{SIDECAR_SUFFIXES[algorithm]}: the run was "
                    f"sealed with {seal.algorithm}",
                )
            )
    parsed = obs.sidecars.get(wanted) if wanted is not None else None
    if parsed is None:
        if seal is not None:
            findings.append(
                Finding(
                    "sidecar-missing",
                    kind,
                    f"{kind} checksum sidecar missing",
                    expected={"digest": seal.digest},
                )
            )
        return None
    if isinstance(parsed, str):
        findings.append(
            Finding("sidecar-invalid", kind, f"{kind} checksum sidecar invalid: {parsed}")
        )
        return None
    if parsed.file_name is not None and parsed.file_name != obs.path.name:
        findings.append(
            Finding(
                "sidecar-invalid",
                kind,
                f"{kind} checksum sidecar names {parsed.file_name!r}, not {obs.path.name!r}",
            )
        )
    if seal is not None and not digests_equal(parsed.digest, seal.digest):
        findings.append(
            Finding(
                "sidecar-invalid",
                kind,
                f"{kind} checksum sidecar disagrees with the run manifest",
                expected={"digest": seal.digest},
                actual={"digest": parsed.digest},
            )
        )
    if seal is not None and parsed.legacy:
        findings.append(
            Finding(
                "sidecar-invalid",
                kind,
                f"{kind} checksum sidecar is in the legacy format but the run has a manifest",
            )
        )
    return parsed


def _judge_against_seal(
    obs: ArtifactObservation,
    seal: ArtifactSeal,
    expected: dict[str, Any],
    actual: dict[str, Any],
) -> list[Finding]:
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
                kind,
                f"{kind} truncated {where} ({seal.bytes - obs.bytes} bytes gone)",
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
                kind,
                f"{kind} has {extra} record(s) appended after sealing",
                expected=expected,
                actual=actual,
            )
        ]
    return [
        Finding("modified", kind, f"{kind} checksum mismatch", expected=expected, actual=actual)
    ]


def _seal_facts(seal: ArtifactSeal | None) -> dict[str, Any]:
    if seal is None:
        return {}
    return {"digest": seal.digest, "bytes": seal.bytes, "records": seal.records}


# -- the run ----------------------------------------------------------------------------


def check_run(
    run_id: str,
    store: str | os.PathLike[str] | None = None,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
) -> RunReport:
    """Check one run's evidence and return a report; never raises on findings.

    Args:
        run_id: the run id (validated first: ``RunIdInvalidError``, nothing touched).
        store: the store folder (``--store`` / ``$AGC_HOME`` / ``~/.agc``).
        trusted_keys: Ed25519 public keys by key id; with them the manifest signature
            is checked (``bad-signature`` / ``unknown-key`` are errors).
        require_signature: a run without a valid signature by a trusted key is
            incomplete (``unsigned``).

    Raises:
        RunIdInvalidError: bad run id.
        StoreError: the store or a file in it cannot be read (exit 3).
    """
    validate_run_id(run_id)
    layout = StoreLayout.at(store)
    if not layout.root.is_dir():
        raise StoreError(f"store {layout.root} does not exist or is not a folder")
    findings: list[Finding] = []
    manifest: RunManifest | None = None
    try:
        manifest = read_manifest(layout, run_id)
    except ManifestInvalidError as exc:
        findings.append(
            Finding("manifest-invalid", "manifest", f"run manifest invalid: {exc.message}")
        )
    except UnsafePathError:
        findings.append(
            Finding("not-regular-file", "manifest", "run manifest is a symlink or not a file")
        )

    observations: list[ArtifactObservation] = []
    for kind in ARTIFACT_KINDS:
        seal = manifest.artifacts.get(kind) if manifest else None
        observations.append(observe_artifact(layout.artifact_path(run_id, kind), kind, seal=seal))

    legacy = manifest is None and not findings and _looks_legacy(observations)
    if legacy and _in_chain(layout, run_id):
        # A run the store chain links had a manifest: not a seed-004 run, but one whose
        # manifest was removed (and its sidecars rewritten in the legacy format).
        legacy = False
        findings.append(
            Finding(
                "manifest-missing",
                "manifest",
                "run manifest missing (the store chain links this run)",
            )
        )
    if (
        manifest is None
        and not findings
        and all(o.file_type == "absent" and not o.sidecars for o in observations)
        and not any(True for _ in read_tool_events(run_id, layout.root, legacy_only=True))
        and not _in_chain(layout, run_id)
    ):
        return _run_missing(run_id, layout, observations)
    artifact_reports: list[ArtifactReport] = []
    for obs in observations:
        seal = manifest.artifacts.get(obs.kind) if manifest else None
        legacy_events = None
        if legacy and obs.kind == "tool-events" and obs.file_type == "absent":
            legacy_events = sum(1 for _ in read_tool_events(run_id, layout.root, legacy_only=True))
        own = judge_artifact(
            obs, seal=seal, legacy_events=legacy_events, manifest_present=manifest is not None
        )
        if seal is not None and seal.quarantine is not None:
            own.extend(_check_quarantine(obs.path, seal))
        findings.extend(own)
        artifact_reports.append(
            ArtifactReport(
                kind=obs.kind,
                path=str(obs.path),
                ok=not any(f.severity == "error" for f in own),
                algorithm=obs.algorithm,
                digest=obs.digest,
                bytes=obs.bytes,
                records=obs.records if obs.records is not None else legacy_events,
                legacy=legacy,
            )
        )

    has_modern_sidecar = any(
        isinstance(s, Sidecar) and not s.legacy for o in observations for s in o.sidecars.values()
    )
    if (
        manifest is None
        and not legacy
        and has_modern_sidecar
        and not _has_code(findings, "manifest-invalid")
    ):
        findings.insert(0, Finding("manifest-missing", "manifest", "run manifest missing"))

    status, key_id = _judge_signature(manifest, trusted_keys, require_signature, findings)
    if manifest is not None:
        for seal in manifest.artifacts.values():
            if seal.recovered:
                quarantined = (seal.quarantine or {}).get("bytes", 0)
                findings.append(
                    Finding(
                        "recovered",
                        seal.kind,
                        f"{seal.kind} was sealed by `agc recover` after a crash "
                        f"({quarantined} torn bytes quarantined)",
                        severity="warning",
                    )
                )
    errors = [f for f in findings if f.severity == "error"]
    return RunReport(
        run_id=run_id,
        store=str(layout.root),
        complete=not errors,
        missing=tuple(f.message for f in errors),
        findings=tuple(findings),
        artifacts=tuple(artifact_reports),
        manifest=manifest is not None,
        legacy=legacy,
        signature=status,
        key_id=key_id,
    )


def _run_missing(
    run_id: str, layout: StoreLayout, observations: list[ArtifactObservation]
) -> RunReport:
    """The report on a run of which the store holds nothing at all (one finding)."""
    finding = Finding(
        "run-missing", None, f"no run {run_id!r} in store {layout.root}", severity="error"
    )
    return RunReport(
        run_id=run_id,
        store=str(layout.root),
        complete=False,
        missing=(finding.message,),
        findings=(finding,),
        artifacts=tuple(
            ArtifactReport(o.kind, str(o.path), False, None, None, None, None) for o in observations
        ),
        manifest=False,
    )


def _check_quarantine(path: Path, seal: ArtifactSeal) -> list[Finding]:
    """The torn bytes ``agc recover`` moved beside a file: present and as sealed."""
    kind, quarantine = seal.kind, seal.quarantine or {}
    name = str(quarantine.get("file"))
    expected = {"digest": quarantine.get("digest"), "bytes": quarantine.get("bytes")}
    target = path.with_name(name)
    try:
        fd = open_nofollow(target, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return [
            Finding(
                "deleted",
                kind,
                f"{kind} quarantine file {name} missing (deleted after recovery)",
                expected=expected,
            )
        ]
    except UnsafePathError:
        return [Finding("not-regular-file", kind, f"{kind} quarantine file {name} is a symlink")]
    except OSError as exc:
        raise StoreError(f"cannot read {target}: {exc.strerror}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return [
                Finding("not-regular-file", kind, f"{kind} quarantine file {name} is not a file")
            ]
        digest, size = digest_fd(fd, seal.algorithm)
    except OSError as exc:
        raise StoreError(f"cannot read {target}: {exc.strerror}") from exc
    finally:
        os.close(fd)
    if size == quarantine.get("bytes") and digests_equal(str(quarantine.get("digest")), digest):
        return []
    return [
        Finding(
            "modified",
            kind,
            f"{kind} quarantine file {name} checksum mismatch",
            expected=expected,
            actual={"digest": digest, "bytes": size},
        )
    ]


def _judge_signature(
    manifest: RunManifest | None,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None,
    require_signature: bool,
    findings: list[Finding],
) -> tuple[str, str | None]:
    if manifest is None:
        if require_signature:
            findings.append(Finding("unsigned", "manifest", "run has no signed manifest"))
        return "unsigned", None
    document = manifest.document()
    signature = manifest.signature or {}
    named = signature.get("key_id")
    # A key id is 64 lower-case hex digits; anything else is not echoed (store content).
    key_id = named if isinstance(named, str) and _KEY_ID.fullmatch(named) else None
    if manifest.signature is not None and not trusted_keys:
        if require_signature:
            findings.append(
                Finding("unknown-key", "manifest", "no trusted key given to check the signature")
            )
        return "not-checked", key_id
    from agc.integrity._signing import check_signature  # noqa: PLC0415 - see TYPE_CHECKING

    status = check_signature(document, trusted_keys or {})
    if status == "bad-signature":
        findings.append(Finding("bad-signature", "manifest", "run manifest signature is invalid"))
    elif status == "unknown-key":
        findings.append(
            Finding(
                "unknown-key",
                "manifest",
                f"run manifest is signed by an untrusted key {key_id or '(malformed key id)'}",
            )
        )
    elif status == "unsigned" and require_signature:
        findings.append(Finding("unsigned", "manifest", "run manifest is not signed"))
    return status, key_id


def _has_code(findings: list[Finding], code: str) -> bool:
    return any(f.code == code for f in findings)


def _in_chain(layout: StoreLayout, run_id: str) -> bool:
    """Whether ``audit/chain.jsonl`` links the run (read only for would-be legacy runs).

    A chain log that cannot be read as a file counts as linking it: a store with a
    damaged chain is not a seed-004 store."""
    try:
        entries, _ = read_chain(layout)
    except FileNotFoundError:
        return False
    except (UnsafePathError, StoreError, OSError):
        return True
    return any(entry.run_id == run_id for entry in entries)


def _looks_legacy(observations: list[ArtifactObservation]) -> bool:
    transcript = observations[0]
    sidecar = transcript.sidecars.get("sha256")
    return isinstance(sidecar, Sidecar) and sidecar.legacy and "blake3" not in transcript.sidecars


def verify_run(
    run_id: str,
    store: str | os.PathLike[str] | None = None,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
) -> RunReport:
    """Like :func:`check_run`, but raise when the run is not complete.

    Raises:
        VerificationError: the report has error findings (``exc.report`` holds it).
        RunIdInvalidError, StoreError: as :func:`check_run`.
    """
    report = check_run(
        run_id, store, trusted_keys=trusted_keys, require_signature=require_signature
    )
    if not report.complete:
        raise VerificationError(
            f"run {run_id} is incomplete: " + "; ".join(report.missing), report=report
        )
    return report


def read_tool_events(
    run_id: str,
    store: str | os.PathLike[str] | None = None,
    *,
    legacy_only: bool = False,
) -> Iterator[dict[str, Any]]:
    """Yield the run's tool events: its own file, then the legacy shared file's records
    whose ``run_id`` matches (seed 004 reads both and filters the shared one by run id).

    Lines that are not JSON objects are skipped here (the verifier, not this reader,
    reports damage).

    Raises:
        RunIdInvalidError: bad run id.
        UnsafePathError: a file is a symlink.
        StoreError: a file is not a regular file (a FIFO, a folder) or cannot be read.
    """
    layout = StoreLayout.at(store)
    paths = [layout.legacy_tool_events_path]
    if not legacy_only:
        paths.insert(0, layout.artifact_path(run_id, "tool-events"))
    for path in paths:
        filter_by_run = path == layout.legacy_tool_events_path
        try:
            # Not following symlinks and never blocking: read_small_file's rules.
            fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise StoreError(f"{path} is not a regular file")
        with os.fdopen(fd, "rb") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue
                if not isinstance(record, dict):
                    continue
                if filter_by_run and record.get("run_id") != run_id:
                    continue
                yield record
