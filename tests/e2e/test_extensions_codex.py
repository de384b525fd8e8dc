"""Projected extensions as the real Codex CLI (pinned, from npm) reads them.

``CODEX_HOME=<projected> codex mcp list --json`` must list exactly the enabled MCP
servers, under their current names and with the projected fields, beside the built-in
``agc_tools`` of the base configuration; ``codex app-server`` must answer
``skills/list`` after ``skills/extraRoots/set`` with exactly the enabled skills under
their current names (renamed ones included). A server imported with ``--env-ref`` must
get its variable from the environment Codex is launched in, its value never written.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agc.cli.app import main
from tests.e2e import clients
from tests.e2e.agents import CodexSandbox
from tests.e2e.model_server import Answer, ModelServer, Script
from tests.extensions.builders import (
    access_plugins,
    bare_map_mcp_json,
    codex_config_two_servers,
    plugin_with_two_skills_and_mcp,
    write_skill,
)

StartServer = Callable[[Script], ModelServer]
_TIMEOUT = 60.0


def _agc(capsys: pytest.CaptureFixture[str], store: Path, *argv: str) -> Any:
    code = main(["ext", *argv, "--store", str(store), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _base_config(root: Path, server: ModelServer) -> Path:
    """The launcher's configuration: the e2e provider, plus a built-in agc_tools server."""
    home = clients.codex_home(root / "base", server)
    base = root / "launcher.toml"
    base.write_text(
        (home / "config.toml").read_text()
        + '\n[mcp_servers.agc_tools]\ncommand = "agc-tools-not-started"\nargs = ["mcp"]\n',
        encoding="utf-8",
    )
    return base


def _env(root: Path, server: ModelServer, home: Path) -> dict[str, str]:
    env = clients.codex_env(root, server, home)
    # The client's own secret is in the environment; no projected server may ask for it.
    env["OPENAI_API_KEY"] = "sk-not-for-third-party-servers"
    return env


def test_codex_mcp_list_shows_exactly_the_enabled_servers_as_projected(
    tmp_path: Path,
    store: Path,
    codex_bin: Path,
    model_server: StartServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = model_server(Script([Answer("unused")]))
    _agc(capsys, store, "import", str(plugin_with_two_skills_and_mcp(tmp_path / "in")))
    _agc(capsys, store, "import", str(codex_config_two_servers(tmp_path / "in" / "cfg")))
    _agc(capsys, store, "import", str(bare_map_mcp_json(tmp_path / "in" / "claude")))
    _agc(capsys, store, "rename", "filesystem", "files")
    _agc(capsys, store, "rename", "github", "gh")
    _agc(capsys, store, "disable", "docs")
    home = tmp_path / "projected"
    projection = _agc(
        capsys,
        store,
        "project",
        "--codex-home",
        str(home),
        "--base-config",
        str(_base_config(tmp_path, server)),
    )
    projected = [entry["name"] for entry in projection["mcpServers"]]
    assert projected == ["search", "search-2", "files", "gh", "sqlite"]

    done = subprocess.run(
        [str(codex_bin), "mcp", "list", "--json"],
        env=_env(tmp_path, server, home),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    listed = {entry["name"]: entry for entry in json.loads(done.stdout)}
    assert set(listed) == {*projected, "agc_tools"}
    tables = tomllib.loads((home / "config.toml").read_text())["mcp_servers"]
    for name in projected:
        entry, table = listed[name], tables[name]
        assert entry["enabled"] is True
        transport = entry["transport"]
        if "command" in table:
            assert transport["type"] == "stdio"
            assert transport["command"] == table["command"]
            assert transport["args"] == table.get("args", [])
            assert (transport["env"] or {}) == table.get("env", {})
            assert (transport["env_vars"] or []) == table.get("env_vars", [])
            assert transport["cwd"] == table["cwd"]
            assert Path(transport["cwd"]).is_absolute()
        else:
            assert transport["type"] == "streamable_http"
            assert transport["url"] == table["url"]
            assert transport.get("bearer_token_env_var") == table.get("bearer_token_env_var")
            assert (transport.get("http_headers") or {}) == table.get("http_headers", {})
            assert (transport.get("env_http_headers") or {}) == table.get("env_http_headers", {})
        if "startup_timeout_sec" in table:
            assert entry["startup_timeout_sec"] == pytest.approx(table["startup_timeout_sec"])
        if "tool_timeout_sec" in table:
            assert entry["tool_timeout_sec"] == pytest.approx(table["tool_timeout_sec"])
    assert listed["files"]["transport"]["env_vars"] == ["HOME_DIR"]  # OPENAI_API_KEY kept back
    assert listed["gh"]["transport"]["bearer_token_env_var"] == "GITHUB_TOKEN"
    assert listed["sqlite"]["transport"]["env_vars"] == ["SQLITE_KEY"]
    assert listed["search"]["transport"]["args"] == ["./server/index.js", "--port", "0"]
    assert listed["agc_tools"]["transport"]["command"] == "agc-tools-not-started"


def test_an_env_ref_server_gets_its_variable_from_the_environment_codex_is_launched_in(
    tmp_path: Path,
    store: Path,
    codex_bin: Path,
    model_server: StartServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    published = "sk-published-" + "v" * 32  # the literal value in the published config
    launched = "sk-launching-environment-" + "w" * 24
    server = model_server(Script([Answer("done")]))
    source = tmp_path / "in" / "vendor"
    source.mkdir(parents=True)
    received = tmp_path / "received.txt"
    script = source / "server.sh"
    script.write_text('#!/bin/sh\nprintf "%s" "$SEARCH_API_KEY" > "$1"\n', encoding="utf-8")
    script.chmod(0o755)
    (source / "config.toml").write_text(
        f"""[mcp_servers.search]
command = "./server.sh"
args = ["{received}"]
env = {{ SEARCH_API_KEY = "{published}" }}

[mcp_servers.web]
url = "https://web.example.com/mcp"
http_headers = {{ Authorization = "Bearer {published}", "X-Api-Key" = "{published}" }}
""",
        encoding="utf-8",
    )
    _agc(capsys, store, "import", str(source), "--env-ref")
    home = tmp_path / "projected"
    base = _base_config(tmp_path, server)
    project = ("project", "--codex-home", str(home), "--base-config", str(base))
    _agc(capsys, store, *project, "--startup-grace-ms", "5000")
    assert published not in (home / "config.toml").read_text()
    env = {**_env(tmp_path, server, home), "SEARCH_API_KEY": launched}

    done = subprocess.run(
        [str(codex_bin), "mcp", "list", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    listed = {entry["name"]: entry["transport"] for entry in json.loads(done.stdout)}
    assert listed["search"]["env_vars"] == ["SEARCH_API_KEY"]
    assert not listed["search"]["env"]
    assert listed["web"]["bearer_token_env_var"] == "WEB_BEARER_TOKEN"
    assert listed["web"]["env_http_headers"] == {"X-Api-Key": "WEB_X_API_KEY"}
    assert not listed["web"].get("http_headers")

    # A real session starts the stdio server (the HTTP one is left out: no outside host).
    _agc(capsys, store, "disable", "web")
    _agc(capsys, store, *project, "--startup-grace-ms", "5000")
    work = tmp_path / "work"
    work.mkdir()
    codex = CodexSandbox(tmp_path / "run", server, codex_bin, work, home, env)
    result = codex.exec("say done")
    assert result.returncode == 0, result.describe()
    assert received.read_text() == launched
    for path in store.rglob("*"):
        if path.is_file() and "tree" not in path.relative_to(store).parts:
            assert published.encode() not in path.read_bytes(), path


class AppServer:
    """``codex app-server`` over stdio: JSON-RPC requests, one message per line."""

    def __init__(self, binary: Path, env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            [str(binary), "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self.messages.put(json.loads(line))
            except ValueError:
                continue
        self.messages.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            try:
                message = self.messages.get(timeout=_TIMEOUT)
            except queue.Empty:
                pytest.fail(f"codex app-server did not answer {method} in {_TIMEOUT}s")
            if message is None:
                stderr = self.process.stderr.read().decode() if self.process.stderr else ""
                pytest.fail(f"codex app-server exited during {method}: {stderr[-3000:]}")
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                result: dict[str, Any] = message["result"]
                return result

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait(timeout=10)


def _user_skills(listing: dict[str, Any]) -> list[dict[str, Any]]:
    (entry,) = listing["data"]
    return [skill for skill in entry["skills"] if skill["scope"] != "system"]


def test_codex_app_server_lists_exactly_the_enabled_skills_under_their_names(
    tmp_path: Path,
    store: Path,
    codex_bin: Path,
    model_server: StartServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = model_server(Script([Answer("unused")]))
    _agc(capsys, store, "import", str(plugin_with_two_skills_and_mcp(tmp_path / "in")))
    for plugin in access_plugins(tmp_path / "in" / "vendors"):
        _agc(capsys, store, "import", str(plugin))
    _agc(capsys, store, "rename", "art-skill", "pixel-art-skill")
    _agc(capsys, store, "disable", "access-2")
    home = tmp_path / "projected"
    base = _base_config(tmp_path, server)
    projection = _agc(
        capsys, store, "project", "--codex-home", str(home), "--base-config", str(base)
    )
    root = Path(projection["skillRoot"])
    expected = {"pixel-art-skill", "code-skill", "access", "access-3"}
    assert {skill["name"] for skill in projection["skills"]} == expected

    work = tmp_path / "work"
    work.mkdir()
    app = AppServer(codex_bin, _env(tmp_path, server, home), work)
    try:
        app.request("initialize", {"clientInfo": {"name": "agc-e2e", "version": "0"}})
        app.send({"jsonrpc": "2.0", "method": "initialized"})
        assert app.request("skills/extraRoots/set", {"extraRoots": [str(root)]}) == {}
        listing = app.request("skills/list", {"cwds": [str(work)], "forceReload": True})
        skills = _user_skills(listing)
        assert {skill["name"] for skill in skills} == expected
        for skill in skills:
            assert Path(skill["path"]) == root / skill["name"] / "SKILL.md"
            assert skill["enabled"] is True
        descriptions = {skill["name"]: skill["description"] for skill in skills}
        assert descriptions["pixel-art-skill"] == "Draw pixel art."
        assert descriptions["access-3"] == "Access control helper from vendor 3."
        assert not [error for error in listing["data"][0]["errors"] if str(root) in error["path"]]

        # A change reaches Codex through a new projection: the root is rebuilt.
        _agc(capsys, store, "disable", "code-skill")
        _agc(capsys, store, "rename", "access", "gatekeeper")
        _agc(capsys, store, "project", "--codex-home", str(home), "--base-config", str(base))
        listing = app.request("skills/list", {"cwds": [str(work)], "forceReload": True})
        assert {skill["name"] for skill in _user_skills(listing)} == {
            "pixel-art-skill",
            "gatekeeper",
            "access-3",
        }
    finally:
        app.close()


def test_codex_loads_every_imported_skill_under_the_name_agc_kept(
    tmp_path: Path,
    store: Path,
    codex_bin: Path,
    model_server: StartServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Names Codex loads are kept as published (a plugin's ``crafter:onboard-repo``, a
    name with spaces or non-ASCII letters); only a name Codex refuses (over 64
    characters) is rewritten, and Codex then loads the rewritten one."""
    server = model_server(Script([Answer("unused")]))
    published = {
        "onboard": "crafter:onboard-repo",
        "pdf": "PDF Processing",
        "names": "名前",
        "hash": "#tag",
        "long": "l" * 70,
    }
    bundle = tmp_path / "in" / "bundle"
    for folder, name in published.items():
        write_skill(bundle / "skills" / folder, json.dumps(name, ensure_ascii=False))
    imported = _agc(capsys, store, "import", str(bundle))
    names = {item["originalName"]: item["name"] for item in imported["imported"]}
    expected = {name: name for name in published.values()}
    expected["l" * 70] = "l" * 64
    assert names == expected

    home = tmp_path / "projected"
    base = _base_config(tmp_path, server)
    projection = _agc(
        capsys, store, "project", "--codex-home", str(home), "--base-config", str(base)
    )
    root = Path(projection["skillRoot"])
    work = tmp_path / "work"
    work.mkdir()
    app = AppServer(codex_bin, _env(tmp_path, server, home), work)
    try:
        app.request("initialize", {"clientInfo": {"name": "agc-e2e", "version": "0"}})
        app.send({"jsonrpc": "2.0", "method": "initialized"})
        app.request("skills/extraRoots/set", {"extraRoots": [str(root)]})
        listing = app.request("skills/list", {"cwds": [str(work)], "forceReload": True})
        loaded = {skill["name"]: skill["path"] for skill in _user_skills(listing)}
        assert set(loaded) == set(expected.values())
        by_name = {skill["name"]: skill["path"] for skill in projection["skills"]}
        assert all(Path(loaded[name]) == Path(path) for name, path in by_name.items())
        assert not [error for error in listing["data"][0]["errors"] if str(root) in error["path"]]
    finally:
        app.close()
