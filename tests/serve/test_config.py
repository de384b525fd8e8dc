"""The service settings: checked when made; the agent's environment leaves agc's own
secrets out."""

from __future__ import annotations

import resource
from pathlib import Path
from typing import Any

import pytest

from agc.errors import UsageError
from agc.serve import HttpLimits, ServeConfig, connection_budget


def _config(**overrides: Any) -> ServeConfig:
    settings: dict[str, Any] = {"workspace": Path("/w"), "codex_home": Path("/h")}
    settings.update(overrides)
    return ServeConfig(**settings)


@pytest.mark.parametrize(
    "overrides",
    [
        {"idle_timeout_ms": 0},
        {"max_sessions": -1},
        {"result_trace_limit": True},
        {"protocol": "websocket"},
        {"approval_policy": "always"},
        {"sandbox": "none"},
        {"provider_key_env": ("BAD NAME",)},
        {"token_env": "1TOKEN"},
        {"workspace": Path("relative")},
        {"codex_bin": ""},
    ],
)
def test_bad_settings_are_refused_with_a_usage_error(overrides: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        _config(**overrides)


def test_the_agent_environment_drops_agc_secrets_and_sets_codex_home() -> None:
    env = {
        "PATH": "/bin",
        "OPENAI_API_KEY": "kept-for-codex",
        "AGC_SIGNING_KEY": "/keys/signing-key.pem",
        "AGC_SERVE_TOKEN": "t",
        "MY_TOKEN": "t2",
        "CODEX_HOME": "/elsewhere",
    }
    agent = _config(env=env, token_env="MY_TOKEN").agent_env()
    assert agent == {"PATH": "/bin", "OPENAI_API_KEY": "kept-for-codex", "CODEX_HOME": "/h"}


@pytest.mark.parametrize(
    ("soft", "sessions", "expected"),
    [
        (1024, 32, 256),  # 1024 - 64 - 512 - 128 = 320 spare: the asked-for cap fits
        (1024, 40, 192),  # 1024 - 64 - 640 - 128
        (256, 2, 32),  # 256 - 64 - 32 - 128
        (resource.RLIM_INFINITY, 32, 256),
    ],
)
def test_the_connection_cap_leaves_the_descriptors_sessions_and_seals_need(
    monkeypatch: pytest.MonkeyPatch, soft: int, sessions: int, expected: int
) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _: (soft, resource.RLIM_INFINITY))
    limits = connection_budget(HttpLimits(max_connections=256), max_sessions=sessions)
    assert limits.max_connections == expected
    assert limits.backlog == 64


def test_a_descriptor_limit_too_low_for_the_sessions_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _: (256, 4096))
    with pytest.raises(UsageError, match="ulimit -n") as refused:
        connection_budget(HttpLimits(), max_sessions=4)
    assert "--max-sessions" in (refused.value.hint or "")


@pytest.mark.parametrize(
    "bad",
    [
        {"header_timeout_s": 0},
        {"body_timeout_s": -1.0},
        {"header_timeout_s": True},
        {"max_connections": 0},
        {"backlog": 0},
        {"keep_alive_s": 1.5},
    ],
)
def test_http_limits_are_checked_when_made(bad: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        HttpLimits(**bad)
