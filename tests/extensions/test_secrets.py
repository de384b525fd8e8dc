"""Literal MCP secrets at rest: an owner-only store, named warnings, ``--env-ref``.

An MCP server's ``env``/``headers`` may hold a literal secret. The whole extension
store (every folder and file any command writes, staging included) is owner-only
whatever the umask; a store an earlier agc left ``0755``/``0644`` is tightened or
reported; import names each literal (server and name, never the value); ``--env-ref``
keeps references to the launching environment, so the value is nowhere but in the
byte-for-byte source copy; and no command prints a value.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.cli.app import main
from agc.exitcodes import ExitCode
from agc.extensions import (
    STARTUP_STATUS_METHOD,
    ExtensionRepository,
    LiteralValue,
    literal_values,
    reference_literals,
)
from agc.extensions._discover import discover
from agc.extensions._mcp import referenced_variables
from tests.conftest import examples, feed_stdin
from tests.extensions.builders import write_script, write_skill, zip_folder

REACHES_INSIDE = {
    "agc.extensions._discover": "discovery of items in a staged tree, without an import",
    "agc.extensions._mcp": "the environment variables an MCP config references",
}

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Run:
    """``cli(*argv)``: run ``agc`` in process; ``(exit code, stdout, stderr)``."""

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(params=[0o000, 0o022], ids=["umask-000", "umask-022"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """A permissive process umask for the test (restored after)."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _toml_config(folder: Path, secret: str) -> Path:
    """A Codex ``config.toml``: stdio ``search`` with a literal key and a reference,
    HTTP ``web`` with a literal bearer token and a literal API-key header."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.toml"
    path.write_text(
        f"""[mcp_servers.search]
command = "npx"
args = ["-y", "@example/search-mcp"]
env = {{ SEARCH_API_KEY = "{secret}", EMPTY = "" }}
env_vars = ["HOME_DIR"]

[mcp_servers.web]
url = "https://web.example.com/mcp"
http_headers = {{ Authorization = "Bearer {secret}", "X-Api-Key" = "{secret}" }}
""",
        encoding="utf-8",
    )
    return path


def _claude_plugin(root: Path, secret: str) -> Path:
    """A Claude Code plugin: a skill, an executable script and ``.mcp.json`` servers
    with literal values beside ``${VAR}`` references."""
    plugin = root / "vendor-plugin"
    write_skill(plugin / "skills" / "notes", "notes")
    write_script(plugin / "bin" / "server.sh", root)
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "vendor-plugin"}')
    (plugin / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "tracker": {
                        "command": "${CLAUDE_PLUGIN_ROOT}/bin/server.sh",
                        "env": {
                            "TRACKER_TOKEN": secret,
                            "HOME_DIR": "${HOME_DIR}",
                            "DATA": "${CLAUDE_PLUGIN_ROOT}/data",
                        },
                    },
                    "issues": {
                        "type": "http",
                        "url": "https://issues.example.com/mcp",
                        "headers": {"Authorization": "Bearer ${ISSUES_TOKEN}", "X-Key": secret},
                    },
                }
            }
        )
    )
    return plugin


def _open_entries(root: Path) -> list[str]:
    """Every folder or file under ``root`` (itself included) that is not owner-only,
    or a folder that is not exactly ``0700``: ``"<path> <mode>"``."""
    found = []
    for path in [root, *root.rglob("*")]:
        info = path.lstat()
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077 or (stat.S_ISDIR(info.st_mode) and mode != 0o700):
            found.append(f"{path.relative_to(root.parent)} {mode:04o}")
    return found


def _files_holding(root: Path, needle: bytes, *, skip: Callable[[Path], bool]) -> list[str]:
    return [
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and not skip(path) and needle in path.read_bytes()
    ]


def _is_source_copy(repo: ExtensionRepository) -> Callable[[Path], bool]:
    """Whether a path is a stored source's copy (``tree/`` or ``archive.zip``)."""

    def check(path: Path) -> bool:
        if not path.is_relative_to(repo.sources_dir):
            return False
        return path.relative_to(repo.sources_dir).parts[1] in {"tree", "archive.zip"}

    return check


def _events(name: str, status: str) -> bytes:
    message = {"method": STARTUP_STATUS_METHOD, "params": {"name": name, "status": status}}
    return json.dumps(message).encode() + b"\n"


# -- modes -----------------------------------------------------------------------------------


def test_every_folder_and_file_the_store_writes_is_owner_only(
    tmp_path: Path,
    store: Path,
    cli: Run,
    umask: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-" + "Q7" * 24
    extensions = store / "extensions"
    # The staging folder, seen while an import is in progress (discovery runs on it).
    staged: list[list[str]] = []

    def watching(tree: Path, **kwargs: Any) -> Any:
        staged.append(_open_entries(tree.parent.parent))  # <store>/extensions/staging
        return discover(tree, **kwargs)

    monkeypatch.setattr("agc.extensions._repo.discover", watching)
    plugin = _claude_plugin(tmp_path / "in", secret)
    home = tmp_path / "codex-home"
    steps: list[tuple[str, ...]] = [
        ("import", str(_toml_config(tmp_path / "in" / "cfg", secret))),
        ("import", str(plugin)),
        ("import", str(zip_folder(plugin, tmp_path / "in" / "bundle.zip"))),
        ("rename", "search", "finder"),
        ("disable", "web"),
        ("enable", "web"),
        ("project", "--codex-home", str(home)),
        ("status", "--from-events", "-"),
        ("rm", "tracker-2"),
        ("rm", "notes-2", "issues-2"),  # the zip source goes with its last item
    ]
    for step in steps:
        if step[0] == "status":
            feed_stdin(monkeypatch, _events("finder", "ready"))
        code, _, err = cli("ext", *step, "--store", str(store))
        assert code == 0, (step, err)
        assert _open_entries(extensions) == [], step
    assert len(staged) == 3
    assert staged == [[], [], []]
    assert (extensions / ".lock").is_file()
    assert list((extensions / "projections").glob("*.jsonl.b3"))
    # The projection output that holds values is owner-only too.
    assert stat.S_IMODE((home / "config.toml").stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    # The executable bit is kept for the owner only; stored files are read-only.
    stored = next(extensions.glob("sources/*/tree/bin/server.sh"))
    assert stat.S_IMODE(stored.stat().st_mode) == 0o500


def _loosen(root: Path) -> None:
    """Give a store the modes an earlier agc wrote: folders 0755, files 0644 (stored
    sources 0444)."""
    for path in [root, *root.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)
        elif "sources" in path.relative_to(root).parts:
            path.chmod(0o444)
        else:
            path.chmod(0o644)


def test_a_store_an_earlier_agc_left_readable_is_made_private_when_next_opened(
    tmp_path: Path, store: Path, cli: Run
) -> None:
    source = _toml_config(tmp_path / "in", "sk-" + "z" * 40)
    assert cli("ext", "import", str(source), "--store", str(store))[0] == 0
    extensions = store / "extensions"
    _loosen(extensions)
    assert _open_entries(extensions)

    code, out, err = cli("ext", "list", "--store", str(store))  # a read is enough
    assert code == 0
    assert _open_entries(extensions) == []
    assert f"{extensions}:" in err
    assert "now private to you" in err
    assert "search" in out
    # Stored sources stay read-only: only group and world bits were taken away.
    stored = next(extensions.glob("sources/*/tree/config.toml"))
    assert stat.S_IMODE(stored.stat().st_mode) == 0o400

    # Already private: nothing more is said.
    assert "now private" not in cli("ext", "list", "--store", str(store))[2]


def test_a_store_whose_extension_folder_is_a_link_to_a_readable_one_is_made_private(
    tmp_path: Path, store: Path, cli: Run
) -> None:
    """The extension folder kept elsewhere (a link in its place, as a user moving it to
    another disk makes) and left 0755/0644 by an earlier agc: tightened through the
    link; the link itself is left as it is."""
    source = _toml_config(tmp_path / "in", "sk-" + "z" * 40)
    assert cli("ext", "import", str(source), "--store", str(store))[0] == 0
    moved = tmp_path / "elsewhere" / "extensions"
    moved.parent.mkdir()
    (store / "extensions").rename(moved)
    (store / "extensions").symlink_to(moved)
    _loosen(moved)
    assert _open_entries(moved)

    code, out, err = cli("ext", "list", "--store", str(store))
    assert code == 0
    assert "search" in out
    assert "now private to you" in err
    assert _open_entries(moved) == []
    assert (store / "extensions").is_symlink()
    assert cli("ext", "import", str(source), "--store", str(store))[0] == 0
    assert _open_entries(moved) == []


def test_a_file_that_cannot_be_made_private_is_reported_by_path_and_mode(
    tmp_path: Path, store: Path, cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _toml_config(tmp_path / "in", "sk-" + "y" * 40)
    assert cli("ext", "import", str(source), "--store", str(store))[0] == 0
    extensions = store / "extensions"
    _loosen(extensions)
    index = extensions / "index.json"
    real_chmod = os.chmod

    def chmod(path: Any, mode: int, **kwargs: Any) -> None:
        if Path(path) == index:
            raise PermissionError(1, "Operation not permitted")
        real_chmod(path, mode, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(os, "chmod", chmod)
        report = ExtensionRepository(store).make_private()
    assert [(finding.path, finding.mode) for finding in report.open] == [(index, 0o644)]
    assert not report.private
    assert report.tightened > 0

    _loosen(extensions)
    with monkeypatch.context() as patched:
        patched.setattr(os, "chmod", chmod)
        code, _, err = cli("ext", "list", "--store", str(store))
    assert code == 0
    assert f"warning: {index} is readable by others (mode 0644)" in err
    assert "may hold MCP server secrets" in err
    # Everything else was tightened, the store folder included: nobody else reaches it.
    assert _open_entries(extensions) == ["extensions/index.json 0644"]


# -- warnings and --env-ref ------------------------------------------------------------------


def test_import_names_each_literal_value_by_server_and_name_never_the_value(
    tmp_path: Path, store: Path, cli: Run
) -> None:
    secret = "ghp_" + "R2d2C3po" * 5
    source = _toml_config(tmp_path / "in", secret)
    code, out, err = cli("ext", "import", str(source), "--store", str(store))
    assert code == 0
    warnings = [line for line in err.splitlines() if line.startswith("warning: MCP server")]
    listed = json.loads(cli("ext", "list", "--json", "--store", str(store))[1])
    ids = {item["name"]: item["id"] for item in listed["items"]}
    assert warnings == [
        f"warning: MCP server {server}: {what} has a literal value (possibly a secret), kept "
        "only in owner-only files of the store; --env-ref keeps a reference to the launching "
        "environment instead (an import with it adds new items: this one stays, its value "
        f"kept, until removed: agc ext rm {ids[server]})"
        for server, what in [
            ("search", "env SEARCH_API_KEY"),
            ("web", "header Authorization"),
            ("web", "header X-Api-Key"),
        ]
    ]
    assert secret not in out + err

    again = tmp_path / "again"
    dto = json.loads(cli("ext", "import", str(source), "--store", str(again), "--json")[1])
    assert [(e["server"], e["field"], e["key"], e["reference"]) for e in dto["literalValues"]] == [
        ("search", "env", "SEARCH_API_KEY", None),
        ("web", "http_headers", "Authorization", None),
        ("web", "http_headers", "X-Api-Key", None),
    ]
    listed = json.loads(cli("ext", "list", "--json", "--store", str(again))[1])
    assert {item["name"]: item["literalValues"] for item in listed["items"]} == {
        "search": [{"field": "env", "key": "SEARCH_API_KEY"}],
        "web": [
            {"field": "http_headers", "key": "Authorization"},
            {"field": "http_headers", "key": "X-Api-Key"},
        ],
    }


def test_env_ref_keeps_references_in_the_index_and_the_projection_and_the_source_as_is(
    tmp_path: Path, store: Path, cli: Run
) -> None:
    secret = "sk-proj-" + "Zx9" * 16
    source = _toml_config(tmp_path / "in", secret)
    plugin = _claude_plugin(tmp_path / "in", secret)
    outputs = []
    for path in (source, plugin):
        code, out, err = cli("ext", "import", str(path), "--env-ref", "--store", str(store))
        assert code == 0, err
        outputs.append(out + err)
    assert (
        "note: MCP server search: env SEARCH_API_KEY is a reference: set SEARCH_API_KEY"
        in (outputs[0])
    )
    assert "header X-Api-Key is a reference: set WEB_X_API_KEY" in outputs[0]
    assert "header Authorization is a reference: set WEB_BEARER_TOKEN" in outputs[0]
    assert "has a literal value" not in "".join(outputs)
    # What the references carry is still said: a credential goes to a remote server.
    assert (
        "warning: MCP server web: the credential WEB_BEARER_TOKEN (secret-assignment) of the "
        "launching environment is sent to the remote server web.example.com in the "
        "Authorization header" in outputs[0]
    )

    repo = ExtensionRepository(store)
    configs = {item.name: item.mcp.config for item in repo.items() if item.mcp is not None}
    assert configs["search"] == {
        "command": "npx",
        "args": ["-y", "@example/search-mcp"],
        "env": {"EMPTY": ""},
        "env_vars": ["HOME_DIR", "SEARCH_API_KEY"],
    }
    assert configs["web"] == {
        "url": "https://web.example.com/mcp",
        "bearer_token_env_var": "WEB_BEARER_TOKEN",
        "env_http_headers": {"X-Api-Key": "WEB_X_API_KEY"},
    }
    assert configs["tracker"]["env"] == {"DATA": "${CLAUDE_PLUGIN_ROOT}/data"}
    assert configs["tracker"]["env_vars"] == ["HOME_DIR", "TRACKER_TOKEN"]
    assert configs["issues"]["bearer_token_env_var"] == "ISSUES_TOKEN"
    assert configs["issues"]["env_http_headers"] == {"X-Key": "ISSUES_X_KEY"}
    assert all(not literal_values(config) for config in configs.values())

    home = tmp_path / "home"
    code, out, err = cli("ext", "project", "--codex-home", str(home), "--store", str(store))
    assert code == 0, err
    outputs.append(out + err)
    tables = tomllib.loads((home / "config.toml").read_text())["mcp_servers"]
    assert tables["search"]["env_vars"] == ["HOME_DIR", "SEARCH_API_KEY"]
    assert "env" not in tables["search"] or "SEARCH_API_KEY" not in tables["search"]["env"]
    assert tables["web"]["bearer_token_env_var"] == "WEB_BEARER_TOKEN"
    assert tables["web"]["env_http_headers"] == {"X-Api-Key": "WEB_X_API_KEY"}
    assert "http_headers" not in tables["web"]

    needle = secret.encode()
    assert _files_holding(store, needle, skip=_is_source_copy(repo)) == []
    assert needle not in (home / "config.toml").read_bytes()
    assert all(secret not in output for output in outputs)
    # The source copies are the files as published, byte for byte, and private.
    by_name = {source.original_name: source for source in repo.load().sources}
    stored = repo.tree_dir(by_name["config.toml"]) / "config.toml"
    assert stored.read_bytes() == source.read_bytes()
    assert stat.S_IMODE(stored.stat().st_mode) == 0o400
    stored_mcp = repo.tree_dir(by_name["vendor-plugin"]) / ".mcp.json"
    assert stored_mcp.read_bytes() == (plugin / ".mcp.json").read_bytes()


# -- no command ever prints a value ----------------------------------------------------------

_PREFIXES = ("sk-", "sk-proj-", "ghp_", "github_pat_", "xoxb-", "AKIA", "glpat-", "hf_", "")
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"


@st.composite
def _secrets(draw: st.DrawFn) -> str:
    """A secret-looking value: a known prefix (or none) and 24-48 token characters."""
    return draw(st.sampled_from(_PREFIXES)) + draw(
        st.text(alphabet=_ALPHABET, min_size=24, max_size=48)
    )


def _write_source(folder: Path, secret: str, *, form: str, placement: str, broken: bool) -> Path:
    """One server holding ``secret`` in ``env``, a header or a bearer token, as a Codex
    ``config.toml`` or a ``.mcp.json``; ``broken`` adds a field of the wrong type (the
    server is then imported with an error)."""
    folder.mkdir(parents=True)
    server: dict[str, Any]
    if placement == "env":
        server = {"command": "node", "args": ["server.js"], "env": {"API_KEY": secret}}
    else:
        value = f"Bearer {secret}" if placement == "bearer" else secret
        name = "Authorization" if placement == "bearer" else "X-Api-Key"
        key = "http_headers" if form == "toml" else "headers"
        server = {"url": "https://mcp.example.com/", key: {name: value}}
    if broken:
        server["startup_timeout_sec"] = "soon"
    if form == "toml":
        path = folder / "config.toml"
        tables = {"mcp_servers": {"vault": server}}
        path.write_text(tomli_w.dumps(tables), encoding="utf-8")
    else:
        path = folder / ".mcp.json"
        path.write_text(json.dumps({"mcpServers": {"vault": server}}), encoding="utf-8")
    return path


@settings(max_examples=examples(15), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    secret=_secrets(),
    form=st.sampled_from(["toml", "json"]),
    placement=st.sampled_from(["env", "header", "bearer"]),
    env_ref=st.booleans(),
    broken=st.booleans(),
)
def test_no_command_ever_prints_a_literal_value(
    cli: Run, secret: str, form: str, placement: str, env_ref: bool, broken: bool
) -> None:
    root = Path(tempfile.mkdtemp(prefix="agc-secrets-"))
    try:
        store = root / "store"
        source = _write_source(root / "in", secret, form=form, placement=placement, broken=broken)
        flag = ["--env-ref"] if env_ref else []
        printed = []
        commands: list[list[str]] = [
            ["import", str(source), *flag],
            ["import", str(source), *flag, "--json"],
            ["list"],
            ["list", "--json"],
            ["list", "--type", "mcp", "--json"],
            ["status", "--json"],
            ["project", "--codex-home", str(root / "home")],
            ["project", "--codex-home", str(root / "home"), "--json"],
            ["rename", "vault", "vault_main", "--json"],
            ["disable", "vault_main"],
            ["enable", "vault_main", "--json"],
            ["rm", "vault-2", "--json"],
        ]
        for argv in commands:
            code, out, err = cli("ext", *argv, "--store", str(store))
            assert code == ExitCode.OK, (argv, err)
            printed.append(out + err)
        assert not [text for text in printed if secret in text]

        listed = json.loads(printed[3])
        (item,) = [entry for entry in listed["items"] if entry["name"] == "vault"]
        repo = ExtensionRepository(store)
        if env_ref:
            assert item["literalValues"] == []
            assert _files_holding(store, secret.encode(), skip=_is_source_copy(repo)) == []
            assert secret not in (root / "home" / "config.toml").read_text()
        else:
            key = {"env": "API_KEY", "header": "X-Api-Key", "bearer": "Authorization"}[placement]
            assert [entry["key"] for entry in item["literalValues"]] == [key]
        assert _open_entries(store / "extensions") == []
    finally:
        shutil.rmtree(root)


# -- what counts as literal, and the references Codex reads ----------------------------------


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("sk-abc", True),
        ("eu", True),
        ("Bearer sk-abc", True),
        ("${SEARCH_KEY:-sk-default}", True),  # Claude Code's default is a literal value
        ("prefix-${SEARCH_KEY}", True),
        ("${SEARCH_KEY}", False),
        (" ${SEARCH_KEY} ", False),
        ("${CLAUDE_PLUGIN_ROOT}", False),
        ("${CLAUDE_PLUGIN_ROOT}/data/db.sqlite", False),
        ("", False),
    ],
)
def test_which_values_are_literal(value: str, literal: bool) -> None:
    config = {"command": "node", "env": {"K": value}}
    assert literal_values(config) == ((LiteralValue("env", "K"),) if literal else ())


def test_reference_literals_uses_the_fields_codex_reads_from_the_environment() -> None:
    config: dict[str, Any] = {
        "url": "https://x.example/mcp",
        "http_headers": {
            "authorization": "bearer tok-1",
            "X-Team": "blue",
            "X-From-Env": "${ALREADY}",
        },
        "env_http_headers": {"X-Trace": "TRACE_ID"},
    }
    converted, values = reference_literals(config, "9lives-api")
    assert converted == {
        "url": "https://x.example/mcp",
        "http_headers": {"X-From-Env": "${ALREADY}"},
        "env_http_headers": {"X-Trace": "TRACE_ID", "X-Team": "MCP_9LIVES_API_X_TEAM"},
        "bearer_token_env_var": "MCP_9LIVES_API_BEARER_TOKEN",
    }
    assert values == (
        LiteralValue("http_headers", "authorization", "MCP_9LIVES_API_BEARER_TOKEN"),
        LiteralValue("http_headers", "X-Team", "MCP_9LIVES_API_X_TEAM"),
    )
    assert config["http_headers"]["X-Team"] == "blue"  # the input is not changed

    stdio = {"command": "n", "env": {"A": "1", "B": "2"}, "env_vars": [{"name": "A"}, "C"]}
    converted, values = reference_literals(stdio, "s")
    assert converted == {"command": "n", "env_vars": [{"name": "A"}, "C", "B"]}
    assert [value.reference for value in values] == ["A", "B"]
    # A token that is not a single bearer credential goes whole into env_http_headers.
    other, _ = reference_literals(
        {"url": "u", "http_headers": {"Authorization": "Basic dXNlcjpwYXNz"}}, "s"
    )
    assert other["env_http_headers"] == {"Authorization": "S_AUTHORIZATION"}


_ALIKE_SERVERS = ["web", "web-x", "Web", "web_x", "WEB-X-API"]
_ALIKE_HEADERS = ["X-Api-Key", "Api-Key", "x-api-key", "Key", "Authorization", "Bearer-Token"]


@given(
    st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(_ALIKE_SERVERS),
                st.lists(st.sampled_from(_ALIKE_HEADERS), min_size=1, max_size=3, unique=True),
            ),
            min_size=1,
            max_size=4,
            unique_by=lambda server: server[0],
        ),
        min_size=1,
        max_size=3,
    )
)
@settings(max_examples=examples(25), deadline=None)
def test_property_env_ref_never_gives_two_servers_one_variable(
    sources: list[list[tuple[str, list[str]]]],
) -> None:
    """Servers whose name and header read alike (``web`` + ``X-Api-Key``, ``web-x`` +
    ``Api-Key``), in one source or several: each literal header becomes a variable that
    no other server (nor another header) reads, so no value set for one server is sent
    to another."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = ExtensionRepository(Path(tmp) / "store")
        generated: list[tuple[str, str]] = []
        for number, servers in enumerate(sources):
            document = {
                "mcp_servers": {
                    name: {
                        "url": f"https://{number}.example/mcp",
                        "http_headers": {h: f"Bearer v-{number}-{name}-{h}" for h in headers},
                    }
                    for name, headers in servers
                }
            }
            path = Path(tmp) / f"config-{number}.toml"
            path.write_text(tomli_w.dumps(document))
            result = repo.import_path(path, env_ref=True)
            generated += [(item.id, value.reference or "") for item, value in result.literals]
        readers: dict[str, list[str]] = {}
        for item in repo.items():
            if item.mcp is not None:
                for name in referenced_variables(item.mcp.config):
                    readers.setdefault(name, []).append(item.id)
        variables = [variable for _, variable in generated]
        assert len(set(variables)) == len(variables), generated
        for item_id, variable in generated:
            assert readers[variable] == [item_id], (variable, readers[variable])


def test_an_env_ref_import_of_a_source_imported_with_literals_offers_removing_the_literals(
    tmp_path: Path, store: Path, cli: Run
) -> None:
    """The same source imported again with --env-ref: the copy to keep is the new one
    (references), so the notice names the earlier items (literal values) to remove; an
    import again without it still offers removing the new copy."""
    source = _toml_config(tmp_path / "in", "ghp_" + "R2d2C3po" * 5)
    first = json.loads(cli("ext", "import", str(source), "--store", str(store), "--json")[1])
    literal = [item["id"] for item in first["imported"]]
    code, out, _ = cli("ext", "import", str(source), "--env-ref", "--store", str(store), "--json")
    assert code == 0
    second = json.loads(out)
    safe = [item["id"] for item in second["imported"]]
    notice = second["notice"]
    assert f"to keep only this import: agc ext rm {' '.join(literal)}" in notice
    assert "earlier items stay until removed" in notice
    assert not any(item_id in notice for item_id in safe)
    # following the notice leaves only the references
    assert cli("ext", "rm", *literal, "--store", str(store))[0] == 0
    listed = json.loads(cli("ext", "list", "--json", "--store", str(store))[1])
    assert sorted(item["id"] for item in listed["items"]) == sorted(safe)
    assert all(not item["literalValues"] for item in listed["items"])
    # a plain second copy (no references made): keep the first, remove the new one
    other = str(tmp_path / "other")
    assert cli("ext", "import", str(source), "--store", other)[0] == 0
    third = json.loads(cli("ext", "import", str(source), "--store", other, "--json")[1])
    again = [item["id"] for item in third["imported"]]
    assert third["notice"].endswith(f"to keep only the first: agc ext rm {' '.join(again)}")
