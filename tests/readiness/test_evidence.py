"""The stored observation, the in-toto Statement and the evidence check (pure)."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agc.readiness import (
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    Observation,
    build_statement,
    canonical_digest,
    check_evidence,
    classify,
    evidence_attributes,
    evidence_records,
    resource_uri,
    stored_observation,
)
from tests.conftest import examples
from tests.readiness.helpers import LIVE_URL, completed, declaring, observation

REPLY = "Here is the whole assistant reply, long enough to search for."


def _evidence(obs: Observation) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    verdict = classify(obs, declaring(obs))
    stored = stored_observation(obs)
    statement = build_statement(
        verdict,
        observation_digest=canonical_digest(stored),
        policy_digest="ab" * 32,
        verified_at=1_764_460_800,
        verifier_id="pkg:pypi/agc",
        verifier_version="0.1.0",
        policy_uri="urn:agc:readiness:decision-table:v1",
    )
    transcript, _ = evidence_records(observation=stored, verdict=verdict, statement=statement)
    attributes = evidence_attributes(
        verdict, statement=statement, subject_digest=canonical_digest(stored), policy_digest="ab"
    )
    return attributes, transcript


def test_the_stored_observation_keeps_the_verdict_but_not_the_reply() -> None:
    answer = completed(content=REPLY, lastEvent={"type": "message", "text": REPLY + " (end)"})
    obs = observation(answer)
    stored = stored_observation(obs)
    text = json.dumps(stored)
    assert REPLY not in text
    assert stored["response"]["reply"]["content"] == {"omitted": "reply-text", "length": len(REPLY)}
    assert stored["response"]["lastEvent"]["text"] == "[OMITTED:reply-text]"
    again = classify(Observation.from_dict(stored))
    first = classify(obs)
    assert (again.label, again.rule, again.passed) == (first.label, first.rule, first.passed)
    assert again.summary.reply_length == first.summary.reply_length


def test_a_short_reply_is_omitted_only_where_it_stands_alone() -> None:
    stored = stored_observation(observation(completed(content="ok", note="token ok")))
    assert stored["response"]["note"] == "token ok"
    assert stored["response"]["reply"]["content"]["length"] == 2


def test_a_long_raw_body_is_cut() -> None:
    stored = stored_observation(observation(None, rawBody="x" * 5000))
    assert len(stored["rawBody"]) == 513


def test_the_statement_is_in_toto_v1_with_a_verification_summary() -> None:
    attributes, transcript = _evidence(observation(completed()))
    statement = transcript[-1]["statement"]
    assert statement["_type"] == STATEMENT_TYPE
    assert statement["predicateType"] == PREDICATE_TYPE
    predicate = statement["predicate"]
    assert predicate["resourceUri"] == LIVE_URL + "#environment=dev"
    assert predicate["verificationResult"] == "PASSED"
    assert predicate["verifiedLevels"] == [
        "AGC_READINESS_LIVE",
        "AGC_READINESS_CAPABILITY_FULL_AGENT_SESSION",
        "AGC_READINESS_AGENT_RUNNER_GATE",
    ]
    assert predicate["timeVerified"] == "2025-11-30T00:00:00Z"
    assert predicate["policy"]["digest"] == {"sha256": "ab" * 32}
    assert statement["subject"][0]["digest"]["sha256"] == attributes["readiness"]["subject_digest"]
    assert not any(level.startswith("SLSA_") for level in predicate["verifiedLevels"])


def test_a_failed_verdict_lists_no_verified_level() -> None:
    _, transcript = _evidence(observation(completed(content=" ")))
    predicate = transcript[-1]["statement"]["predicate"]
    assert predicate["verificationResult"] == "FAILED"
    assert predicate["verifiedLevels"] == []
    assert predicate["agcReadiness"]["label"] == "BLOCKED/schema"


def test_resource_uri_quotes_the_environment() -> None:
    assert resource_uri("https://h/x#frag", "dev eu") == "https://h/x#environment=dev%20eu"
    assert resource_uri(None, "dev") == "agc-readiness:environment=dev"


def test_check_evidence_binds_environment_endpoint_and_contents() -> None:
    attributes, transcript = _evidence(observation(completed()))
    assert check_evidence(attributes, transcript, environment="dev", endpoint=LIVE_URL).ok
    wrong_env = check_evidence(attributes, transcript, environment="prod")
    assert [code for code, _ in wrong_env.problems] == ["environment-mismatch"]
    wrong_url = check_evidence(attributes, transcript, environment="dev", endpoint="https://x/")
    assert [code for code, _ in wrong_url.problems] == ["endpoint-mismatch"]
    swapped = [dict(record) for record in transcript]
    swapped[0] = {"type": "readiness.observation", "observation": {"other": 1}}
    assert "subject-mismatch" in {
        c for c, _ in check_evidence(attributes, swapped, environment="dev").problems
    }
    edited = json.loads(json.dumps(transcript))
    edited[-1]["statement"]["predicate"]["verificationResult"] = "PASSED!"
    assert "statement-mismatch" in {
        c for c, _ in check_evidence(attributes, edited, environment="dev").problems
    }
    assert not check_evidence(None, transcript, environment="dev").ok


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=12,
)
_RECORD_TYPES = st.sampled_from(
    ["readiness.statement", "readiness.observation", "readiness.verdict", "other"]
)


@settings(max_examples=examples(200), deadline=None)
@given(
    records=st.lists(
        st.fixed_dictionaries(
            {"type": _RECORD_TYPES | _JSON},
            optional={"statement": _JSON, "observation": _JSON, "verdict": _JSON},
        ),
        max_size=4,
    ),
    subject=_JSON,
    sealed=st.dictionaries(st.text(max_size=20), _JSON, max_size=4),
)
def test_check_evidence_of_a_forged_run_is_findings_never_an_error(
    records: list[dict[str, Any]], subject: Any, sealed: dict[str, Any]
) -> None:
    # An unsigned run can hold anything its writer accepts: the check must say "not
    # usable", not fail (a crash would be exit 4, "a bug", instead of a finding).
    statement = {"_type": "https://in-toto.io/Statement/v1", "subject": subject}
    records = [*records, {"type": "readiness.statement", "statement": statement}]
    digest = canonical_digest(statement) if not _has_big_int(statement) else "x"
    attributes = {"readiness": {"environment": "dev", "statement_digest": digest, **sealed}}
    checked = check_evidence(attributes, records, environment="dev")
    assert isinstance(checked.ok, bool)


def _has_big_int(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) > 2**53 - 1
    if isinstance(value, list):
        return any(_has_big_int(item) for item in value)
    if isinstance(value, dict):
        return any(_has_big_int(item) for item in value.values())
    return isinstance(value, float) and not math.isfinite(value)


def test_a_forged_statement_subject_is_a_mismatch() -> None:
    for subject in ([1], ["x"], [{"digest": "x"}], [{"digest": {"sha256": 5}}], "s", []):
        statement = {"subject": subject}
        attributes = {
            "readiness": {
                "environment": "dev",
                "statement_digest": canonical_digest(statement),
                "subject_digest": None,
            }
        }
        records = [{"type": "readiness.statement", "statement": statement}]
        checked = check_evidence(attributes, records, environment="dev")
        assert "subject-mismatch" in {code for code, _ in checked.problems}, subject
