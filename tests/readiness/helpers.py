"""Builders of observations and answers for the readiness tests (small, deterministic)."""

from __future__ import annotations

import copy
from typing import Any

from agc.readiness import Observation, ReadinessPolicy

LIVE_URL = "https://chat.dev.example.test/v1/agent/chat"
DECLARED = ReadinessPolicy(declared_endpoints={"dev": LIVE_URL})
"""A policy that declares :data:`LIVE_URL` the live endpoint of ``dev``: only then can an
answer from it be ``LIVE``."""


def declaring(obs: Observation) -> ReadinessPolicy:
    """A policy that declares the observation's own endpoint its environment's live one."""
    return ReadinessPolicy(declared_endpoints={obs.environment: obs.endpoint})


def completed(
    provider: str = "codex-stdio", content: str = "ready", **extra: Any
) -> dict[str, Any]:
    """A completed answer of the chat protocol."""
    return {
        "status": "completed",
        "provider": provider,
        "model": "gpt-test",
        "backend": "app-server",
        "reply": {"role": "assistant", "content": content},
        **extra,
    }


def read_only_answer() -> dict[str, Any]:
    """A read-only session registry answer with every field the protocol requires."""
    return completed(
        provider="codex-readonly-runner",
        sessionMode="controlled-readonly-session-registry",
        capabilityLevel="read-only-session-tools",
        session={
            "status": "ready",
            "idleTimeoutMs": 600_000,
            "lastTraceId": "trace-41",
            "longLivedSession": True,
        },
        longLivedSessionGate={"status": "blocked"},
        runnerLimitations=[
            "not-codex-stdio",
            "not-write-capable",
            "process-local-session-registry",
        ],
    )


def hardware_answer() -> dict[str, Any]:
    """A completed answer of the registered hardware capability route."""
    return completed(
        provider="hwlab-hardware-capability",
        toolCalls=[{"name": "hardware.invoke.shell"}],
        operationId="op-7",
        dispatchStatus="completed",
        exitCode=0,
        runnerTrace={"eventLabels": ["dispatch", "result"]},
        capabilityLevel="hardware-shell",
    )


def credential_answer(*missing: str) -> dict[str, Any]:
    return {
        "status": "failed",
        "provider": "codex-stdio",
        "error": {
            "code": "provider_unavailable",
            "missingEnv": list(missing or ("OPENAI_API_KEY",)),
        },
    }


def observation(
    response: Any,
    *,
    http: int | None = 200,
    origin: str = "live",
    endpoint: str = LIVE_URL,
    environment: str = "dev",
    **extra: Any,
) -> Observation:
    data: dict[str, Any] = {
        "endpoint": endpoint,
        "environment": environment,
        "origin": origin,
        "httpStatus": http,
        "response": copy.deepcopy(response),
        **extra,
    }
    return Observation.from_dict(data)


def without(document: dict[str, Any], path: str) -> dict[str, Any]:
    """A deep copy of ``document`` without the dotted ``path``."""
    result = copy.deepcopy(document)
    parts = path.split(".")
    target = result
    for part in parts[:-1]:
        target = target[part]
    del target[parts[-1]]
    return result


def with_value(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``document`` with the dotted ``path`` set to ``value``."""
    result = copy.deepcopy(document)
    parts = path.split(".")
    target = result
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = value
    return result
