"""Readiness: an honest gate for an agent chat endpoint, with sealed verdicts.

Is the real reply path of a deployed ``POST /v1/agent/chat`` ready? Only a real deployed
route answering ``status: "completed"`` with a non-empty assistant reply is a live pass;
a mock, fixture, stub, source check, local echo or hand-made answer never is; a missing
provider credential is ``BLOCKED/credential``; and the gate never reads, prints or
stores a secret. Formats and rules: ``docs/readiness.md``.

* :func:`classify` turns an :class:`Observation` into a :class:`ReadinessVerdict` with
  the :data:`DECISION_TABLE` (pure);
* :func:`probe` observes an endpoint over HTTP (dry run, or one minimal chat with
  submit + result/trace polling);
* :func:`check_contract` checks Kubernetes manifests against a :class:`ContractSpec`
  without reading Secret data (level ``SOURCE``);
* :func:`build_statement` expresses a verdict as an in-toto Statement v1 with a
  verification-summary predicate; :func:`evidence_records` gives what a sealed run of
  the verdict holds.

Example::

    from agc.readiness import Observation, classify

    verdict = classify(Observation.from_dict(json.loads(text)))
    print(verdict.label, verdict.passed)
"""

from __future__ import annotations

from agc.readiness._contract import (
    ManifestDocument,
    SourceFile,
    check_contract,
    load_manifests,
    parse_manifests,
)
from agc.readiness._evidence import (
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    EvidenceCheck,
    build_statement,
    canonical_digest,
    check_evidence,
    evidence_attributes,
    evidence_records,
    resource_uri,
    stored_observation,
)
from agc.readiness._model import (
    BLOCKERS,
    CAPABILITIES,
    LEVEL_ORDER,
    LEVELS,
    ORIGINS,
    Observation,
    ReadinessVerdict,
    Reason,
    ReplySummary,
)
from agc.readiness._policy import (
    BaseUrlRule,
    ContractSpec,
    EnvironmentConfig,
    EnvRequirement,
    ProbeSettings,
    ReadinessConfig,
    ReadinessPolicy,
    load_config,
    parse_config,
)
from agc.readiness._probe import ProbeResult, ProbeStep, Timing, probe
from agc.readiness._table import (
    CEILINGS,
    DECISION_TABLE,
    KNOWN_RUNNER_BLOCKERS,
    Ceiling,
    DecisionRow,
    classify,
    decision_table_document,
    readiness_policy_digest,
)
from agc.readiness._urls import safe_url

__all__ = [
    "BLOCKERS",
    "CAPABILITIES",
    "CEILINGS",
    "DECISION_TABLE",
    "KNOWN_RUNNER_BLOCKERS",
    "LEVELS",
    "LEVEL_ORDER",
    "ORIGINS",
    "PREDICATE_TYPE",
    "STATEMENT_TYPE",
    "BaseUrlRule",
    "Ceiling",
    "ContractSpec",
    "DecisionRow",
    "EnvRequirement",
    "EnvironmentConfig",
    "EvidenceCheck",
    "ManifestDocument",
    "Observation",
    "ProbeResult",
    "ProbeSettings",
    "ProbeStep",
    "ReadinessConfig",
    "ReadinessPolicy",
    "ReadinessVerdict",
    "Reason",
    "ReplySummary",
    "SourceFile",
    "Timing",
    "build_statement",
    "canonical_digest",
    "check_contract",
    "check_evidence",
    "classify",
    "decision_table_document",
    "evidence_attributes",
    "evidence_records",
    "load_config",
    "load_manifests",
    "parse_config",
    "parse_manifests",
    "probe",
    "readiness_policy_digest",
    "resource_uri",
    "safe_url",
    "stored_observation",
]
