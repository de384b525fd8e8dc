"""MCP configurations: the published forms, the fields Codex reads, secrets kept back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc.extensions import EnvBlocklist
from agc.extensions._mcp import (
    normalize_server,
    project_server,
    read_codex_config,
    read_mcp_json,
)
from tests.extensions.builders import CONFIG_TOML_TWO_SERVERS

REACHES_INSIDE = {
    "agc.extensions._mcp": "MCP server normalization and projection, one server at a time",
}

CODEX_FIELDS = {
    "command",
    "args",
    "env",
    "env_vars",
    "cwd",
    "url",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "enabled",
    "required",
}


def test_every_server_of_a_codex_config_is_read() -> None:
    servers, error = read_codex_config(CONFIG_TOML_TWO_SERVERS.encode())
    assert error is None
    assert [server.name for server in servers] == ["search", "filesystem", "docs"]


def test_a_broken_config_toml_is_reported_not_raised() -> None:
    servers, error = read_codex_config(b"[mcp_servers.x\ncommand = 1")
    assert servers == []
    assert error is not None
    assert "not valid TOML" in error


def test_the_wrapped_and_the_bare_map_forms_give_the_same_servers() -> None:
    server = {"command": "node", "args": ["s.js"]}
    wrapped, _ = read_mcp_json(json.dumps({"mcpServers": {"a": server}}).encode())
    bare, _ = read_mcp_json(json.dumps({"a": server}).encode())
    assert wrapped == bare
    assert [s.name for s in bare] == ["a"]


@pytest.mark.parametrize("not_a_server", ["a comment", 3, ["x"], None, True])
def test_entries_that_are_not_objects_are_not_servers(not_a_server: object) -> None:
    servers, error = read_mcp_json(
        json.dumps({"_comment": not_a_server, "real": {"command": "x"}}).encode()
    )
    assert error is None
    assert [server.name for server in servers] == ["real"]


def test_a_single_server_object_is_not_taken_for_a_map() -> None:
    servers, error = read_mcp_json(b'{"command": "node", "args": ["x"]}')
    assert servers == []
    assert error is not None


def test_only_the_fields_codex_reads_are_kept_for_stdio() -> None:
    spec = normalize_server(
        {
            "command": "node",
            "args": ["a"],
            "url": None,
            "http_headers": {"a": "b"},
            "description": "x",
            "required": True,
            "enabled": False,
            "tools": {"t": {"approval_mode": "prompt"}},
        },
        json_form=False,
    )
    assert spec.error is None
    assert spec.config == {"command": "node", "args": ["a"]}
    assert any("http_headers" in note for note in spec.notes)
    assert any("description" in note for note in spec.notes)
    assert any("tools" in note for note in spec.notes)


@pytest.mark.parametrize(
    ("server", "problem"),
    [
        ({}, "neither `command`"),
        ({"command": "a", "url": "http://x"}, "both"),
        ({"command": ""}, "`command` must be"),
        ({"command": "a", "args": "one string"}, "`args` must be"),
        ({"command": "a", "env": {"PORT": 8080}}, "`env` must be"),
        ({"command": "a", "startup_timeout_sec": -1}, "`startup_timeout_sec`"),
        ({"command": "a", "startup_timeout_sec": True}, "`startup_timeout_sec`"),
        ({"command": "a", "env_vars": [{"name": "A", "source": "cloud"}]}, "`env_vars`"),
        ({"url": "https://x", "http_headers": ["a"]}, "`http_headers`"),
    ],
)
def test_a_server_codex_could_not_load_is_an_error(server: dict[str, object], problem: str) -> None:
    spec = normalize_server(server, json_form=False)
    assert spec.error is not None
    assert problem in spec.error


def test_an_sse_server_is_an_error_because_codex_has_no_sse_transport() -> None:
    spec = normalize_server({"type": "sse", "url": "https://x/sse"}, json_form=True)
    assert spec.error is not None
    assert "SSE" in spec.error


def test_claude_code_variable_references_become_codex_fields() -> None:
    spec = normalize_server(
        {
            "type": "http",
            "url": "https://api.example.com/mcp",
            "headers": {
                "Authorization": "Bearer ${API_TOKEN}",
                "X-Tenant": "${TENANT}",
                "X-Static": "blue",
            },
        },
        json_form=True,
    )
    assert spec.error is None
    assert spec.config == {
        "url": "https://api.example.com/mcp",
        "bearer_token_env_var": "API_TOKEN",
        "http_headers": {"X-Static": "blue"},
        "env_http_headers": {"X-Tenant": "TENANT"},
    }
    stdio = normalize_server(
        {"command": "x", "env": {"KEY": "${KEY}", "MODE": "fast", "OTHER": "${ELSEWHERE}"}},
        json_form=True,
    )
    assert stdio.config["env_vars"] == ["KEY"]
    assert stdio.config["env"] == {"MODE": "fast", "OTHER": "${ELSEWHERE}"}
    assert any("does not expand" in note for note in stdio.notes)


def test_a_toml_server_keeps_dollar_text_literally() -> None:
    spec = normalize_server({"command": "x", "env": {"KEY": "${KEY}"}}, json_form=False)
    assert spec.config["env"] == {"KEY": "${KEY}"}
    assert "env_vars" not in spec.config


def test_projection_resolves_cwd_against_the_config_folder(tmp_path: Path) -> None:
    block = EnvBlocklist()
    relative = project_server(
        {"command": "./bin/srv", "cwd": "work"},
        config_dir=tmp_path,
        plugin_root=None,
        blocklist=block,
    )
    assert relative.table["cwd"] == str(tmp_path / "work")
    assert relative.table["command"] == str(tmp_path / "work" / "bin" / "srv")
    absent = project_server(
        {"command": "npx"}, config_dir=tmp_path, plugin_root=None, blocklist=block
    )
    assert absent.table["cwd"] == str(tmp_path)
    assert absent.table["command"] == "npx"
    absolute = project_server(
        {"command": "x", "cwd": "/opt/srv"}, config_dir=tmp_path, plugin_root=None, blocklist=block
    )
    assert absolute.table["cwd"] == "/opt/srv"


def test_projection_fills_in_the_plugin_root(tmp_path: Path) -> None:
    table = project_server(
        {"command": "node", "args": ["${CLAUDE_PLUGIN_ROOT}/server.js"]},
        config_dir=tmp_path,
        plugin_root=tmp_path / "plugin",
        blocklist=EnvBlocklist(),
    ).table
    assert table["args"] == [f"{tmp_path}/plugin/server.js"]


def test_projection_sets_enabled_and_not_required(tmp_path: Path) -> None:
    table = project_server(
        {"url": "https://x"}, config_dir=tmp_path, plugin_root=None, blocklist=EnvBlocklist()
    ).table
    assert table["enabled"] is True
    assert table["required"] is False
    assert set(table) <= CODEX_FIELDS


@pytest.mark.parametrize(
    "secret",
    [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "openai_api_key",
        "AGC_BRIDGE_TOKEN",
        "CODEX_HOME",
        "CODEX_",
    ],
)
def test_the_clients_own_secrets_are_never_forwarded(tmp_path: Path, secret: str) -> None:
    block = EnvBlocklist()
    stdio = project_server(
        {
            "command": "x",
            "env_vars": ["SAFE", secret, {"name": secret, "source": "remote"}],
            "env": {"K": "v"},
        },
        config_dir=tmp_path,
        plugin_root=None,
        blocklist=block,
    )
    assert stdio.table["env_vars"] == ["SAFE"]
    assert stdio.table["env"] == {"K": "v"}
    assert stdio.dropped == (secret,)
    http = project_server(
        {
            "url": "https://x",
            "bearer_token_env_var": secret,
            "env_http_headers": {"X-A": secret, "X-B": "SAFE"},
            "http_headers": {"X-Static": "kept"},
        },
        config_dir=tmp_path,
        plugin_root=None,
        blocklist=block,
    )
    assert "bearer_token_env_var" not in http.table
    assert http.table["env_http_headers"] == {"X-B": "SAFE"}
    assert http.table["http_headers"] == {"X-Static": "kept"}
    assert http.dropped == (secret,)


def test_a_configured_name_or_prefix_is_blocked_too() -> None:
    block = EnvBlocklist.with_extra(["MY_TOKEN", "INTERNAL_*"])
    assert block.blocks("MY_TOKEN")
    assert block.blocks("internal_db_password")
    assert block.blocks("OPENAI_API_KEY")
    assert not block.blocks("MY_TOKEN_2")
    assert not block.blocks("GITHUB_TOKEN")


@given(st.from_regex(r"[A-Z][A-Z0-9_]{0,20}", fullmatch=True))
def test_a_name_is_forwarded_exactly_when_it_is_not_blocked(name: str) -> None:
    block = EnvBlocklist()
    table = project_server(
        {"command": "x", "env_vars": [name]},
        config_dir=Path("/srv"),
        plugin_root=None,
        blocklist=block,
    ).table
    assert ("env_vars" in table) is not block.blocks(name)
