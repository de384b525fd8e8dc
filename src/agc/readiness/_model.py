"""The readiness vocabulary, the observation format and the verdict (pure, no I/O).

An *observation* is what was seen when an agent chat endpoint was asked (or what a
recorded answer says was seen): where it came from (``origin``), the HTTP status, the
parsed body. A *verdict* is what :func:`agc.readiness.classify` makes of it: an evidence
level, a blocker, the runner's capability, pass or not, and the reasons, each quoting
the observed field. Both formats are documented in ``docs/readiness.md``.

Nothing here prints or stores a value as it came in: every quoted value goes through
:func:`quote`, which runs the shared secret detector (:mod:`agc._core.redact`) over it
first and bounds its length afterwards, and the assistant's reply text is never quoted
at all (only whether it is empty and its length).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast, get_args

from agc._core.json import exceeds_depth
from agc._core.redact import distinct_names, redact_text
from agc.errors import ObservationInvalidError

__all__ = [
    "BLOCKERS",
    "CAPABILITIES",
    "LEVELS",
    "LEVEL_ORDER",
    "MAX_OBSERVATION_DEPTH",
    "MODES",
    "OBSERVATION_SCHEMA_VERSION",
    "ORIGINS",
    "VERDICT_SCHEMA_VERSION",
    "Blocker",
    "Capability",
    "Level",
    "Mode",
    "Observation",
    "Origin",
    "ReadinessVerdict",
    "Reason",
    "ReplySummary",
    "field_value",
    "quote",
    "redact_json",
    "reply_length",
    "scrub",
    "transport_error_text",
    "usable_trace_id",
]

Level = Literal["SOURCE", "LOCAL", "DRY-RUN", "LIVE", "BLOCKED"]
Blocker = Literal["credential", "runner", "transport", "schema"]
Capability = Literal[
    "full-agent-session", "read-only-session-registry", "text-chat-only", "hardware-capability"
]
Origin = Literal["live", "mock", "fixture", "stub", "source-check", "local-echo", "hand-made"]
Mode = Literal["live", "dry-run"]
Route = Literal["chat", "readyz", "error-answer"]

LEVELS: Final[tuple[Level, ...]] = get_args(Level)
BLOCKERS: Final[tuple[Blocker, ...]] = get_args(Blocker)
CAPABILITIES: Final[tuple[Capability, ...]] = get_args(Capability)
ORIGINS: Final[tuple[Origin, ...]] = get_args(Origin)
MODES: Final[tuple[Mode, ...]] = get_args(Mode)
ROUTES: Final[tuple[Route, ...]] = get_args(Route)

LEVEL_ORDER: Final[Mapping[Level, int]] = {"SOURCE": 0, "LOCAL": 1, "DRY-RUN": 2, "LIVE": 3}
"""Evidence levels that can pass, weakest first (``--require-level`` compares by it).
``BLOCKED`` is not in it: a blocked verdict never passes."""

OBSERVATION_SCHEMA_VERSION: Final = 1
MAX_OBSERVATION_DEPTH: Final = 100
"""Deepest nesting of arrays and objects in an observation (an endpoint's answer included).
A chat answer nests a dozen levels; every walk over the answer (redaction, the stored
form, quoting) is recursive, so a deeper one is refused rather than a ``RecursionError``."""
VERDICT_SCHEMA_VERSION: Final = 1

_TRANSPORT_ERRORS: Final[Mapping[str, str]] = {
    "connect": "the connection failed (refused, unreachable, or no such host)",
    "timeout": "it timed out",
    "protocol": "the answer broke the HTTP protocol",
    "transport": "the connection failed while the answer came",
    "too-large": "the answer was larger than the probe reads",
    "deadline": "the maximum wait ran out before a terminal answer",
    "idle-timeout": "the idle timeout ran out with no progress",
}


def transport_error_text(error: str) -> str:
    """An observation's ``transportError`` (the probe's word for what failed:
    ``connect``, ``timeout``, ``submit-http-503`` …) in words, for a person; a word of
    another writer's observation is quoted as it is."""
    if error in _TRANSPORT_ERRORS:
        return _TRANSPORT_ERRORS[error]
    status = error.removeprefix("submit-http-")
    if status != error and status.isdigit():
        return f"the submit was refused with HTTP {status}"
    return f'the transport error "{quote(error)}"'


_MAX_QUOTED_CHARS: Final = 120
_MAX_QUOTED_ITEMS: Final = 16
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _escape_control(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def scrub(text: str) -> str:
    """``text`` with any lone surrogate (no UTF-8 form) replaced by ``?``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8")
    return text


def quote(value: Any) -> Any:
    """A value as it may appear in a reason or a summary: redacted, bounded, inert.

    Strings: secrets replaced by ``[REDACTED:<kind>]`` (the shared detector) *before*
    cutting to 120 characters, so a cut never leaves half a secret unrecognised; control
    characters escaped so nothing reaches a terminal as an escape sequence. Lists: the
    first 16 items, quoted. Objects: ``"<object with N members>"``. Other JSON scalars
    as they are; NaN/Infinity as strings.
    """
    if isinstance(value, str):
        text = _CONTROL.sub(_escape_control, redact_text(scrub(value)))
        if len(text) > _MAX_QUOTED_CHARS:
            text = text[: _MAX_QUOTED_CHARS - 1] + "…"
        return text
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, list | tuple):
        items = [quote(item) for item in value[:_MAX_QUOTED_ITEMS]]
        if len(value) > _MAX_QUOTED_ITEMS:
            items.append(f"… {len(value) - _MAX_QUOTED_ITEMS} more")
        return items
    if isinstance(value, Mapping):
        return f"<object with {len(value)} members>"
    return f"<{type(value).__name__}>"


def redact_json(value: Any) -> Any:
    """A copy of a JSON value with the shared detector run over every string and key.

    Unlike :func:`agc._core.redact.redact_value`, no key is exempt: an observation's
    ``id`` or ``signature`` is whatever the endpoint sent, not a provider-checked token.
    Lone surrogates become ``?`` (:func:`scrub`), so the result always has a UTF-8 form.
    An object keeps every member: keys that the redaction (or ``?``) makes equal are
    named apart, ``<text>-1``, ``-2`` … (:func:`agc._core.redact.distinct_names`).
    """
    if isinstance(value, str):
        return redact_text(scrub(value))
    if isinstance(value, list | tuple):
        return [redact_json(item) for item in value]
    if isinstance(value, Mapping):
        keys = [(key, redact_text(scrub(str(key)))) for key in value]
        renamed = distinct_names(keys)
        return {
            renamed.get(key, text): redact_json(item)
            for (key, text), item in zip(keys, value.values(), strict=True)
        }
    return value


_MISSING: Final = object()


def field_value(document: Any, path: str) -> tuple[bool, Any]:
    """``(present, value)`` of a dotted path (``"session.status"``) in parsed JSON."""
    current = document
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return False, None
        current = current[part]
    return True, current


def reply_length(content: Any) -> int | None:
    """Length in characters of ``reply.content`` after trimming white space, or ``None``
    when it is neither a string nor the recorded form ``{"omitted": "reply-text",
    "length": N}`` that evidence keeps instead of the text."""
    if isinstance(content, str):
        return len(content.strip())
    if (
        isinstance(content, Mapping)
        and content.get("omitted") == "reply-text"
        and isinstance(content.get("length"), int)
        and not isinstance(content.get("length"), bool)
        and content["length"] >= 0
    ):
        return int(content["length"])
    return None


_MAX_TRACE_ID_CHARS: Final = 256


def usable_trace_id(value: Any) -> bool:
    """True for a ``traceId`` the probe can poll: 1-256 printable, non-blank characters."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= _MAX_TRACE_ID_CHARS
        and value.isprintable()
        and value.strip() == value
        and bool(value)
    )


@dataclass(frozen=True)
class Reason:
    """One reason of a verdict: which rule fired on which observed field.

    Attributes:
        code: stable kebab-case code of the reason (``credential-missing`` …).
        field: the observed field, a dotted path: ``response.error.code``,
            ``origin``, ``endpoint``, ``transportError`` …
        observed: the field's value as :func:`quote` renders it (``None`` if absent);
            for ``response.reply.content`` only ``"<N characters>"``, never the text.
        present: whether the field was present at all.
        message: one sentence for a human.
    """

    code: str
    field: str
    observed: Any
    present: bool
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "field": self.field,
            "observed": self.observed,
            "present": self.present,
            "message": self.message,
        }


@dataclass(frozen=True)
class ReplySummary:
    """What the output may say about an answer: never the reply text, never a header.

    Attributes:
        http_status: the HTTP status of the classified answer, or ``None``.
        status: the answer's ``status`` (quoted), or ``None``.
        provider, model, backend: the answer's top-level fields (quoted), or ``None``.
        reply_non_empty: whether ``reply.content`` holds non-blank text.
        reply_length: its length in characters (after trimming), ``None`` when absent.
        error_class: ``error.code`` of a failed answer, else the transport error, else
            ``http-<status>`` for an unexpected status, else ``None`` (quoted).
    """

    http_status: int | None = None
    status: Any = None
    provider: Any = None
    model: Any = None
    backend: Any = None
    reply_non_empty: bool = False
    reply_length: int | None = None
    error_class: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "http_status": self.http_status,
            "status": self.status,
            "provider": self.provider,
            "model": self.model,
            "backend": self.backend,
            "reply_non_empty": self.reply_non_empty,
            "reply_length": self.reply_length,
            "error_class": self.error_class,
        }


@dataclass(frozen=True)
class ReadinessVerdict:
    """The verdict on one observation (or one set of deployment manifests).

    Attributes:
        environment: the environment it applies to (``dev`` …).
        endpoint: the chat endpoint it applies to, or ``None`` (a source check of
            manifests for an environment with no declared endpoint).
        level: ``SOURCE``, ``LOCAL``, ``DRY-RUN``, ``LIVE`` or ``BLOCKED``.
        blocker: ``credential``, ``runner``, ``transport``, ``schema`` or ``None``.
        capability: what the runner behind the reply can do, or ``None`` (unknown).
        passed: the reply path passed at ``level``.
        agent_runner_gate: the full agent-runner gate is satisfied: a pass by a
            ``full-agent-session`` runner. A read-only session registry, a text-only
            fallback or a hardware capability never satisfy it.
        rule: id of the decision-table row that decided (``DECISION_TABLE``).
        reasons: why, each quoting the observed field; the row's reasons first, then
            those of the ceilings that lowered the level.
        runner_blockers: the ``codexStdioFeasibility`` blockers the answer listed.
        summary: the :class:`ReplySummary` of the answer.
    """

    environment: str
    endpoint: str | None
    level: Level
    blocker: Blocker | None
    capability: Capability | None
    passed: bool
    agent_runner_gate: bool
    rule: str
    reasons: tuple[Reason, ...]
    runner_blockers: tuple[str, ...] = ()
    summary: ReplySummary = field(default_factory=ReplySummary)

    @property
    def label(self) -> str:
        """``LIVE``, ``BLOCKED/credential`` …: the level, with the blocker if any."""
        return f"{self.level}/{self.blocker}" if self.blocker else self.level

    def meets(self, required: Level) -> bool:
        """True when the verdict passed at ``required`` or a stronger level."""
        if not self.passed or self.level not in LEVEL_ORDER or required not in LEVEL_ORDER:
            return False
        return LEVEL_ORDER[self.level] >= LEVEL_ORDER[required]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": VERDICT_SCHEMA_VERSION,
            "environment": self.environment,
            "endpoint": self.endpoint,
            "level": self.level,
            "blocker": self.blocker,
            "label": self.label,
            "capability": self.capability,
            "passed": self.passed,
            "agent_runner_gate": self.agent_runner_gate,
            "rule": self.rule,
            "reasons": [reason.to_dict() for reason in self.reasons],
            "runner_blockers": list(self.runner_blockers),
            "summary": self.summary.to_dict(),
        }


_OBSERVATION_KEYS: Final = frozenset(
    {
        "schemaVersion",
        "endpoint",
        "environment",
        "origin",
        "httpStatus",
        "response",
        "rawBody",
        "transportError",
        "mode",
        "route",
        "peerLoopback",
        "probe",
        "providerTrace",
    }
)
_MAX_NAME_CHARS: Final = 128
_MAX_ENDPOINT_CHARS: Final = 2048


@dataclass(frozen=True)
class Observation:
    """One observation of an agent chat endpoint (the input of ``classify``).

    Attributes:
        endpoint: the chat endpoint's URL (``http(s)://…/v1/agent/chat`` or ``file://…``).
        environment: the environment's name (``dev`` …), 1-128 printable characters.
        origin: where the answer came from; only ``live`` (a real deployed route) can
            ever be reply evidence.
        http_status: the HTTP status of the answer in ``response`` (100-599), or ``None``.
        response: the parsed JSON body (any JSON value), or ``None`` when there was none
            or it was not JSON.
        raw_body: the body when it was not JSON (only its length is ever shown).
        transport_error: names a failure to get an answer (``connect``, ``timeout``,
            ``idle-timeout`` …), or ``None``.
        mode: ``live`` (a chat was sent; this is its reply) or ``dry-run`` (no chat was
            sent: a preflight or error answer only).
        route: for a dry run, which answer this is: ``readyz`` or ``error-answer``;
            ``chat`` otherwise.
        peer_loopback: the probe connected to a loopback address (whatever the URL's
            host name said), or ``None`` when unknown.
        probe: what the probe saw on the way (trace id, event count, polls, the
            recoverable answers by kind); informational, never classified.
        provider_trace: the provider-side trace window of the endpoint's ``/result``
            answers (``{"events", "limit", "firstSeq", "omitted"}``, the shape of
            :mod:`agc._core.window`), redacted and bounded by the probe; informational,
            never classified.
    """

    endpoint: str
    environment: str
    origin: Origin
    http_status: int | None
    response: Any
    raw_body: str | None = None
    transport_error: str | None = None
    mode: Mode = "live"
    route: Route = "chat"
    peer_loopback: bool | None = None
    probe: Mapping[str, Any] | None = None
    provider_trace: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The observation as documented JSON (optional members only when set)."""
        data: dict[str, Any] = {
            "schemaVersion": OBSERVATION_SCHEMA_VERSION,
            "endpoint": self.endpoint,
            "environment": self.environment,
            "origin": self.origin,
            "mode": self.mode,
            "route": self.route,
            "httpStatus": self.http_status,
            "response": self.response,
        }
        if self.raw_body is not None:
            data["rawBody"] = self.raw_body
        if self.transport_error is not None:
            data["transportError"] = self.transport_error
        if self.peer_loopback is not None:
            data["peerLoopback"] = self.peer_loopback
        if self.probe is not None:
            data["probe"] = dict(self.probe)
        if self.provider_trace is not None:
            data["providerTrace"] = dict(self.provider_trace)
        return data

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "observation") -> Observation:
        """Parse an observation strictly.

        Raises:
            ObservationInvalidError: not an object, a required member missing, a member
                of the wrong type or value, or an unknown member (a misspelt ``orgin``
                would otherwise silently change the verdict); the message names it.
        """
        if not isinstance(data, Mapping):
            raise ObservationInvalidError(f"{source} is not a JSON object")
        if exceeds_depth(data, MAX_OBSERVATION_DEPTH):
            raise ObservationInvalidError(
                f"{source} nests arrays/objects deeper than {MAX_OBSERVATION_DEPTH} levels"
            )
        unknown = sorted(set(data) - _OBSERVATION_KEYS)
        if unknown:
            raise ObservationInvalidError(
                f"{source} has unknown member(s) {', '.join(map(repr, unknown))}"
            )
        version = data.get("schemaVersion", OBSERVATION_SCHEMA_VERSION)
        if version != OBSERVATION_SCHEMA_VERSION or isinstance(version, bool):
            raise ObservationInvalidError(f"{source} has schemaVersion {quote(version)!r}, not 1")
        for name in ("endpoint", "environment", "origin", "httpStatus", "response"):
            if name not in data:
                raise ObservationInvalidError(f"{source} has no {name!r} member")
        endpoint = _string(data, "endpoint", source, max_chars=_MAX_ENDPOINT_CHARS)
        environment = _string(data, "environment", source, max_chars=_MAX_NAME_CHARS)
        if not environment.isprintable() or environment.strip() != environment:
            raise ObservationInvalidError(f"{source}: 'environment' must be a printable name")
        origin = _choice(data, "origin", ORIGINS, source)
        status = data["httpStatus"]
        if status is not None and (
            not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599
        ):
            raise ObservationInvalidError(
                f"{source}: 'httpStatus' must be an HTTP status (100-599) or null"
            )
        raw_body = data.get("rawBody")
        if raw_body is not None and not isinstance(raw_body, str):
            raise ObservationInvalidError(f"{source}: 'rawBody' must be a string or null")
        transport_error = data.get("transportError")
        if transport_error is not None and (
            not isinstance(transport_error, str) or not transport_error
        ):
            raise ObservationInvalidError(
                f"{source}: 'transportError' must be a non-empty string or null"
            )
        mode = _choice(data, "mode", MODES, source, default="live")
        route = _choice(
            data, "route", ROUTES, source, default="error-answer" if mode == "dry-run" else "chat"
        )
        if (mode == "live") != (route == "chat"):
            raise ObservationInvalidError(
                f"{source}: route {route!r} does not go with mode {mode!r} "
                "(a live observation is the chat's answer; a dry run is 'readyz' or "
                "'error-answer')"
            )
        peer = data.get("peerLoopback")
        if peer is not None and not isinstance(peer, bool):
            raise ObservationInvalidError(f"{source}: 'peerLoopback' must be true, false or null")
        probe = data.get("probe")
        if probe is not None and not isinstance(probe, Mapping):
            raise ObservationInvalidError(f"{source}: 'probe' must be an object")
        provider_trace = data.get("providerTrace")
        if provider_trace is not None and not (
            isinstance(provider_trace, Mapping) and isinstance(provider_trace.get("events"), list)
        ):
            raise ObservationInvalidError(
                f"{source}: 'providerTrace' must be an object with an 'events' array"
            )
        return cls(
            endpoint=endpoint,
            environment=environment,
            origin=origin,
            http_status=status,
            response=data["response"],
            raw_body=raw_body,
            transport_error=transport_error,
            mode=mode,
            route=route,
            peer_loopback=peer,
            probe=probe,
            provider_trace=provider_trace,
        )


def _string(data: Mapping[str, Any], name: str, source: str, *, max_chars: int) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise ObservationInvalidError(f"{source}: {name!r} must be a non-empty string")
    if len(value) > max_chars:
        raise ObservationInvalidError(f"{source}: {name!r} is longer than {max_chars} characters")
    if scrub(value) != value:
        raise ObservationInvalidError(f"{source}: {name!r} holds a lone surrogate (not UTF-8)")
    return value


def _choice(
    data: Mapping[str, Any],
    name: str,
    choices: tuple[str, ...],
    source: str,
    *,
    default: str | None = None,
) -> Any:
    value = data.get(name, default)
    if value not in choices:
        raise ObservationInvalidError(
            f"{source}: {name!r} is {quote(value)!r}, not one of {', '.join(choices)}"
        )
    return cast(str, value)
