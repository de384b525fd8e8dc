"""MCP configurations: the published forms, the fields Codex reads, secrets kept back."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agc._core.redact import credential_variable
from agc.errors import ExtensionValueError
from agc.extensions import EnvBlocklist, Forward, credential_warnings, forwards, is_remote
from agc.extensions._mcp import (
    normalize_server,
    project_server,
    read_codex_config,
    read_mcp_json,
    stays_inside,
)
from tests.conftest import examples
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


@pytest.mark.parametrize(
    ("config_dir", "server", "escapes"),
    [
        (".", {"command": "node", "cwd": "../etc"}, True),
        ("plugins/p", {"command": "node", "cwd": "../../../etc"}, True),
        ("plugins/p", {"command": "node", "cwd": "../shared"}, False),
        (".", {"command": "../../bin/tool"}, True),
        ("a", {"command": "./bin/../../tool"}, False),
        ("a", {"command": "./bin/../../../tool"}, True),
        (".", {"command": "node", "cwd": "sub", "args": ["../../x.js"]}, False),  # args: as written
        (".", {"command": "node", "cwd": "/srv/app"}, False),  # absolute: the user's choice
        ("p", {"command": "node", "cwd": "${CLAUDE_PLUGIN_ROOT}/../.."}, True),
        ("p", {"command": "node", "cwd": "${CLAUDE_PLUGIN_ROOT}/server"}, False),
        (".", {"url": "https://x/../../"}, False),
    ],
)
def test_a_relative_cwd_or_command_leaving_the_source_is_refused(
    config_dir: str, server: dict[str, str], escapes: bool
) -> None:
    plugin = PurePosixPath(config_dir)
    why = stays_inside(server, PurePosixPath(config_dir), plugin)
    assert (why is not None) is escapes
    if why is not None:
        assert "leads outside the imported source" in why


@settings(max_examples=examples(40), deadline=None)
@given(
    field=st.sampled_from(["startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec"]),
    value=st.one_of(
        st.integers(2**53 + 1, 10**300),
        st.integers(-(10**300), -1),
        st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not (0 <= v <= 2**53)),
        st.integers(0, 2**53),
    ),
    form=st.sampled_from(["json", "toml"]),
)
def test_a_timeout_outside_0_to_2_53_is_an_item_error_or_refused_never_a_crash(
    field: str, value: float, form: str
) -> None:
    """Beyond 2^53 (or not finite): the file is refused, naming the server and the field
    (exit 2); a negative timeout, or a fraction of a millisecond, is an item error."""
    if form == "json":
        text = f'{{"mcpServers": {{"s": {{"command": "x", "{field}": {json.dumps(value)}}}}}}}'
        servers, error = read_mcp_json(text.encode())
    else:
        literal = {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(str(value), repr(value))
        servers, error = read_codex_config(
            f"[mcp_servers.s]\ncommand = 'x'\n{field} = {literal}\n".encode()
        )
    if error is not None:  # a TOML float spelling tomllib refuses
        return
    if value != value or abs(value) > 2**53:
        with pytest.raises(ExtensionValueError, match=f"x.json: server 's': `{field}` is ") as no:
            normalize_server(servers[0].value, json_form=form == "json", where="x.json: server 's'")
        assert no.value.exit_code == 2
        assert "beyond 2^53" in no.value.message
        assert len(no.value.message) < 300  # never the number's thousands of digits
        return
    spec = normalize_server(servers[0].value, json_form=form == "json")
    fine = (
        (isinstance(value, int) or field != "startup_timeout_ms")
        and value == value
        and 0 <= value <= 2**53
    )
    if field == "startup_timeout_ms" and isinstance(value, float):
        fine = False
    assert (spec.error is None) is fine, (spec.error, value)
    if spec.error is not None:
        assert f"`{field}` must be" in spec.error


@pytest.mark.parametrize("digits", [4301, 20_000])
def test_an_integer_too_long_to_read_is_an_unreadable_configuration(digits: int) -> None:
    big = "9" * digits
    servers, error = read_mcp_json(
        f'{{"s": {{"command": "x", "tool_timeout_sec": {big}}}}}'.encode()
    )
    assert servers == []
    assert error is not None
    assert "not valid JSON" in error
    servers, error = read_codex_config(
        f"[mcp_servers.s]\ncommand='x'\ntool_timeout_sec={big}\n".encode()
    )
    assert servers == []
    assert error is not None


# Names the client's environment commonly holds, with what the one secret detector says.
CREDENTIALS = [
    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "GITHUB_TOKEN",
    "GH_TOKEN", "HF_TOKEN", "NPM_TOKEN", "SSH_AUTH_SOCK", "DATABASE_URL", "SLACK_BOT_TOKEN",
    "GITHUB_PERSONAL_ACCESS_TOKEN", "DB_PASSWORD", "STRIPE_SECRET_KEY", "SENTRY_DSN",
    "KUBECONFIG", "GOOGLE_APPLICATION_CREDENTIALS", "REDIS_URL", "PG_PASSWORD",
]  # fmt: skip
NOT_CREDENTIALS = ["HOME_DIR", "LOG_LEVEL", "MAX_TOKENS", "NODE_ENV", "PORT", "SEARCH_REGION"]


@pytest.mark.parametrize("name", CREDENTIALS)
def test_credential_variables_are_classified_by_the_secret_detector(name: str) -> None:
    (forward,) = forwards({"command": "x", "env_vars": [name]}, EnvBlocklist())
    assert forward.credential is not None
    assert forward.blocked is False  # not the client's own: it is given, and said so
    assert forward == Forward(name, "env_vars", None, credential_variable(name), False)


@pytest.mark.parametrize("name", NOT_CREDENTIALS)
def test_ordinary_variables_are_not_credentials(name: str) -> None:
    (forward,) = forwards({"command": "x", "env_vars": [name]}, EnvBlocklist())
    assert forward.credential is None


@pytest.mark.parametrize(
    ("url", "remote"),
    [
        ("https://api.example.com/mcp", True),
        ("http://127.0.0.1:8080/mcp", False),
        ("http://127.8.9.1/mcp", False),
        ("http://localhost:3000", False),
        ("http://[::1]:3000/mcp", False),
        ("http://10.0.0.5/mcp", True),
        ("http://user:pw@evil.example/", True),
        ("not a url", True),
    ],
)
def test_a_server_is_remote_unless_its_host_is_loopback(url: str, remote: bool) -> None:
    assert is_remote({"url": url}) is remote
    assert is_remote({"command": "x"}) is False


@settings(max_examples=examples(100))
@given(
    names=st.lists(
        st.one_of(
            st.sampled_from(CREDENTIALS + NOT_CREDENTIALS + ["OPENAI_API_KEY", "CODEX_HOME"]),
            st.from_regex(r"[A-Z][A-Z0-9_]{0,24}", fullmatch=True),
        ),
        min_size=1,
        max_size=6,
        unique=True,
    ),
    url=st.sampled_from(
        ["https://mcp.example.com/x", "https://me:pw@mcp.example.com/x", "http://127.0.0.1:9/x"]
    ),
)
def test_only_named_variables_are_forwarded_and_every_credential_to_a_remote_server_warned(
    names: list[str], url: str
) -> None:
    block = EnvBlocklist()
    headers = {f"X-H{n}": name for n, name in enumerate(names[1:])}
    config = {"url": url, "bearer_token_env_var": names[0], "env_http_headers": headers}
    projected = project_server(config, config_dir=Path("/srv"), plugin_root=None, blocklist=block)
    given_names = {projected.table.get("bearer_token_env_var")}
    given_names |= set(projected.table.get("env_http_headers", {}).values())
    given_names.discard(None)
    # Exactly the named, unblocked variables reach the table; nothing else is added.
    assert given_names == {name for name in names if not block.blocks(name)}
    assert set(projected.dropped) == {name for name in names if block.blocks(name)}
    warnings = credential_warnings("srv", config, block)
    warned = {name for name in given_names if any(f" {name} (" in w for w in warnings)}
    expected = {name for name in given_names if credential_variable(str(name)) is not None}
    assert warned == (expected if "127.0.0.1" not in url else set())
    assert all("pw" not in warning for warning in warnings)
