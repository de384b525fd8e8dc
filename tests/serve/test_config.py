"""The service settings: checked when made; the agent's environment leaves agc's own
secrets out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agc.errors import UsageError
from agc.serve import ServeConfig


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
