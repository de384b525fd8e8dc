"""The readiness configuration: TOML or JSON, every member checked, nothing in code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agc.errors import InputError, ReadinessConfigError
from agc.readiness import ReadinessConfig, load_config, parse_config

TOML = """\
verifier_id = "https://ci.example.test/readiness"

[policy]
provider_key_env = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
full_agent_providers = ["codex-stdio", "claude-code"]

[probe]
idle_timeout_s = 300
message = "ping"
auth_env = "CHAT_TOKEN"

[environments.dev]
url = "https://dev.example.test:16666/"
endpoint = "https://dev.example.test:16666/v1/agent/chat"

[environments.dev.contract]
env = [{ name = "OPENAI_API_KEY", secret = "keys", key = "openai" }]
base_url = { env = "BASE_URL", proxy_required = true, public_hosts = ["api.example.test"] }
"""


def test_a_full_toml_configuration(tmp_path: Path) -> None:
    path = tmp_path / "readiness.toml"
    path.write_text(TOML)
    config = load_config(path)
    assert config.verifier_id == "https://ci.example.test/readiness"
    assert config.policy.provider_key_env == ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    assert config.policy.declared_endpoints == {
        "dev": "https://dev.example.test:16666/v1/agent/chat"
    }
    assert config.probe.idle_timeout_s == 300.0
    assert config.probe.request_timeout_s == 10.0
    dev = config.environment("dev")
    assert dev.url == "https://dev.example.test:16666/"
    assert dev.contract.base_url is not None
    assert dev.contract.base_url.public_hosts == ("api.example.test",)
    assert config.environment("other").contract.empty


def test_json_is_read_as_json(tmp_path: Path) -> None:
    path = tmp_path / "readiness.json"
    path.write_text(json.dumps({"probe": {"submit_attempts": 5}}))
    assert load_config(path).probe.submit_attempts == 5
    assert load_config(None) == ReadinessConfig()


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"polcy": {}}, "'polcy'"),
        ({"policy": {"provider_key_env": "OPENAI_API_KEY"}}, "list of non-empty strings"),
        ({"probe": {"idle_timeout_s": 0}}, "positive number"),
        ({"probe": {"idle_timeout_s": True}}, "positive number"),
        ({"probe": {"submit_attempts": 0}}, "positive integer"),
        ({"probe": {"chat_path": "v1/chat"}}, "start with '/'"),
        ({"probe": {"backoff_initial_s": 5, "backoff_max_s": 1}}, "below"),
        ({"environments": {"dev": {"endpoint": 1}}}, "non-empty string"),
        ({"environments": {"dev": {"contract": {"env": [{"name": "A", "secret": "s"}]}}}}, "both"),
        (
            {
                "environments": {
                    "dev": {
                        "contract": {
                            "env": [{"name": "A", "value": "v", "secret": "s", "key": "k"}]
                        }
                    }
                }
            },
            "exclude",
        ),
        (
            {
                "environments": {
                    "dev": {"contract": {"base_url": {"env": "B", "proxy_required": "yes"}}}
                }
            },
            "true or false",
        ),
        ([], "table"),
    ],
)
def test_bad_configuration_is_named(raw: Any, problem: str) -> None:
    with pytest.raises(ReadinessConfigError, match=problem):
        parse_config(raw)


def test_unreadable_or_unparsable_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_config(tmp_path / "absent.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[policy\n")
    with pytest.raises(ReadinessConfigError, match="cannot be parsed"):
        load_config(bad)


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("deep.json", '{"policy": {"x": ' + "[" * 5000 + "]" * 5000 + "}}", "deeper than 512"),
        ("deep.toml", "a = " + "[" * 5000 + "]" * 5000, "nested too deep"),
        ("deeper.toml", "a = " + "[" * 100 + "]" * 100, "deeper than 32"),
        ("twice.json", '{"verifier_id": "a", "verifier_id": "b"}', "duplicate"),
    ],
)
def test_a_hostile_configuration_is_a_config_error_not_a_crash(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ReadinessConfigError, match=problem):
        load_config(path)
