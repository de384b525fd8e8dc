"""The decision table and ``classify`` (pure).

The table is data: :data:`DECISION_TABLE` is an ordered tuple of :class:`DecisionRow`;
the first row whose condition matches decides the level, blocker, capability and
pass, and gives the reasons. :data:`CEILINGS` then lower what the observation cannot
support whatever it says: an answer that did not come from a live route is never
reply evidence; a loopback or ``file://`` endpoint is at most ``LOCAL``; a dry run is
at most ``DRY-RUN``; an endpoint other than the environment's declared one is never
``LIVE``, and with no endpoint declared for the environment no answer is ``LIVE``.
Both tables are in ``docs/readiness.md`` and enter the policy digest.

The rules: only a real deployed route answering ``status: "completed"`` with a
non-empty assistant ``reply.content`` is a live pass; a
provider credential named in ``error.missingEnv`` is ``BLOCKED/credential``; a read-only
session registry passes only as such and never satisfies the full runner gate; any
``codexStdioFeasibility`` blocker is ``BLOCKED/runner``; a text-only fallback never
satisfies the agent-runner gate; transport failures, incomplete schemas, unexpected HTTP
statuses and empty replies are ``BLOCKED`` with ``transport`` or ``schema``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from agc._core.redact import redact_text
from agc.readiness._model import (
    LEVEL_ORDER,
    Blocker,
    Capability,
    Level,
    Observation,
    ReadinessVerdict,
    Reason,
    ReplySummary,
    field_value,
    quote,
    reply_length,
    transport_error_text,
    usable_trace_id,
)
from agc.readiness._policy import ReadinessPolicy, policy_digest
from agc.readiness._urls import is_local_endpoint, safe_url

__all__ = [
    "CEILINGS",
    "DECISION_TABLE",
    "KNOWN_RUNNER_BLOCKERS",
    "Ceiling",
    "DecisionRow",
    "classify",
    "decision_table_document",
    "readiness_policy_digest",
]

FAILURE_STATUSES: Final = frozenset({"failed", "cancelled", "canceled", "blocked", "error"})
RUNNING_STATUSES: Final = frozenset({"running", "queued", "pending", "accepted", "in_progress"})
READY_STATUSES: Final = frozenset({"ready", "ok"})

READ_ONLY_SESSION_MODE: Final = "controlled-readonly-session-registry"
READ_ONLY_CAPABILITY_LEVEL: Final = "read-only-session-tools"
TEXT_ONLY_CAPABILITY_LEVEL: Final = "text-chat-only"
READ_ONLY_LIMITATIONS: Final = (
    "not-codex-stdio",
    "not-write-capable",
    "process-local-session-registry",
)

KNOWN_RUNNER_BLOCKERS: Final[Mapping[str, str]] = {
    "codex_cli_binary_missing": "the Codex CLI binary is missing",
    "codex_cli_not_executable": "the Codex CLI binary is not executable",
    "codex_cli_native_dependency_missing": "a native dependency of the Codex CLI is missing",
    "runner_lifecycle_missing": "no session supervisor lifecycle (start, idle, cancel, reap)",
    "stdio_protocol_not_wired": "the Codex stdio protocol does not answer its handshake",
    "workspace_mount_missing": "the workspace is not mounted",
    "workspace_write_boundary_blocked": "the workspace is not writable",
    "codex_home_missing": "CODEX_HOME is missing",
    "codex_home_write_blocked": "CODEX_HOME is not writable",
    "provider_token_boundary": "the model provider's API key is not set where the agent runs",
}
"""The ``codexStdioFeasibility`` blockers of the chat protocol, with what each means."""


# -- facts: reading the observation -------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """An observation and the policy, with field access by dotted path."""

    observation: Observation
    policy: ReadinessPolicy

    def get(self, path: str) -> tuple[bool, Any]:
        """``(present, value)``: ``response.<path>`` inside the body, else an
        observation member (``httpStatus``, ``origin`` …)."""
        if path.startswith("response."):
            return field_value(self.observation.response, path.removeprefix("response."))
        members = self.observation.to_dict()
        return (path in members, members.get(path))

    def value(self, path: str) -> Any:
        return self.get(path)[1]

    @property
    def response(self) -> Mapping[str, Any] | None:
        body = self.observation.response
        return body if isinstance(body, Mapping) else None

    @property
    def status(self) -> Any:
        return self.value("response.status")

    @property
    def http_ok(self) -> bool:
        status = self.observation.http_status
        return status is not None and 200 <= status < 300

    @property
    def reply_length(self) -> int | None:
        return reply_length(self.value("response.reply.content"))

    def reason(self, code: str, path: str, message: str) -> Reason:
        """A reason quoting ``path`` as observed (the reply text only as its length)."""
        present, value = self.get(path)
        if path == "response.reply.content":
            length = reply_length(value)
            observed: Any = None if length is None else f"<{length} characters>"
        else:
            observed = quote(value) if present else None
        return Reason(code=code, field=path, observed=observed, present=present, message=message)


def runner_blockers(response: Any) -> list[str]:
    """The names in ``codexStdioFeasibility.blockers`` (strings, or objects naming a
    ``code``, ``id`` or ``name``), quoted."""
    _, blockers = field_value(response, "codexStdioFeasibility.blockers")
    if not isinstance(blockers, list):
        return []
    names: list[str] = []
    for item in blockers:
        name = item
        if isinstance(item, Mapping):
            name = next(
                (item[k] for k in ("code", "id", "name") if isinstance(item.get(k), str)), None
            )
        if isinstance(name, str) and name:
            names.append(str(quote(name)))
    return names


# -- field checks (data) --------------------------------------------------------------------


@dataclass(frozen=True)
class FieldCheck:
    """One required field of a claimed mode: its path, what it must be, the test."""

    path: str
    expected: str
    test: Callable[[Any, ReadinessPolicy], bool]


def _is_text(value: Any, _: ReadinessPolicy) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _is_count(value: Any, _: ReadinessPolicy) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _is_int(value: Any, _: ReadinessPolicy) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_list(value: Any, _: ReadinessPolicy) -> bool:
    return isinstance(value, list)


def _equals(expected: Any) -> Callable[[Any, ReadinessPolicy], bool]:
    return lambda value, _: value == expected and type(value) is type(expected)


def _has_reply(value: Any, _: ReadinessPolicy) -> bool:
    length = reply_length(value)
    return length is not None and length > 0


def _has_all_limitations(value: Any, _: ReadinessPolicy) -> bool:
    return isinstance(value, list) and all(item in value for item in READ_ONLY_LIMITATIONS)


def _is_http_ok(value: Any, _: ReadinessPolicy) -> bool:
    return isinstance(value, int) and 200 <= value < 300


READ_ONLY_REGISTRY_FIELDS: Final[tuple[FieldCheck, ...]] = (
    FieldCheck(
        "response.provider",
        "one of the read-only providers",
        lambda v, p: isinstance(v, str) and v in p.read_only_providers,
    ),
    FieldCheck(
        "response.sessionMode", f'"{READ_ONLY_SESSION_MODE}"', _equals(READ_ONLY_SESSION_MODE)
    ),
    FieldCheck(
        "response.capabilityLevel",
        f'"{READ_ONLY_CAPABILITY_LEVEL}"',
        _equals(READ_ONLY_CAPABILITY_LEVEL),
    ),
    FieldCheck(
        "response.session.status",
        "idle, ready or busy",
        lambda v, _: v in ("idle", "ready", "busy"),
    ),
    FieldCheck("response.session.idleTimeoutMs", "a number of milliseconds", _is_count),
    FieldCheck("response.session.lastTraceId", "a non-empty string", _is_text),
    FieldCheck("response.session.longLivedSession", "true", _equals(True)),
    FieldCheck("response.longLivedSessionGate.status", '"blocked"', _equals("blocked")),
    FieldCheck(
        "response.runnerLimitations", ", ".join(READ_ONLY_LIMITATIONS), _has_all_limitations
    ),
    FieldCheck("response.status", '"completed"', _equals("completed")),
    FieldCheck("response.reply.content", "non-empty assistant text", _has_reply),
    FieldCheck("httpStatus", "a 2xx status", _is_http_ok),
)
"""What a read-only long-lived session registry answer must hold, every field."""

HARDWARE_CAPABILITY_FIELDS: Final[tuple[FieldCheck, ...]] = (
    FieldCheck("response.status", '"completed"', _equals("completed")),
    FieldCheck("response.toolCalls", "a list", _is_list),
    FieldCheck("response.operationId", "a non-empty string", _is_text),
    FieldCheck("response.dispatchStatus", "a non-empty string", _is_text),
    FieldCheck("response.exitCode", "an integer", _is_int),
    FieldCheck("response.runnerTrace.eventLabels", "a list", _is_list),
    FieldCheck("response.capabilityLevel", "a non-empty string", _is_text),
    FieldCheck("httpStatus", "a 2xx status", _is_http_ok),
)
"""What an answer of the registered hardware capability route must hold."""


def _check_fields(
    facts: Facts, checks: tuple[FieldCheck, ...]
) -> tuple[list[Reason], list[Reason]]:
    """``(satisfied, failed)`` reasons, one per field."""
    good: list[Reason] = []
    bad: list[Reason] = []
    for check in checks:
        present, value = facts.get(check.path)
        if present and check.test(value, facts.policy):
            good.append(facts.reason("field-ok", check.path, f"{check.path} is {check.expected}"))
        elif not present:
            bad.append(
                facts.reason(
                    "field-missing",
                    check.path,
                    f"{check.path} is missing; it must be {check.expected}",
                )
            )
        else:
            bad.append(
                facts.reason("field-wrong", check.path, f"{check.path} must be {check.expected}")
            )
    return good, bad


# -- row conditions -------------------------------------------------------------------------

Match = Callable[[Facts], list[Reason] | None]


def _transport_failure(f: Facts) -> list[Reason] | None:
    if f.observation.transport_error is not None:
        error = transport_error_text(f.observation.transport_error)
        return [f.reason("transport-error", "transportError", f"no usable answer: {error}")]
    obs = f.observation
    if obs.http_status is None and obs.response is None and obs.raw_body is None:
        return [f.reason("no-answer", "httpStatus", "no HTTP status and no body: nothing answered")]
    return None


def _probe_refused(f: Facts) -> list[Reason] | None:
    if f.observation.http_status in (401, 403):
        return [
            f.reason(
                "probe-refused",
                "httpStatus",
                "the endpoint refused the probe's own credential (set --auth-env)",
            )
        ]
    return None


def _credential_missing(f: Facts) -> list[Reason] | None:
    if f.status != "failed" or f.value("response.error.code") != "provider_unavailable":
        return None
    missing = f.value("response.error.missingEnv")
    if not isinstance(missing, list):
        return None
    keys = [name for name in missing if isinstance(name, str) and name in f.policy.provider_key_env]
    if not keys:
        return None
    return [
        f.reason("status-failed", "response.status", "the answer is a terminal failure"),
        f.reason("provider-unavailable", "response.error.code", "the provider is unavailable"),
        f.reason(
            "credential-missing",
            "response.error.missingEnv",
            f"the provider credential {', '.join(keys)} is not in the runtime; it must be "
            "injected by the authorised path, never by the gate",
        ),
    ]


def _claims_read_only(f: Facts) -> bool:
    return (
        f.response is not None
        and f.status not in FAILURE_STATUSES
        and (
            f.value("response.provider") in f.policy.read_only_providers
            or f.value("response.sessionMode") == READ_ONLY_SESSION_MODE
            or f.value("response.capabilityLevel") == READ_ONLY_CAPABILITY_LEVEL
        )
    )


def _read_only_registry(f: Facts) -> list[Reason] | None:
    if not _claims_read_only(f):
        return None
    good, bad = _check_fields(f, READ_ONLY_REGISTRY_FIELDS)
    if bad:
        return None
    blockers = runner_blockers(f.observation.response)
    gate = Reason(
        code="runner-gate-not-satisfied",
        field="response.runnerLimitations",
        observed=quote(f.value("response.runnerLimitations")),
        present=True,
        message="a read-only session list cannot run the agent: it never passes as a full "
        "agent endpoint"
        + (f"; the runner stays blocked: {', '.join(blockers)}" if blockers else ""),
    )
    return [*good, gate]


def _read_only_incomplete(f: Facts) -> list[Reason] | None:
    if not _claims_read_only(f):
        return None
    _, bad = _check_fields(f, READ_ONLY_REGISTRY_FIELDS)
    return bad or None


def _runner_infeasible(f: Facts) -> list[Reason] | None:
    present, feasibility = f.get("response.codexStdioFeasibility")
    if not present or not isinstance(feasibility, Mapping):
        return None
    blockers = runner_blockers(f.observation.response)
    blocked = feasibility.get("status") == "blocked"
    if not blocked and not blockers:
        return None
    reasons = []
    if blocked:
        reasons.append(
            f.reason(
                "runner-infeasible",
                "response.codexStdioFeasibility.status",
                "the real Codex stdio (or an equivalent long-lived) runner is not available",
            )
        )
    for name in blockers:
        meaning = KNOWN_RUNNER_BLOCKERS.get(name)
        reasons.append(
            Reason(
                code="runner-blocker" if meaning else "runner-blocker-unlisted",
                field="response.codexStdioFeasibility.blockers",
                observed=name,
                present=True,
                message=meaning or "a runner blocker not in the known list (still a blocker)",
            )
        )
    return reasons


def _provider_unavailable(f: Facts) -> list[Reason] | None:
    if f.status != "failed" or f.value("response.error.code") != "provider_unavailable":
        return None
    return [
        f.reason("provider-unavailable", "response.error.code", "the provider is unavailable"),
        f.reason(
            "runtime-env-missing",
            "response.error.missingEnv",
            "the runtime lacks configuration other than the provider credential",
        ),
    ]


def _claims_hardware(f: Facts) -> bool:
    return (
        f.response is not None
        and f.status not in FAILURE_STATUSES
        and f.value("response.provider") in f.policy.hardware_providers
    )


def _hardware(f: Facts) -> list[Reason] | None:
    if not _claims_hardware(f):
        return None
    good, bad = _check_fields(f, HARDWARE_CAPABILITY_FIELDS)
    if bad:
        return None
    return [
        *good,
        f.reason(
            "runner-gate-not-satisfied",
            "response.provider",
            "the registered hardware capability route is not a full agent runner",
        ),
    ]


def _hardware_incomplete(f: Facts) -> list[Reason] | None:
    if not _claims_hardware(f):
        return None
    _, bad = _check_fields(f, HARDWARE_CAPABILITY_FIELDS)
    return bad or None


def _dry_run_error_answer(f: Facts) -> list[Reason] | None:
    obs = f.observation
    if obs.mode != "dry-run" or obs.route != "error-answer" or f.response is None:
        return None
    if obs.http_status is None or not 400 <= obs.http_status < 500:
        return None
    if not isinstance(f.value("response.error.code"), str):
        return None
    return [
        f.reason("error-answer", "httpStatus", "the chat route answers a request for no turn"),
        f.reason("error-schema", "response.error.code", "with a structured error (error.code)"),
    ]


def _dry_run_preflight_ready(f: Facts) -> list[Reason] | None:
    obs = f.observation
    if obs.mode != "dry-run" or obs.route != "readyz" or not f.http_ok:
        return None
    if f.status not in READY_STATUSES:
        return None
    return [f.reason("preflight-ready", "response.status", "the service's preflight is ready")]


def _terminal_failure(f: Facts) -> list[Reason] | None:
    if f.response is None or f.status not in FAILURE_STATUSES:
        return None
    reasons = [f.reason("terminal-failure", "response.status", "the turn ended in failure")]
    if isinstance(f.value("response.error.code"), str):
        reasons.append(f.reason("error-code", "response.error.code", "the failure's class"))
    else:
        reasons.append(
            f.reason("error-code-missing", "response.error.code", "the failure names no error.code")
        )
    return reasons


def _dry_run_unexpected(f: Facts) -> list[Reason] | None:
    if f.observation.mode != "dry-run":
        return None
    route = f.observation.route
    expected = (
        "a 4xx answer with a structured error.code"
        if route == "error-answer"
        else 'a 2xx answer with status "ready" or "ok"'
    )
    return [
        f.reason("dry-run-unexpected", "httpStatus", f"a dry run ({route}) expects {expected}"),
        f.reason("dry-run-unexpected", "response.status", "the answer's status"),
    ]


def _not_json(f: Facts) -> list[Reason] | None:
    obs = f.observation
    if obs.response is None:
        length = len(obs.raw_body) if obs.raw_body is not None else 0
        return [
            Reason(
                code="not-json",
                field="rawBody",
                observed=f"<{length} characters>",
                present=obs.raw_body is not None,
                message="the body is empty or not JSON",
            )
        ]
    if not isinstance(obs.response, Mapping):
        return [f.reason("not-an-object", "response", "the body is JSON but not an object")]
    return None


def _accepted_without_trace(f: Facts) -> list[Reason] | None:
    if f.observation.http_status != 202 or usable_trace_id(f.value("response.traceId")):
        return None
    return [
        f.reason("accepted", "httpStatus", "the submit was accepted (202)"),
        f.reason(
            "trace-id-unusable",
            "response.traceId",
            "but without a usable traceId (1-256 printable characters) to poll",
        ),
    ]


def _status_missing(f: Facts) -> list[Reason] | None:
    if isinstance(f.status, str):
        return None
    return [f.reason("status-missing", "response.status", "the answer has no status string")]


def _not_terminal(f: Facts) -> list[Reason] | None:
    if f.status not in RUNNING_STATUSES:
        return None
    return [f.reason("not-terminal", "response.status", "the turn had not ended; no reply yet")]


def _status_unknown(f: Facts) -> list[Reason] | None:
    if f.status == "completed":
        return None
    return [f.reason("status-unknown", "response.status", "not a status of the chat protocol")]


def _unexpected_http(f: Facts) -> list[Reason] | None:
    if f.http_ok:
        return None
    return [f.reason("unexpected-http", "httpStatus", "a completed answer must come with 2xx")]


def _reply_not_assistant(f: Facts) -> list[Reason] | None:
    present, role = f.get("response.reply.role")
    if not present or role == "assistant":
        return None
    return [
        f.reason("reply-not-assistant", "response.reply.role", "the reply is not the assistant's")
    ]


def _reply_missing(f: Facts) -> list[Reason] | None:
    if f.reply_length is not None:
        return None
    return [f.reason("reply-missing", "response.reply.content", "completed without reply text")]


def _reply_empty(f: Facts) -> list[Reason] | None:
    if f.reply_length != 0:
        return None
    return [f.reason("reply-empty", "response.reply.content", "completed with an empty reply")]


def _reply_reasons(f: Facts) -> list[Reason]:
    return [
        f.reason("completed", "response.status", "the turn completed"),
        f.reason("reply-non-empty", "response.reply.content", "with a non-empty assistant reply"),
    ]


def _text_only(f: Facts) -> list[Reason] | None:
    provider = f.value("response.provider")
    if provider in f.policy.text_only_providers:
        path = "response.provider"
    elif f.value("response.capabilityLevel") == TEXT_ONLY_CAPABILITY_LEVEL:
        path = "response.capabilityLevel"
    else:
        return None
    return [
        *_reply_reasons(f),
        f.reason(
            "text-only-fallback",
            path,
            "a text-only fallback cannot run the agent: it never passes as a full agent endpoint",
        ),
    ]


def _full_agent(f: Facts) -> list[Reason] | None:
    if f.value("response.provider") not in f.policy.full_agent_providers:
        return None
    return [
        *_reply_reasons(f),
        f.reason("full-agent-provider", "response.provider", "a full agent-session provider"),
    ]


def _runner_unknown(f: Facts) -> list[Reason]:
    return [
        *_reply_reasons(f),
        f.reason(
            "runner-unknown",
            "response.provider",
            "not a provider declared to run full agent sessions: it does not pass as a full "
            "agent endpoint",
        ),
    ]


# -- the tables -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecisionRow:
    """One row: when ``match`` gives reasons, the verdict is this row's.

    Attributes:
        id: stable kebab-case id (the verdict's ``rule``).
        observed: the observed condition, in words.
        level: the level before the ceilings (``LIVE`` for a reply pass).
        blocker, capability, passed: as in the verdict.
        match: the condition; returns the reasons, or ``None`` when it does not match.
    """

    id: str
    observed: str
    level: Level
    blocker: Blocker | None
    capability: Capability | None
    passed: bool
    match: Match

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "observed": self.observed,
            "level": self.level,
            "blocker": self.blocker,
            "capability": self.capability,
            "passed": self.passed,
        }


def _row(
    id: str,
    observed: str,
    level: Level,
    blocker: Blocker | None,
    capability: Capability | None,
    passed: bool,
    match: Match,
) -> DecisionRow:
    return DecisionRow(id, observed, level, blocker, capability, passed, match)


DECISION_TABLE: Final[tuple[DecisionRow, ...]] = (
    _row(
        "transport-failure",
        "transportError set, or no status and no body",
        "BLOCKED",
        "transport",
        None,
        False,
        _transport_failure,
    ),
    _row(
        "probe-refused",
        "HTTP 401 or 403: the endpoint refused the probe",
        "BLOCKED",
        "credential",
        None,
        False,
        _probe_refused,
    ),
    _row(
        "credential-missing",
        'status "failed", error.code "provider_unavailable", error.missingEnv names a provider key',
        "BLOCKED",
        "credential",
        None,
        False,
        _credential_missing,
    ),
    _row(
        "read-only-session-registry",
        "a read-only session registry answer with every field (sessionMode, "
        "capabilityLevel, session.status idle/ready/busy, session.idleTimeoutMs, "
        "session.lastTraceId, session.longLivedSession true, longLivedSessionGate.status "
        "blocked, the three runnerLimitations), completed, non-empty reply",
        "LIVE",
        None,
        "read-only-session-registry",
        True,
        _read_only_registry,
    ),
    _row(
        "read-only-session-registry-incomplete",
        "claims the read-only session registry but a field is missing or wrong",
        "BLOCKED",
        "schema",
        "read-only-session-registry",
        False,
        _read_only_incomplete,
    ),
    _row(
        "runner-infeasible",
        'codexStdioFeasibility.status "blocked" or any codexStdioFeasibility blocker',
        "BLOCKED",
        "runner",
        None,
        False,
        _runner_infeasible,
    ),
    _row(
        "provider-unavailable",
        'status "failed", error.code "provider_unavailable", no provider key in error.missingEnv',
        "BLOCKED",
        "runner",
        None,
        False,
        _provider_unavailable,
    ),
    _row(
        "hardware-capability",
        "the registered hardware capability route, completed, with toolCalls, "
        "operationId, dispatchStatus, exitCode, runnerTrace.eventLabels, capabilityLevel",
        "LIVE",
        None,
        "hardware-capability",
        True,
        _hardware,
    ),
    _row(
        "hardware-capability-incomplete",
        "the hardware capability route with a field missing or wrong",
        "BLOCKED",
        "schema",
        "hardware-capability",
        False,
        _hardware_incomplete,
    ),
    _row(
        "dry-run-error-answer",
        "dry run: the chat route answers a 4xx with a structured error.code",
        "DRY-RUN",
        None,
        None,
        True,
        _dry_run_error_answer,
    ),
    _row(
        "dry-run-preflight-ready",
        'dry run: /readyz answers 2xx with status "ready" or "ok"',
        "DRY-RUN",
        None,
        None,
        True,
        _dry_run_preflight_ready,
    ),
    _row(
        "terminal-failure",
        "status failed, cancelled, blocked or error: a real terminal failure",
        "BLOCKED",
        "runner",
        None,
        False,
        _terminal_failure,
    ),
    _row(
        "dry-run-unexpected",
        "dry run: any other answer",
        "BLOCKED",
        "schema",
        None,
        False,
        _dry_run_unexpected,
    ),
    _row(
        "not-json",
        "the body is empty, not JSON, or not an object",
        "BLOCKED",
        "schema",
        None,
        False,
        _not_json,
    ),
    _row(
        "accepted-without-trace-id",
        "HTTP 202 without a usable traceId",
        "BLOCKED",
        "schema",
        None,
        False,
        _accepted_without_trace,
    ),
    _row("status-missing", "no status string", "BLOCKED", "schema", None, False, _status_missing),
    _row(
        "not-terminal",
        "status running, queued, pending, accepted or in_progress",
        "BLOCKED",
        "transport",
        None,
        False,
        _not_terminal,
    ),
    _row(
        "status-unknown",
        "a status that is not completed and not of the protocol",
        "BLOCKED",
        "schema",
        None,
        False,
        _status_unknown,
    ),
    _row(
        "unexpected-http",
        "completed, but not with a 2xx status",
        "BLOCKED",
        "transport",
        None,
        False,
        _unexpected_http,
    ),
    _row(
        "reply-not-assistant",
        "completed, reply.role is not assistant",
        "BLOCKED",
        "schema",
        None,
        False,
        _reply_not_assistant,
    ),
    _row(
        "reply-missing",
        "completed without reply.content",
        "BLOCKED",
        "schema",
        None,
        False,
        _reply_missing,
    ),
    _row(
        "reply-empty",
        "completed with an empty reply.content",
        "BLOCKED",
        "schema",
        None,
        False,
        _reply_empty,
    ),
    _row(
        "live-reply-text-only",
        "completed, non-empty reply, from a text-only fallback provider",
        "LIVE",
        None,
        "text-chat-only",
        True,
        _text_only,
    ),
    _row(
        "live-reply-full-agent",
        "completed, non-empty reply, from a full agent-session provider",
        "LIVE",
        None,
        "full-agent-session",
        True,
        _full_agent,
    ),
    _row(
        "live-reply-runner-unknown",
        "completed, non-empty reply, from any other provider",
        "LIVE",
        None,
        None,
        True,
        _runner_unknown,
    ),
)
"""The decision table, in order; the first row that matches decides."""


# -- ceilings (data) --------------------------------------------------------------------------

ORIGIN_LEVEL: Final[Mapping[str, Level]] = {
    "mock": "LOCAL",
    "fixture": "LOCAL",
    "stub": "LOCAL",
    "local-echo": "LOCAL",
    "hand-made": "LOCAL",
    "source-check": "SOURCE",
}


@dataclass(frozen=True)
class Ceiling:
    """A limit the observation's circumstances put on any verdict.

    Attributes:
        id: stable kebab-case id (also the reason's code).
        observed: the condition, in words.
        max_level: the highest level a verdict may keep (``BLOCKED``: it becomes
            blocked with ``blocker``).
        keeps_pass: whether a pass survives it (at the lowered level).
        blocker: for ``max_level == "BLOCKED"``, the blocker it sets.
        applies: returns the reason when the ceiling applies, else ``None``.
    """

    id: str
    observed: str
    max_level: Callable[[Observation], Level]
    keeps_pass: bool
    applies: Callable[[Observation, ReadinessPolicy], Reason | None]
    blocker: Blocker | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "observed": self.observed, "keeps_pass": self.keeps_pass}


def _origin_not_live(obs: Observation, _: ReadinessPolicy) -> Reason | None:
    if obs.origin == "live":
        return None
    return Reason(
        code="origin-not-live",
        field="origin",
        observed=obs.origin,
        present=True,
        message=f"the answer came from a {obs.origin}, not a live deployed route: "
        "it is never reply evidence",
    )


def _undeclared_endpoint(obs: Observation, policy: ReadinessPolicy) -> Reason | None:
    declared = policy.declared_endpoints.get(obs.environment)
    if declared is None or _same_endpoint(declared, obs.endpoint):
        return None
    return Reason(
        code="undeclared-endpoint",
        field="endpoint",
        observed=quote(safe_url(obs.endpoint)),
        present=True,
        message=f"not the declared live endpoint of {quote(obs.environment)} "
        f"({quote(declared)}): another route's answer is never its live evidence",
    )


def _dry_run(obs: Observation, _: ReadinessPolicy) -> Reason | None:
    if obs.mode != "dry-run":
        return None
    return Reason(
        code="dry-run",
        field="mode",
        observed="dry-run",
        present=True,
        message="no chat was sent: at most DRY-RUN",
    )


def _local_endpoint(obs: Observation, _: ReadinessPolicy) -> Reason | None:
    if is_local_endpoint(obs.endpoint):
        field, observed = "endpoint", quote(safe_url(obs.endpoint))
        message = "a loopback or file:// endpoint: at most LOCAL, whatever it answers"
    elif obs.peer_loopback:
        field, observed = "peerLoopback", True
        message = "the probe connected to a loopback address: at most LOCAL"
    else:
        return None
    return Reason(
        code="local-endpoint", field=field, observed=observed, present=True, message=message
    )


def _endpoint_not_declared(obs: Observation, policy: ReadinessPolicy) -> Reason | None:
    if obs.environment in policy.declared_endpoints:
        return None
    return Reason(
        code="endpoint-not-declared",
        field="endpoint",
        observed=quote(safe_url(obs.endpoint)),
        present=True,
        message=f"no live endpoint is declared for {quote(obs.environment)} "
        f"(environments.{quote(obs.environment)}.endpoint, or --live-endpoint): whatever "
        "answered is not known to be its live route, so at most DRY-RUN",
    )


def _same_endpoint(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


CEILINGS: Final[tuple[Ceiling, ...]] = (
    Ceiling(
        "origin-not-live",
        "origin is not live (mock, fixture, stub, source-check, local-echo, hand-made)",
        lambda o: ORIGIN_LEVEL.get(o.origin, "LOCAL"),
        False,
        _origin_not_live,
    ),
    Ceiling(
        "undeclared-endpoint",
        "the environment declares another live endpoint",
        lambda _: "BLOCKED",
        False,
        _undeclared_endpoint,
        "transport",
    ),
    Ceiling("dry-run", "mode dry-run: no chat was sent", lambda _: "DRY-RUN", True, _dry_run),
    Ceiling(
        "local-endpoint",
        "loopback host, file:// URL, or the probe's peer was loopback",
        lambda _: "LOCAL",
        True,
        _local_endpoint,
    ),
    Ceiling(
        "endpoint-not-declared",
        "no live endpoint is declared for the environment",
        lambda _: "DRY-RUN",
        True,
        _endpoint_not_declared,
    ),
)
"""Limits applied after the decision row, in order."""


def decision_table_document() -> list[dict[str, Any]]:
    """Both tables as JSON data (for the docs, the policy digest and ``--json``)."""
    return [
        *({"table": "decision", **row.to_dict()} for row in DECISION_TABLE),
        *({"table": "ceiling", **ceiling.to_dict()} for ceiling in CEILINGS),
    ]


def readiness_policy_digest(policy: ReadinessPolicy) -> str:
    """SHA-256 hex over the policy and both tables (RFC 8785 canonical JSON)."""
    return policy_digest(policy, decision_table_document())


# -- classify -----------------------------------------------------------------------------------


def classify(observation: Observation, policy: ReadinessPolicy | None = None) -> ReadinessVerdict:
    """The verdict on one observation (pure: no I/O, no clock).

    Args:
        observation: what was seen (:meth:`Observation.from_dict` parses the JSON).
        policy: the decision table's parameters; the defaults when ``None``.

    Returns:
        A :class:`ReadinessVerdict`; ``rule`` names the deciding row of
        :data:`DECISION_TABLE`, then the :data:`CEILINGS` that applied lower it.
    """
    policy = policy or ReadinessPolicy()
    facts = Facts(observation, policy)
    for row in DECISION_TABLE:
        reasons = row.match(facts)
        if reasons is not None:
            break
    else:  # pragma: no cover - the last row always matches
        raise AssertionError("no decision row matched")
    verdict = ReadinessVerdict(
        environment=redact_text(observation.environment),
        endpoint=safe_url(observation.endpoint),
        level=row.level,
        blocker=row.blocker,
        capability=row.capability,
        passed=row.passed,
        agent_runner_gate=row.passed and row.capability == "full-agent-session",
        rule=row.id,
        reasons=tuple(reasons),
        runner_blockers=tuple(runner_blockers(observation.response)),
        summary=summarize(observation),
    )
    for ceiling in CEILINGS:
        reason = ceiling.applies(observation, policy)
        if reason is not None:
            verdict = _lower(verdict, ceiling, ceiling.max_level(observation), reason)
    return verdict


def _lower(
    verdict: ReadinessVerdict, ceiling: Ceiling, limit: Level, reason: Reason
) -> ReadinessVerdict:
    reasons = (*verdict.reasons, reason)
    if verdict.level == "BLOCKED":
        # Already blocked: the blocker stands; what would have withheld a pass anyway
        # (not live, another route) is still worth saying.
        return verdict if ceiling.keeps_pass else replace(verdict, reasons=reasons)
    if limit == "BLOCKED":
        return replace(
            verdict,
            level="BLOCKED",
            blocker=ceiling.blocker,
            passed=False,
            agent_runner_gate=False,
            reasons=reasons,
        )
    level = limit if LEVEL_ORDER[limit] < LEVEL_ORDER[verdict.level] else verdict.level
    if level == verdict.level and ceiling.keeps_pass:
        return verdict  # nothing lowered: no reason to add
    passed = verdict.passed and ceiling.keeps_pass
    return replace(
        verdict,
        level=level,
        passed=passed,
        agent_runner_gate=verdict.agent_runner_gate and passed,
        reasons=reasons,
    )


def summarize(observation: Observation) -> ReplySummary:
    """The :class:`ReplySummary` of an observation (quoted; the reply only as a length)."""
    body = observation.response

    def get(path: str) -> Any:
        return field_value(body, path)[1]

    status = get("status")
    length = reply_length(get("reply.content"))
    error_class: Any = None
    code = get("error.code")
    if status in FAILURE_STATUSES and isinstance(code, str):
        error_class = quote(code)
    elif observation.transport_error is not None:
        error_class = quote(observation.transport_error)
    elif observation.http_status is not None and not 200 <= observation.http_status < 300:
        error_class = f"http-{observation.http_status}"
    elif body is None and observation.raw_body is not None:
        error_class = "not-json"

    def text(path: str) -> Any:
        value = get(path)
        return quote(value) if isinstance(value, str) else None

    return ReplySummary(
        http_status=observation.http_status,
        status=text("status"),
        provider=text("provider"),
        model=text("model"),
        backend=text("backend"),
        reply_non_empty=bool(length),
        reply_length=length,
        error_class=error_class,
    )
