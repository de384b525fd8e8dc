"""Sealed readiness verdicts: a verdict of :mod:`agc.readiness` written as an agc run of
:mod:`agc.integrity`, and checked back before it is relied on.

The sealed run holds the redacted observation, the verdict and its in-toto Statement
(v1, with a verification-summary predicate) in its transcript, the probe's HTTP
exchanges as tool events, and the verdict in the manifest attributes; signed when a
signing key is given. Formats: docs/readiness.md.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import agc
from agc._core.fs import read_limited
from agc._core.store import RunId, StoreLayout
from agc.errors import FileExistsRefusedError
from agc.integrity import RunReport, SigningKey, check_run, open_run, read_run_manifest
from agc.readiness import (
    EvidenceCheck,
    ReadinessConfig,
    ReadinessVerdict,
    build_statement,
    canonical_digest,
    check_evidence,
    evidence_attributes,
    evidence_records,
    readiness_policy_digest,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = [
    "SealedVerdictCheck",
    "check_sealed_verdict",
    "refuse_taken_run_id",
    "seal_verdict",
    "verdict_statement",
]

MAX_TRANSCRIPT_BYTES: Final = 64 * 1024 * 1024


def refuse_taken_run_id(run_id: str, store: str | os.PathLike[str] | None) -> None:
    """Refuse a bad run id, or one the store holds already, before anything is probed or
    written: evidence is never overwritten.

    Raises:
        RunIdInvalidError: ``run_id`` is not a valid run id (exit 2).
        FileExistsRefusedError: the store holds a transcript or tool events of the run
            (exit 2).
    """
    run_id = RunId(run_id)
    layout = StoreLayout.at(store)
    for kind in ("transcript", "tool-events"):
        if os.path.lexists(layout.artifact_path(run_id, kind)):
            raise FileExistsRefusedError(
                f"run {run_id} already exists in store {layout.root}; evidence is never "
                "overwritten",
                hint="Give --evidence a run id the store does not hold yet (`agc runs` lists "
                "the ones taken).",
            )


def verdict_statement(
    verdict: ReadinessVerdict, config: ReadinessConfig, subject: Any
) -> dict[str, Any]:
    """The in-toto Statement of ``verdict`` about ``subject`` (a JSON value, digested as
    canonical JSON, RFC 8785), verified now by this agc version under ``config``'s
    policy (:func:`agc.readiness.build_statement`)."""
    return build_statement(
        verdict,
        observation_digest=canonical_digest(subject),
        policy_digest=readiness_policy_digest(config.policy),
        verified_at=time.time(),
        verifier_id=config.verifier_id,
        verifier_version=agc.__version__,
        policy_uri=config.policy_uri,
    )


def seal_verdict(
    run_id: str,
    *,
    store: str | os.PathLike[str] | None,
    signing_key: SigningKey | None,
    verdict: ReadinessVerdict,
    config: ReadinessConfig,
    subject: Any,
    observation: dict[str, Any] | None = None,
    steps: list[dict[str, Any]] | None = None,
    sources: list[dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Write ``verdict`` as the sealed run ``run_id`` (signed with ``signing_key`` when
    given); returns ``(statement, summary)``: the in-toto Statement and
    ``{"run_id", "store", "signed", "key_id", "statement_digest"}``.

    ``subject`` is what the verdict is about (the stored observation, or the manifest
    sources of a contract check); ``observation``, ``steps`` (a probe's HTTP exchanges)
    and ``sources`` are sealed beside the verdict.

    Raises:
        RunIdInvalidError, ArtifactSealedError: see :func:`agc.integrity.open_run`.
        StoreError, FileWriteError: the store cannot be written (exit 3).
    """
    statement = verdict_statement(verdict, config, subject)
    subject_digest = canonical_digest(subject)
    policy_digest = readiness_policy_digest(config.policy)
    transcript, events = evidence_records(
        observation=observation,
        verdict=verdict,
        statement=statement,
        steps=steps or [],
        sources=sources or [],
    )
    attributes = evidence_attributes(
        verdict, statement=statement, subject_digest=subject_digest, policy_digest=policy_digest
    )
    with open_run(run_id, store=store, signing_key=signing_key, attributes=attributes) as run:
        for record in transcript:
            run.transcript.write(record)
        for event in events:
            run.tool_events.write(event)
    summary = {
        "run_id": run_id,
        "store": str(StoreLayout.at(store).root),
        "signed": signing_key is not None,
        "key_id": signing_key.key_id if signing_key is not None else None,
        "statement_digest": attributes["readiness"]["statement_digest"],
    }
    return statement, summary


@dataclass(frozen=True)
class SealedVerdictCheck:
    """A sealed readiness verdict, checked: the run's report and, when the run verifies
    complete, the check of its sealed evidence (``evidence``; ``None`` otherwise)."""

    run: RunReport
    evidence: EvidenceCheck | None


def check_sealed_verdict(
    run_id: str,
    store: str | os.PathLike[str] | None,
    *,
    environment: str,
    endpoint: str | None = None,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
) -> SealedVerdictCheck:
    """Check a sealed readiness verdict before relying on it: the run is verified as
    ``agc-verify`` does (:func:`agc.integrity.check_run`), and only a run that verifies
    complete has its sealed verdict read and checked for ``environment`` (and
    ``endpoint``) by :func:`agc.readiness.check_evidence`. Never raises on findings.

    Raises:
        RunIdInvalidError: ``run_id`` is not a valid run id (exit 2).
        InputError: the transcript is larger than 64 MiB (exit 2).
        FileUnreadableError, StoreError: the store cannot be read (exit 3).
    """
    run_id = RunId(run_id)
    report = check_run(
        run_id, store, trusted_keys=trusted_keys, require_signature=require_signature
    )
    if not report.complete:
        return SealedVerdictCheck(report, None)
    manifest = read_run_manifest(run_id, store)
    path = StoreLayout.at(store).artifact_path(run_id, "transcript")
    data = read_limited(path, what="transcript", max_bytes=MAX_TRANSCRIPT_BYTES)
    records = [json.loads(line) for line in data.splitlines() if line.strip()]
    checked = check_evidence(
        manifest.attributes if manifest else None,
        records,
        environment=environment,
        endpoint=endpoint,
    )
    return SealedVerdictCheck(report, checked)
