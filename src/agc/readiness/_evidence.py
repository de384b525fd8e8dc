"""A verdict as evidence: the stored observation, an in-toto Statement, the records and
manifest attributes of a sealed run, and the check of such a run later (pure).

The sealed run (written by the command line through ``agc.integrity``) holds:

* transcript: ``readiness.observation`` (the observation as stored: the shared detector
  run over every string, the reply text replaced by its length), ``readiness.verdict``,
  ``readiness.statement``;
* tool events: one ``readiness.http`` record per HTTP exchange of the probe (route,
  status, outcome, delay; never a header or a body);
* manifest attributes: ``{"readiness": {...}}``, the verdict bound to the environment,
  the endpoint and the digests of the observation, the policy and the statement, signed
  with the manifest when a signing key is set.

The Statement is in-toto Statement v1 whose predicate follows the SLSA Verification
Summary Attestation (``https://slsa.dev/verification_summary/v1``) fields: ``verifier``,
``timeVerified``, ``resourceUri`` (endpoint + environment), ``policy`` (uri + digest),
``verificationResult``, ``verifiedLevels`` (custom ``AGC_READINESS_*`` values: the VSA
allows them when they do not start with ``SLSA_``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import quote as url_quote

from agc._core.canonical import canonical_json
from agc.readiness._model import (
    Observation,
    ReadinessVerdict,
    field_value,
    redact_json,
    reply_length,
    scrub,
)

__all__ = [
    "EVIDENCE_SCHEMA_VERSION",
    "PREDICATE_TYPE",
    "STATEMENT_TYPE",
    "EvidenceCheck",
    "build_statement",
    "canonical_digest",
    "check_evidence",
    "evidence_attributes",
    "evidence_records",
    "resource_uri",
    "stored_observation",
]

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE: Final = "https://slsa.dev/verification_summary/v1"
EVIDENCE_SCHEMA_VERSION: Final = 1
_MAX_RAW_BODY_CHARS: Final = 512
_MIN_REPLY_CHARS_TO_SEARCH: Final = 8
_CUT_MARK: Final = re.compile(r"…\[\+\d+ chars\]\Z")


def canonical_digest(document: Any) -> str:
    """SHA-256 hex of the RFC 8785 canonical JSON of ``document``."""
    canonical: bytes = canonical_json(document)
    return hashlib.sha256(canonical).hexdigest()


def resource_uri(endpoint: str | None, environment: str) -> str:
    """The verified resource: the endpoint with the environment as its fragment
    (``https://…/v1/agent/chat#environment=dev``); ``agc-readiness:environment=dev``
    when there is no endpoint (a source check)."""
    name = url_quote(environment, safe="")
    if not endpoint:
        return f"agc-readiness:environment={name}"
    return f"{endpoint.split('#', 1)[0]}#environment={name}"


def _omit_reply(value: Any, reply: str) -> Any:
    """Replace strings that are (or, for a reply of 8 or more characters, hold) the
    reply text: trace windows and last events often repeat it. A string a trace window
    cut (``…[+N chars]`` at its end, :func:`agc._core.window.trim`) is replaced too when
    what is left of it, 8 characters or more, is part of the reply."""
    if isinstance(value, str):
        text = value.strip()
        if text == reply or (len(reply) >= _MIN_REPLY_CHARS_TO_SEARCH and reply in value):
            return "[OMITTED:reply-text]"
        cut = _CUT_MARK.search(value)
        if cut is not None:
            head = value[: cut.start()].strip()
            if len(head) >= _MIN_REPLY_CHARS_TO_SEARCH and head in reply:
                return "[OMITTED:reply-text]"
        return value
    if isinstance(value, list):
        return [_omit_reply(item, reply) for item in value]
    if isinstance(value, Mapping):
        return {key: _omit_reply(item, reply) for key, item in value.items()}
    return value


def stored_observation(observation: Observation) -> dict[str, Any]:
    """The observation as evidence keeps it, still valid input of ``classify``.

    ``response.reply.content`` becomes ``{"omitted": "reply-text", "length": N}`` (the
    classification needs only whether it is empty), copies of the reply text elsewhere
    in the answer and in the ``providerTrace`` window become ``"[OMITTED:reply-text]"``,
    ``rawBody`` is cut to 512 characters, and the shared detector runs over every
    string and key.
    """
    data = observation.to_dict()
    response = data.get("response")
    present, content = field_value(response, "reply.content")
    if present and isinstance(response, Mapping):
        length = reply_length(content)
        reply = content.strip() if isinstance(content, str) else ""
        response = _omit_reply(response, reply) if reply else dict(response)
        reply_object = dict(response["reply"])
        if length is not None:
            reply_object["content"] = {"omitted": "reply-text", "length": length}
        response["reply"] = reply_object
        data["response"] = response
        if reply and "providerTrace" in data:
            data["providerTrace"] = _omit_reply(data["providerTrace"], reply)
    raw = data.get("rawBody")
    redacted: dict[str, Any] = redact_json(data)
    if isinstance(raw, str):
        # Redact before cutting (a cut could split a secret), then cut the redacted text.
        text = redact_json(scrub(raw))
        redacted["rawBody"] = (
            text if len(text) <= _MAX_RAW_BODY_CHARS else text[:_MAX_RAW_BODY_CHARS] + "…"
        )
    return redacted


def _level_name(value: str) -> str:
    return value.upper().replace("-", "_")


def build_statement(
    verdict: ReadinessVerdict,
    *,
    observation_digest: str,
    policy_digest: str,
    verified_at: float,
    verifier_id: str,
    verifier_version: str,
    policy_uri: str,
) -> dict[str, Any]:
    """The verdict as an in-toto Statement v1 with a verification-summary predicate.

    Args:
        verdict: the verdict.
        observation_digest: :func:`canonical_digest` of the stored observation (the
            statement's subject); for a source check, of the checked manifests' digests.
        policy_digest: the policy and decision table digest.
        verified_at: Unix time in seconds.
        verifier_id, verifier_version: who verified (``pkg:pypi/agc``, ``0.1.0``).
        policy_uri: names the policy (a URN by default).
    """
    resource = resource_uri(verdict.endpoint, verdict.environment)
    levels: list[str] = []
    if verdict.passed:
        levels.append(f"AGC_READINESS_{_level_name(verdict.level)}")
        if verdict.capability:
            levels.append(f"AGC_READINESS_CAPABILITY_{_level_name(verdict.capability)}")
        if verdict.agent_runner_gate:
            levels.append("AGC_READINESS_AGENT_RUNNER_GATE")
    when = datetime.fromtimestamp(verified_at, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [
            {
                "name": "readiness-observation",
                "uri": resource,
                "digest": {"sha256": observation_digest},
            }
        ],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "verifier": {"id": verifier_id, "version": {"agc": verifier_version}},
            "timeVerified": when,
            "resourceUri": resource,
            "policy": {"uri": policy_uri, "digest": {"sha256": policy_digest}},
            "inputAttestations": [],
            "verificationResult": "PASSED" if verdict.passed else "FAILED",
            "verifiedLevels": levels,
            "agcReadiness": {
                "environment": verdict.environment,
                "endpoint": verdict.endpoint,
                "level": verdict.level,
                "blocker": verdict.blocker,
                "label": verdict.label,
                "capability": verdict.capability,
                "passed": verdict.passed,
                "agentRunnerGate": verdict.agent_runner_gate,
                "rule": verdict.rule,
            },
        },
    }


def evidence_records(
    *,
    observation: Mapping[str, Any] | None,
    verdict: ReadinessVerdict,
    statement: Mapping[str, Any],
    steps: Sequence[Mapping[str, Any]] = (),
    sources: Sequence[Mapping[str, Any]] = (),
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(transcript records, tool events)`` of the evidence run.

    ``observation`` is the stored observation (``None`` for a source check, whose
    ``sources`` list the checked files by name and digest); ``steps`` the probe's
    HTTP exchanges (:meth:`ProbeStep.to_dict`).
    """
    transcript: list[dict[str, Any]] = []
    if observation is not None:
        transcript.append({"type": "readiness.observation", "observation": dict(observation)})
    if sources:
        transcript.append({"type": "readiness.sources", "sources": [dict(s) for s in sources]})
    transcript.append({"type": "readiness.verdict", "verdict": verdict.to_dict()})
    transcript.append({"type": "readiness.statement", "statement": dict(statement)})
    events = [{"type": "readiness.http", **dict(step)} for step in steps]
    return transcript, events


def evidence_attributes(
    verdict: ReadinessVerdict,
    *,
    statement: Mapping[str, Any],
    subject_digest: str,
    policy_digest: str,
) -> dict[str, Any]:
    """The manifest attributes of the evidence run: ``{"readiness": {...}}``."""
    return {
        "readiness": {
            "schema_version": EVIDENCE_SCHEMA_VERSION,
            "environment": verdict.environment,
            "endpoint": verdict.endpoint,
            "resource_uri": resource_uri(verdict.endpoint, verdict.environment),
            "level": verdict.level,
            "blocker": verdict.blocker,
            "label": verdict.label,
            "capability": verdict.capability,
            "passed": verdict.passed,
            "agent_runner_gate": verdict.agent_runner_gate,
            "rule": verdict.rule,
            "subject_digest": subject_digest,
            "policy_digest": policy_digest,
            "statement_digest": canonical_digest(dict(statement)),
            "time_verified": statement["predicate"]["timeVerified"],
        }
    }


@dataclass(frozen=True)
class EvidenceCheck:
    """The check of a readiness evidence run's contents against what it is used for.

    Attributes:
        ok: no problem: the attributes, the transcript and the asked environment and
            endpoint agree (the run's own seal is checked by ``agc-verify``).
        problems: ``(code, message)`` pairs: ``not-readiness-evidence``,
            ``environment-mismatch``, ``endpoint-mismatch``, ``statement-mismatch``,
            ``subject-mismatch``, ``verdict-mismatch``.
        attributes: the run's ``readiness`` attributes (or ``None``).
    """

    ok: bool
    problems: tuple[tuple[str, str], ...]
    attributes: Mapping[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": EVIDENCE_SCHEMA_VERSION,
            "ok": self.ok,
            "problems": [{"code": code, "message": message} for code, message in self.problems],
            "attributes": None if self.attributes is None else dict(self.attributes),
        }


def _digest_of(value: Any) -> str | None:
    """:func:`canonical_digest`, or ``None`` for a value with no canonical form (an
    integer beyond 2**53 - 1, a float out of range, a non-string key) or nested too
    deep: a record nobody sealed through this module, never a reason to fail."""
    try:
        return canonical_digest(value)
    except (ValueError, TypeError, RecursionError):
        return None


def _subject_digest(statement: Mapping[str, Any]) -> str | None:
    """``subject[0].digest.sha256`` of an in-toto Statement, or ``None``."""
    subject = statement.get("subject")
    first = subject[0] if isinstance(subject, list) and subject else None
    digests = first.get("digest") if isinstance(first, Mapping) else None
    value = digests.get("sha256") if isinstance(digests, Mapping) else None
    return value if isinstance(value, str) else None


def check_evidence(
    attributes: Mapping[str, Any] | None,
    transcript: Sequence[Mapping[str, Any]],
    *,
    environment: str,
    endpoint: str | None = None,
) -> EvidenceCheck:
    """Check that a sealed readiness run is evidence for ``environment`` (and
    ``endpoint``): its attributes name them, and the statement and observation in its
    transcript are the ones the attributes' digests name, so a verdict cannot be
    re-labelled for another environment without breaking the manifest's signature.
    Records of any other shape (a forged or damaged run) are findings, never an error.
    """
    problems: list[tuple[str, str]] = []
    readiness = attributes.get("readiness") if isinstance(attributes, Mapping) else None
    if not isinstance(readiness, Mapping):
        return EvidenceCheck(
            False,
            (("not-readiness-evidence", "the run's manifest has no readiness verdict"),),
            None,
        )
    if readiness.get("environment") != environment:
        problems.append(
            (
                "environment-mismatch",
                f"the verdict is for environment {json.dumps(readiness.get('environment'))}, "
                f"not {json.dumps(environment)}",
            )
        )
    if endpoint is not None and str(readiness.get("endpoint") or "").rstrip("/") != endpoint.rstrip(
        "/"
    ):
        problems.append(
            (
                "endpoint-mismatch",
                f"the verdict is for endpoint {json.dumps(readiness.get('endpoint'))}",
            )
        )
    by_type = {
        record["type"]: record
        for record in transcript
        if isinstance(record, Mapping) and isinstance(record.get("type"), str)
    }
    statement = by_type.get("readiness.statement", {}).get("statement")
    statement_digest = _digest_of(statement) if isinstance(statement, Mapping) else None
    if statement_digest is None or statement_digest != readiness.get("statement_digest"):
        problems.append(("statement-mismatch", "the transcript's statement is not the sealed one"))
    else:
        assert isinstance(statement, Mapping)
        subject_digest = _subject_digest(statement)
        if subject_digest is None or subject_digest != readiness.get("subject_digest"):
            problems.append(("subject-mismatch", "the statement's subject is not the sealed one"))
    observation = by_type.get("readiness.observation", {}).get("observation")
    if observation is not None:
        observed_digest = _digest_of(observation)
        if observed_digest is None or observed_digest != readiness.get("subject_digest"):
            problems.append(
                ("subject-mismatch", "the transcript's observation is not the sealed one")
            )
    verdict = by_type.get("readiness.verdict", {}).get("verdict")
    if not isinstance(verdict, Mapping) or any(
        verdict.get(key) != readiness.get(key)
        for key in ("environment", "endpoint", "level", "blocker", "passed", "rule")
    ):
        problems.append(("verdict-mismatch", "the transcript's verdict is not the sealed one"))
    return EvidenceCheck(not problems, tuple(problems), readiness)
