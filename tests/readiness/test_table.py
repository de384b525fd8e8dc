"""Every row of the decision table and every ceiling, with their boundaries."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import pytest

from agc.readiness import (
    CEILINGS,
    DECISION_TABLE,
    KNOWN_RUNNER_BLOCKERS,
    Observation,
    ReadinessConfig,
    ReadinessPolicy,
    classify,
    decision_table_document,
    readiness_policy_digest,
)
from agc.readiness._table import HARDWARE_CAPABILITY_FIELDS, READ_ONLY_REGISTRY_FIELDS
from tests.readiness.helpers import (
    DECLARED,
    LIVE_URL,
    completed,
    credential_answer,
    declaring,
    hardware_answer,
    observation,
    read_only_answer,
    with_value,
    without,
)

REACHES_INSIDE = {
    "agc.readiness._table": "the field lists the decision table keys on",
}


@dataclass(frozen=True)
class Case:
    """An observation and the verdict the table must give it."""

    name: str
    observation: Observation
    rule: str
    label: str
    passed: bool
    capability: str | None = None
    gate: bool = False
    quoted_field: str | None = None  # a reason must quote this observed field


def _dry(response: Any, *, route: str = "error-answer", http: int = 404) -> Observation:
    return observation(response, http=http, mode="dry-run", route=route)


CASES: list[Case] = [
    Case(
        "timeout",
        observation(None, http=None, transportError="timeout"),
        "transport-failure",
        "BLOCKED/transport",
        False,
        quoted_field="transportError",
    ),
    Case(
        "nothing answered",
        observation(None, http=None),
        "transport-failure",
        "BLOCKED/transport",
        False,
        quoted_field="httpStatus",
    ),
    Case(
        "probe refused 401",
        observation({"error": {"code": "unauthorized"}}, http=401),
        "probe-refused",
        "BLOCKED/credential",
        False,
        quoted_field="httpStatus",
    ),
    Case(
        "probe refused 403 non-json",
        observation(None, http=403, rawBody="no"),
        "probe-refused",
        "BLOCKED/credential",
        False,
    ),
    Case(
        "credential missing",
        observation(credential_answer(), http=503),
        "credential-missing",
        "BLOCKED/credential",
        False,
        quoted_field="response.error.missingEnv",
    ),
    Case(
        "credential among others",
        observation(credential_answer("HOME_X", "OPENAI_API_KEY"), http=200),
        "credential-missing",
        "BLOCKED/credential",
        False,
    ),
    Case(
        "read-only registry",
        observation(read_only_answer()),
        "read-only-session-registry",
        "LIVE",
        True,
        "read-only-session-registry",
        quoted_field="response.sessionMode",
    ),
    Case(
        "read-only registry, extra field and limitation",
        observation(
            with_value(
                with_value(
                    read_only_answer(),
                    "runnerLimitations",
                    [
                        "not-codex-stdio",
                        "not-write-capable",
                        "process-local-session-registry",
                        "no-network",
                    ],
                ),
                "extraField",
                {"x": 1},
            )
        ),
        "read-only-session-registry",
        "LIVE",
        True,
        "read-only-session-registry",
    ),
    Case(
        "read-only registry with stdio blocked",
        observation(
            with_value(
                read_only_answer(),
                "codexStdioFeasibility",
                {"status": "blocked", "blockers": ["codex_cli_binary_missing"]},
            )
        ),
        "read-only-session-registry",
        "LIVE",
        True,
        "read-only-session-registry",
    ),
    Case(
        "read-only registry without lastTraceId",
        observation(without(read_only_answer(), "session.lastTraceId")),
        "read-only-session-registry-incomplete",
        "BLOCKED/schema",
        False,
        "read-only-session-registry",
        quoted_field="response.session.lastTraceId",
    ),
    Case(
        "stdio blocked",
        observation(
            {
                "status": "failed",
                "error": {"code": "runner_unavailable"},
                "codexStdioFeasibility": {"status": "blocked"},
            },
            http=503,
        ),
        "runner-infeasible",
        "BLOCKED/runner",
        False,
        quoted_field="response.codexStdioFeasibility.status",
    ),
    Case(
        "stdio blocker in a completed answer",
        observation(
            completed(
                codexStdioFeasibility={
                    "status": "partial",
                    "blockers": [{"code": "stdio_protocol_not_wired"}],
                }
            )
        ),
        "runner-infeasible",
        "BLOCKED/runner",
        False,
        quoted_field="response.codexStdioFeasibility.blockers",
    ),
    Case(
        "provider unavailable, other env",
        observation(credential_answer("HWLAB_CODE_AGENT_OPENAI_BASE_URL"), http=503),
        "provider-unavailable",
        "BLOCKED/runner",
        False,
        quoted_field="response.error.missingEnv",
    ),
    Case(
        "hardware capability",
        observation(hardware_answer()),
        "hardware-capability",
        "LIVE",
        True,
        "hardware-capability",
        quoted_field="response.operationId",
    ),
    Case(
        "hardware without exitCode",
        observation(without(hardware_answer(), "exitCode")),
        "hardware-capability-incomplete",
        "BLOCKED/schema",
        False,
        "hardware-capability",
        quoted_field="response.exitCode",
    ),
    Case(
        "dry run error answer",
        _dry({"error": {"code": "trace_not_found"}}),
        "dry-run-error-answer",
        "DRY-RUN",
        True,
        quoted_field="response.error.code",
    ),
    Case(
        "dry run preflight ready",
        _dry({"status": "ready"}, route="readyz", http=200),
        "dry-run-preflight-ready",
        "DRY-RUN",
        True,
        quoted_field="response.status",
    ),
    Case(
        "dry run preflight credential",
        _dry(credential_answer(), route="readyz", http=503),
        "credential-missing",
        "BLOCKED/credential",
        False,
    ),
    Case(
        "dry run preflight failed",
        _dry({"status": "failed", "error": {"code": "codex_missing"}}, route="readyz", http=503),
        "terminal-failure",
        "BLOCKED/runner",
        False,
    ),
    Case(
        "dry run unknown trace answered 200",
        _dry(completed(), http=200),
        "dry-run-unexpected",
        "BLOCKED/schema",
        False,
        quoted_field="httpStatus",
    ),
    Case(
        "dry run error answer without code",
        _dry({"message": "not found"}),
        "dry-run-unexpected",
        "BLOCKED/schema",
        False,
    ),
    Case(
        "terminal failure",
        observation({"status": "failed", "error": {"code": "turn_failed"}}),
        "terminal-failure",
        "BLOCKED/runner",
        False,
        quoted_field="response.error.code",
    ),
    Case(
        "failure without error.code",
        observation({"status": "cancelled"}),
        "terminal-failure",
        "BLOCKED/runner",
        False,
        quoted_field="response.error.code",
    ),
    Case(
        "not JSON",
        observation(None, http=200, rawBody="<html>busy</html>"),
        "not-json",
        "BLOCKED/schema",
        False,
        quoted_field="rawBody",
    ),
    Case(
        "empty body", observation(None, http=200, rawBody=""), "not-json", "BLOCKED/schema", False
    ),
    Case(
        "JSON array",
        observation(["completed"]),
        "not-json",
        "BLOCKED/schema",
        False,
        quoted_field="response",
    ),
    Case(
        "202 without traceId",
        observation({"status": "accepted"}, http=202),
        "accepted-without-trace-id",
        "BLOCKED/schema",
        False,
        quoted_field="response.traceId",
    ),
    Case(
        "202 with a traceId but never polled",
        observation({"status": "accepted", "traceId": "t-1"}, http=202),
        "not-terminal",
        "BLOCKED/transport",
        False,
    ),
    Case(
        "no status",
        observation({"reply": {"content": "hi"}}),
        "status-missing",
        "BLOCKED/schema",
        False,
        quoted_field="response.status",
    ),
    Case(
        "still running",
        observation({"status": "running", "waitingFor": "model"}),
        "not-terminal",
        "BLOCKED/transport",
        False,
        quoted_field="response.status",
    ),
    Case(
        "unknown status",
        observation({"status": "done"}),
        "status-unknown",
        "BLOCKED/schema",
        False,
        quoted_field="response.status",
    ),
    Case(
        "completed with 500",
        observation(completed(), http=500),
        "unexpected-http",
        "BLOCKED/transport",
        False,
        quoted_field="httpStatus",
    ),
    Case(
        "completed with no status code",
        observation(completed(), http=None),
        "unexpected-http",
        "BLOCKED/transport",
        False,
    ),
    Case(
        "reply by the user",
        observation(with_value(completed(), "reply.role", "user")),
        "reply-not-assistant",
        "BLOCKED/schema",
        False,
        quoted_field="response.reply.role",
    ),
    Case(
        "reply missing",
        observation(without(completed(), "reply")),
        "reply-missing",
        "BLOCKED/schema",
        False,
        quoted_field="response.reply.content",
    ),
    Case(
        "reply not text",
        observation(with_value(completed(), "reply.content", 42)),
        "reply-missing",
        "BLOCKED/schema",
        False,
    ),
    Case(
        "reply empty",
        observation(completed(content="  \n ")),
        "reply-empty",
        "BLOCKED/schema",
        False,
        quoted_field="response.reply.content",
    ),
    Case(
        "text-only fallback",
        observation(completed(provider="openai-responses-fallback")),
        "live-reply-text-only",
        "LIVE",
        True,
        "text-chat-only",
        quoted_field="response.provider",
    ),
    Case(
        "text-chat-only capability",
        observation(completed(capabilityLevel="text-chat-only")),
        "live-reply-text-only",
        "LIVE",
        True,
        "text-chat-only",
        quoted_field="response.capabilityLevel",
    ),
    Case(
        "full agent",
        observation(completed()),
        "live-reply-full-agent",
        "LIVE",
        True,
        "full-agent-session",
        gate=True,
        quoted_field="response.provider",
    ),
    Case(
        "full agent, extra fields",
        observation(completed(threadId="t1", eventCount=12, lastEvent={"type": "turn.completed"})),
        "live-reply-full-agent",
        "LIVE",
        True,
        "full-agent-session",
        gate=True,
    ),
    Case(
        "stdio feasibility ready",
        observation(completed(codexStdioFeasibility={"status": "ready", "blockers": []})),
        "live-reply-full-agent",
        "LIVE",
        True,
        "full-agent-session",
        gate=True,
    ),
    Case(
        "recorded reply length",
        observation(completed() | {"reply": {"content": {"omitted": "reply-text", "length": 5}}}),
        "live-reply-full-agent",
        "LIVE",
        True,
        "full-agent-session",
        gate=True,
    ),
    Case(
        "unknown provider",
        observation(completed(provider="my-runner")),
        "live-reply-runner-unknown",
        "LIVE",
        True,
        quoted_field="response.provider",
    ),
    Case(
        "no provider",
        observation(without(completed(), "provider")),
        "live-reply-runner-unknown",
        "LIVE",
        True,
    ),
    Case(
        "stub says completed",
        observation(completed(), origin="stub"),
        "live-reply-full-agent",
        "LOCAL",
        False,
        "full-agent-session",
        quoted_field="origin",
    ),
    Case(
        "source check says completed",
        observation(completed(), origin="source-check"),
        "live-reply-full-agent",
        "SOURCE",
        False,
        "full-agent-session",
        quoted_field="origin",
    ),
    Case(
        "fixture credential",
        observation(credential_answer(), origin="fixture", http=503),
        "credential-missing",
        "BLOCKED/credential",
        False,
        quoted_field="origin",
    ),
    Case(
        "loopback",
        observation(completed(), endpoint="http://127.0.0.1:8080/v1/agent/chat"),
        "live-reply-full-agent",
        "LOCAL",
        True,
        "full-agent-session",
        gate=True,
        quoted_field="endpoint",
    ),
    Case(
        "file url",
        observation(completed(), endpoint="file:///tmp/answer.json"),
        "live-reply-full-agent",
        "LOCAL",
        True,
        "full-agent-session",
        gate=True,
        quoted_field="endpoint",
    ),
    Case(
        "peer was loopback",
        observation(completed(), peerLoopback=True),
        "live-reply-full-agent",
        "LOCAL",
        True,
        "full-agent-session",
        gate=True,
        quoted_field="peerLoopback",
    ),
    Case(
        "dry run of a read-only answer",
        _dry(read_only_answer(), route="readyz", http=200),
        "read-only-session-registry",
        "DRY-RUN",
        True,
        "read-only-session-registry",
        quoted_field="mode",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_table_gives_the_expected_verdict(case: Case) -> None:
    verdict = classify(case.observation, declaring(case.observation))
    assert verdict.rule == case.rule
    assert verdict.label == case.label
    assert verdict.passed is case.passed
    assert verdict.capability == case.capability
    assert verdict.agent_runner_gate is case.gate
    assert verdict.environment == case.observation.environment
    assert verdict.endpoint == case.observation.endpoint
    assert verdict.reasons, "every verdict says why"
    if case.quoted_field is not None:
        assert case.quoted_field in {reason.field for reason in verdict.reasons}


def test_every_row_of_the_table_has_a_case() -> None:
    covered = {case.rule for case in CASES}
    assert covered == {row.id for row in DECISION_TABLE}


def test_every_ceiling_has_a_case() -> None:
    codes = {reason.code for case in CASES for reason in classify(case.observation).reasons}
    policy = ReadinessPolicy(declared_endpoints={"dev": LIVE_URL})
    elsewhere = observation(completed(), endpoint="https://edge.dev.example.test/v1/agent/chat")
    codes |= {reason.code for reason in classify(elsewhere, policy).reasons}
    assert {ceiling.id for ceiling in CEILINGS} <= codes


def test_only_a_live_reply_satisfies_the_runner_gate() -> None:
    for case in CASES:
        verdict = classify(case.observation, declaring(case.observation))
        if verdict.agent_runner_gate:
            assert verdict.passed
            assert verdict.capability == "full-agent-session"


@pytest.mark.parametrize("path", [check.path for check in READ_ONLY_REGISTRY_FIELDS])
def test_a_missing_read_only_field_is_not_the_registry_pass(path: str) -> None:
    answer = read_only_answer()
    if path == "httpStatus":
        verdict = classify(observation(answer, http=None))
    else:
        verdict = classify(observation(without(answer, path.removeprefix("response."))))
    if path in ("response.provider", "response.sessionMode"):
        # Still claims the registry through another field.
        assert verdict.rule == "read-only-session-registry-incomplete"
    assert not verdict.passed
    assert verdict.label == "BLOCKED/schema"
    named = [reason for reason in verdict.reasons if reason.field == path]
    assert named
    assert named[0].code in ("field-missing", "field-wrong")


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("session.status", "stopped"),
        ("session.idleTimeoutMs", "600000"),
        ("session.idleTimeoutMs", -1),
        ("session.lastTraceId", ""),
        ("session.longLivedSession", "true"),
        ("session.longLivedSession", 1),
        ("longLivedSessionGate.status", "open"),
        ("runnerLimitations", ["not-codex-stdio", "not-write-capable"]),
        ("runnerLimitations", "not-codex-stdio"),
        ("capabilityLevel", "read-write"),
        ("sessionMode", "codex-stdio-session"),
    ],
)
def test_a_wrong_read_only_field_is_named(path: str, value: Any) -> None:
    verdict = classify(observation(with_value(read_only_answer(), path, value)))
    assert verdict.rule == "read-only-session-registry-incomplete"
    assert ("response." + path, "field-wrong") in {(r.field, r.code) for r in verdict.reasons}


def test_the_registry_pass_keeps_the_runner_blockers_in_view() -> None:
    answer = with_value(
        read_only_answer(),
        "codexStdioFeasibility",
        {"status": "blocked", "blockers": ["codex_cli_binary_missing", "codex_home_missing"]},
    )
    verdict = classify(observation(answer))
    assert verdict.passed
    assert not verdict.agent_runner_gate
    assert verdict.runner_blockers == ("codex_cli_binary_missing", "codex_home_missing")
    gate = next(r for r in verdict.reasons if r.code == "runner-gate-not-satisfied")
    assert "codex_cli_binary_missing" in gate.message
    assert "cannot run the agent" in gate.message  # plain words, not the rule's own name
    assert "gate" not in gate.message


@pytest.mark.parametrize("blocker", sorted(KNOWN_RUNNER_BLOCKERS))
def test_each_listed_stdio_blocker_blocks_the_runner(blocker: str) -> None:
    answer = completed(codexStdioFeasibility={"blockers": [blocker]})
    verdict = classify(observation(answer))
    assert verdict.label == "BLOCKED/runner"
    assert verdict.runner_blockers == (blocker,)
    reason = next(r for r in verdict.reasons if r.observed == blocker)
    assert reason.code == "runner-blocker"
    assert reason.message == KNOWN_RUNNER_BLOCKERS[blocker]
    # what a person reads names the missing thing, not an internal term
    assert not any(word in reason.message for word in ("boundary", "injected", "gate"))


def test_an_unlisted_stdio_blocker_still_blocks() -> None:
    verdict = classify(observation(completed(codexStdioFeasibility={"blockers": ["gpu_missing"]})))
    assert verdict.label == "BLOCKED/runner"
    assert "runner-blocker-unlisted" in {r.code for r in verdict.reasons}


@pytest.mark.parametrize("path", [check.path for check in HARDWARE_CAPABILITY_FIELDS])
def test_a_missing_hardware_field_is_named(path: str) -> None:
    if path == "httpStatus":
        verdict = classify(observation(hardware_answer(), http=None))
    else:
        verdict = classify(observation(without(hardware_answer(), path.removeprefix("response."))))
    assert verdict.rule == "hardware-capability-incomplete"
    assert path in {reason.field for reason in verdict.reasons}


def test_a_hardware_structured_blocker_is_a_runner_failure() -> None:
    answer = {
        "status": "failed",
        "provider": "hwlab-hardware-capability",
        "error": {"code": "gateway_offline"},
    }
    verdict = classify(observation(answer, http=503))
    assert verdict.rule == "terminal-failure"
    assert verdict.summary.error_class == "gateway_offline"


@pytest.mark.parametrize("origin", ["mock", "fixture", "stub", "local-echo", "hand-made"])
def test_completed_from_anything_but_a_live_route_is_never_live(origin: str) -> None:
    verdict = classify(observation(completed(), origin=origin))
    assert verdict.level == "LOCAL"
    assert not verdict.passed
    assert not verdict.agent_runner_gate
    reason = next(r for r in verdict.reasons if r.code == "origin-not-live")
    assert reason.observed == origin


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://127.0.0.1:16666/v1/agent/chat",
        "http://127.200.3.4/v1/agent/chat",
        "http://[::1]:8080/v1/agent/chat",
        "http://localhost:8080/v1/agent/chat",
        "http://LOCALHOST./v1/agent/chat",
        "http://agc.localhost/v1/agent/chat",
        "http://[::ffff:127.0.0.1]/v1/agent/chat",
        "http://0.0.0.0:8080/v1/agent/chat",
        "file:///srv/answers/chat.json",
    ],
)
def test_loopback_and_file_endpoints_are_at_most_local(endpoint: str) -> None:
    verdict = classify(observation(completed(), endpoint=endpoint))
    assert verdict.label == "LOCAL"
    assert verdict.passed


@pytest.mark.parametrize(
    "endpoint",
    [
        "https://127.0.0.1.example.test/v1/agent/chat",
        "https://localhost.example.test/v1/agent/chat",
        "http://10.0.0.7:16666/v1/agent/chat",
        "http://[2001:db8::1]/v1/agent/chat",
    ],
)
def test_names_that_only_look_local_are_not(endpoint: str) -> None:
    declared = ReadinessPolicy(declared_endpoints={"dev": endpoint})
    assert classify(observation(completed(), endpoint=endpoint), declared).label == "LIVE"


def test_an_undeclared_endpoint_is_never_the_environments_live_evidence() -> None:
    policy = ReadinessPolicy(declared_endpoints={"dev": LIVE_URL})
    edge = observation(completed(), endpoint="https://edge.dev.example.test/v1/agent/chat")
    verdict = classify(edge, policy)
    assert verdict.label == "BLOCKED/transport"
    assert not verdict.passed
    assert "undeclared-endpoint" in {r.code for r in verdict.reasons}
    assert classify(observation(completed(), endpoint=LIVE_URL + "/"), policy).label == "LIVE"
    # Another environment, whose live endpoint nothing declares: never LIVE.
    other_env = observation(completed(), environment="staging", endpoint="https://s.test/x")
    verdict = classify(other_env, policy)
    assert (verdict.label, verdict.passed) == ("DRY-RUN", True)
    assert "endpoint-not-declared" in {r.code for r in verdict.reasons}


LIVE_PASSES = [
    case
    for case in CASES
    if classify(case.observation, declaring(case.observation)).label == "LIVE"
]


@pytest.mark.parametrize("case", LIVE_PASSES, ids=[case.name for case in LIVE_PASSES])
@pytest.mark.parametrize(
    "endpoint",
    [LIVE_URL, "http://10.0.0.7:16666/v1/agent/chat", "https://stub.example.test/chat"],
)
def test_with_no_live_endpoint_declared_no_answer_is_live(case: Case, endpoint: str) -> None:
    """A stub (or anything else) answering on a non-loopback address, with no endpoint
    declared for the environment, is at most DRY-RUN: it is not known to be the live
    route. Declaring that very endpoint (the --live-endpoint flag) lets it be LIVE."""
    answer = replace(case.observation, endpoint=endpoint)
    verdict = classify(answer)
    assert verdict.label == "DRY-RUN"
    assert verdict.passed
    assert not verdict.meets("LIVE")
    reason = next(r for r in verdict.reasons if r.code == "endpoint-not-declared")
    assert (reason.field, reason.observed) == ("endpoint", endpoint)
    declared = ReadinessConfig().declaring("dev", endpoint)
    assert classify(answer, declared.policy).label == "LIVE"
    # A declaration for another environment changes nothing for this one.
    elsewhere = ReadinessConfig().declaring("prod", endpoint)
    assert classify(answer, elsewhere.policy).label == "DRY-RUN"


def test_the_provider_key_names_are_policy() -> None:
    answer = credential_answer("ANTHROPIC_API_KEY")
    assert classify(observation(answer)).label == "BLOCKED/runner"
    policy = ReadinessPolicy(provider_key_env=("ANTHROPIC_API_KEY",))
    assert classify(observation(answer), policy).label == "BLOCKED/credential"


def test_the_reply_text_is_never_in_the_verdict() -> None:
    text = "the assistant said something only it should know"
    verdict = classify(observation(completed(content=text)))
    document = json.dumps(verdict.to_dict())
    assert text not in document
    assert verdict.summary.reply_length == len(text)
    assert verdict.summary.reply_non_empty
    assert "<48 characters>" in document


def test_the_summary_names_provider_model_backend_and_error_class() -> None:
    verdict = classify(observation(completed()))
    assert verdict.summary.to_dict() == {
        "http_status": 200,
        "status": "completed",
        "provider": "codex-stdio",
        "model": "gpt-test",
        "backend": "app-server",
        "reply_non_empty": True,
        "reply_length": 5,
        "error_class": None,
    }
    failed = classify(observation(credential_answer(), http=503))
    assert failed.summary.error_class == "provider_unavailable"
    assert classify(observation(completed(), http=502)).summary.error_class == "http-502"
    timeout = classify(observation(None, http=None, transportError="idle-timeout"))
    assert timeout.summary.error_class == "idle-timeout"


def test_meets_compares_levels_of_passes_only() -> None:
    live = classify(observation(completed()), DECLARED)
    assert live.meets("LIVE")
    assert live.meets("LOCAL")
    local = classify(observation(completed(), endpoint="http://127.0.0.1/v1/agent/chat"))
    assert local.meets("LOCAL")
    assert not local.meets("LIVE")
    blocked = classify(observation(credential_answer()))
    assert not blocked.meets("SOURCE")


def test_the_policy_digest_changes_with_the_policy() -> None:
    default = readiness_policy_digest(ReadinessPolicy())
    assert default == readiness_policy_digest(ReadinessPolicy())
    assert len(default) == 64
    other = readiness_policy_digest(ReadinessPolicy(provider_key_env=("X",)))
    assert other != default
    rows = decision_table_document()
    assert [row["id"] for row in rows if row["table"] == "decision"] == [
        row.id for row in DECISION_TABLE
    ]
