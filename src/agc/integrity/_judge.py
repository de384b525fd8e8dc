"""The run verifier's judgement: pure functions from observations to one report.

A store's reader observes (a folder: :mod:`agc.integrity._verify`; an object store:
:mod:`agc.integrity._run_reader`) and these functions judge, with no I/O: an
:class:`~agc.integrity._observation.ArtifactObservation` plus its manifest entry become
findings (:func:`judge_artifact`), the manifest's signature is judged
(:func:`_judge_signature`), and the findings become one :class:`RunReport`, whose
``complete``/``missing``/``verdict`` and JSON mean the same whatever the store.

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
``capture-failed``        a hook event of the run's client session could not be captured
                          (kept in the store's ``capture/failures.jsonl`` or the user's
                          fallback file): the run misses what it failed to write
``transcript-diverges``   a tool call the run's hooks saw is missing from its sealed
                          session file, or the file holds one the active hooks never saw
                          or gives a call another input (judged by :mod:`agc.flows`,
                          which reads the client's format)
``hooks-stopped``         the sealed session file holds calls after the hooks' last call
                          in a session they saw neither stop nor end after it (killed
                          mid-turn, or hooks that stopped): no hook vouches for them
========================  ==============================================================

``unsealed`` (a crash before ``close()``) carries the verified prefix: the bytes and
records up to the last checkpoint that matches, and the unverified tail after it; a
prefix that does not match its checkpoint is ``modified``, one shorter than a checkpoint
``truncated``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, get_args

from agc._core.digest import digests_equal
from agc._core.record import record, replace
from agc._core.report import Finding, Report
from agc._core.sidecar import Sidecar, sidecar_name
from agc._core.signature_rule import judge_trust
from agc._core.store import ArtifactKind
from agc._core.words import counted
from agc.errors import ReportInvalidError
from agc.integrity._legacy import LegacyFindingCode, LegacyRun, unverified_records_finding
from agc.integrity._manifest import ArtifactSeal, RunManifest
from agc.integrity._observation import ArtifactObservation
from agc.integrity._verdict import Verdict, verdict_of
from agc.integrity._version_findings import ObjectStoreFindingCode

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from agc._core.checkpoint import Checkpoint, ReadAt

__all__ = [
    "CLOSE_ID_COMPARISONS",
    "CLOSE_ID_RATIO",
    "ArtifactObservation",
    "ArtifactReport",
    "RunFindingCode",
    "RunReport",
    "changed_lines",
    "closest_run_id",
    "finding_json",
    "judge_artifact",
    "judge_run",
    "recovered_findings",
    "run_missing_report",
    "sealed_bytes_differ",
    "with_artifact_findings",
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
    "capture-failed",
    "transcript-diverges",
    "hooks-stopped",
    LegacyFindingCode,
    ObjectStoreFindingCode,
]
"""The finding codes of a run report (documented in ``docs/format.md``)."""


_Finding: TypeAlias = Finding[RunFindingCode]


@record
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


@record
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
        f"{kind} not sealed (no checksum sidecar): {counted(verified_records, 'record')} "
        f"({counted(verified_bytes, 'byte')}) verified by checkpoints, "
        f"{counted(facts['unverified_bytes'], 'byte')} unverified",
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
            f"{counted(seal.records, 'record')} ({counted(seal.bytes, 'byte')}) verified by "
            f"the previous seal, {counted(facts['unverified_bytes'], 'byte')} unverified",
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
                f"{counted(seal.bytes, 'byte')} ({counted(seal.records, 'record')}) counts "
                "as vouched for"
            )
            counts = {"unverified_bytes": seal.bytes, "unverified_records": seal.records}
        elif unvouched == (0, 0):
            detail = "every byte was vouched for by a crash checkpoint"
            counts = {"unverified_bytes": 0, "unverified_records": 0}
        else:
            detail = (
                f"{counted(unvouched[0], 'byte')} ({counted(unvouched[1], 'record')}) "
                f"{'was' if unvouched[0] == 1 else 'were'} never vouched for by a crash "
                "checkpoint"
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


def judge_run(
    run_id: str,
    store: str,
    observations: Sequence[tuple[ArtifactObservation, str]],
    manifest: RunManifest | None,
    findings: list[_Finding],
    *,
    legacy: LegacyRun | None,
    quarantines: Mapping[ArtifactKind, Sequence[_Finding]],
    shared_records: int,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None,
    require_signature: bool,
    allow_recovered: bool,
    object_findings: Sequence[Finding[Any]] = (),
    store_findings: Sequence[Finding[Any]] = (),
) -> RunReport:
    """The report on one run from what its store showed; pure (any store, no I/O).

    Args:
        run_id, store: the run and the store's name for the report.
        observations: each artifact's observation and the path its entry names.
        manifest: the run's manifest (``None``: none, or unusable).
        findings: what was found before the artifacts were judged (the manifest is
            invalid, a chained run lost its manifest); extended in place.
        legacy: the run is in the legacy format (:mod:`agc.integrity._legacy`).
        quarantines: the findings on each artifact's quarantine file (a recovered seal).
        shared_records: records naming the run in the legacy shared tool-events file.
        trusted_keys, require_signature, allow_recovered: as
            :func:`agc.integrity._verify.check_run`.
        object_findings: what only a versioned store shows of the run's objects
            (versions, delete markers, retention); each one about an artifact is that
            artifact's too.
        store_findings: findings about the store itself (a bucket without Object Lock).
    """
    artifact_reports: list[ArtifactReport] = []
    for obs, path in observations:
        seal = manifest.artifacts.get(obs.kind) if manifest else None
        own = judge_artifact(obs, seal=seal, manifest_present=manifest is not None)
        if legacy is not None:
            own = legacy.judge(obs, own)
        own.extend(quarantines.get(obs.kind, ()))
        findings.extend(own)
        artifact_reports.append(
            ArtifactReport(
                kind=obs.kind,
                path=path,
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
        isinstance(s, Sidecar) and not s.legacy
        for obs, _ in observations
        for s in obs.sidecars.values()
    )
    if (
        manifest is None
        and legacy is None
        and has_modern_sidecar
        and not any(f.code in ("manifest-invalid", "manifest-missing") for f in findings)
    ):
        findings.insert(0, Finding("manifest-missing", "run manifest missing", artifact="manifest"))
    status, key_id = _judge_signature(manifest, trusted_keys, require_signature, findings)
    recovered = recovered_findings(manifest, allow_recovered=allow_recovered)
    findings.extend(recovered)
    objects = list(object_findings)
    findings.extend(objects)
    findings.extend(store_findings)
    return RunReport(
        run_id=run_id,
        store=store,
        findings=tuple(findings),
        artifacts=tuple(with_artifact_findings(artifact_reports, [*recovered, *objects])),
        manifest=manifest is not None,
        legacy=legacy is not None,
        signature=status,
        key_id=key_id,
    )
