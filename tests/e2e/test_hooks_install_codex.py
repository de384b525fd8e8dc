"""``agc hooks install`` against the real Codex CLI: Codex itself says agc's hooks are
trusted (and so will run), the user's hooks keep their trust, uninstall takes agc's out.

Codex's answer comes from its app server (``codex app-server``, JSON-RPC over stdio):
``hooks/list`` gives each hook's key, ``currentHash`` and ``trustStatus`` exactly as the
TUI's ``/hooks`` review sees them. No model is asked: the scripted server only serves
as the proxy that refuses any outside call.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import HealthCheck, assume, given, settings

import agc.capture._install as _install
from agc.capture import (
    BACKGROUND_EVENTS,
    CLIENT_EVENTS,
    check_hooks,
    codex_hook_hash,
    hook_command,
    install_hooks,
    uninstall_hooks,
)
from tests.capture.test_install import configs
from tests.conftest import examples
from tests.e2e.clients import codex_env, codex_home
from tests.e2e.model_server import Answer, Script

REACHES_INSIDE = {
    "agc.capture._install": "stands in for a Codex whose hook digest agc does not know",
}

_DEADLINE_S = 60


def _hooks_list(codex: Path, env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    """``hooks/list`` for ``cwd`` from a fresh ``codex app-server``: its hooks, the
    configuration read without an error."""
    entry = _hooks_entry(codex, env, cwd)
    assert entry["errors"] == []
    hooks: list[dict[str, Any]] = entry["hooks"]
    return hooks


def _hooks_entry(codex: Path, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """``hooks/list``'s entry for ``cwd`` (its hooks and the configuration's errors)
    from a fresh ``codex app-server``."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"clientInfo": {"name": "agc-e2e", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    with subprocess.Popen(
        [str(codex), "app-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        text=True,
    ) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        try:
            for request in requests:
                server.stdin.write(json.dumps(request) + "\n")
                server.stdin.flush()
            for line in server.stdout:  # ends when the server does (the kill below)
                message = json.loads(line)
                if message.get("id") == 1:
                    assert "result" in message, message
                    entries = message["result"]["data"]
                    assert len(entries) == 1
                    entry: dict[str, Any] = entries[0]
                    return entry
        finally:
            server.kill()
            server.wait(timeout=_DEADLINE_S)
    pytest.fail("codex app-server ended without answering hooks/list")


def _agc() -> str:
    return str(Path(sys.executable).parent / "agc")


def _ours(hooks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [h for h in hooks if "agc hook --client codex" in (h.get("command") or "")]


@pytest.fixture
def codex_setup(tmp_path: Path, model_server: Any) -> tuple[dict[str, str], Path]:
    server = model_server(Script([Answer("unused")]))
    home = codex_home(tmp_path, server)
    return codex_env(tmp_path, server, home), home


def test_codex_runs_the_hooks_agc_installs_and_keeps_the_users_trust(
    codex_bin: Path, codex_setup: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, home = codex_setup
    config = home / "config.toml"
    # The user's own hooks: one before agc's (PreToolUse), one after agc's (Stop).
    config.write_text(
        config.read_text()
        + '\n# my hooks\n[[hooks.PreToolUse]]\nmatcher = "^Bash$"\n'
        + '[[hooks.PreToolUse.hooks]]\ntype = "command"\ncommand = "/usr/bin/true mine"\n'
    )
    command = hook_command(_agc(), "codex", store=str(tmp_path / "evidence"))
    install_hooks("codex", "user", command=command, environ=env)
    config.write_text(
        config.read_text()
        + '\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\n'
        + 'command = "/usr/bin/true after"\n'
    )
    work = tmp_path / "work"
    work.mkdir()

    hooks = _hooks_list(codex_bin, env, work)
    ours = _ours(hooks)
    assert sorted(h["eventName"] for h in ours) == sorted(
        e[0].lower() + e[1:] for e in CLIENT_EVENTS["codex"]
    )
    for hook in ours:
        event = hook["eventName"][0].upper() + hook["eventName"][1:]
        assert hook["trustStatus"] == "trusted", hook
        # agc's digest, the tool events' `async = true` included, is Codex's own.
        digest = codex_hook_hash(
            event,
            command,
            timeout=hook["timeoutSec"],
            is_async=event in BACKGROUND_EVENTS["codex"],
        )
        assert hook["currentHash"] == digest
    status = check_hooks("codex", "user", environ=env)
    assert {t.key: t.current_hash for t in status.trust} == {
        h["key"]: h["currentHash"] for h in ours
    }
    # agc's digest alone sees nothing wrong, but only Codex can confirm it will run them.
    assert (status.problems, status.verdict) == ((), None)
    assert check_hooks("codex", "user", environ=env, codex=str(codex_bin)).will_run
    # The user's hooks are not trusted by agc; the user trusts the one after agc's as
    # Codex's /hooks review does (its current hash under its key).
    (after,) = [h for h in hooks if h.get("command") == "/usr/bin/true after"]
    assert after["trustStatus"] == "untrusted"
    config.write_text(
        config.read_text()
        + f'\n[hooks.state."{after["key"]}"]\ntrusted_hash = "{after["currentHash"]}"\n'
    )

    uninstall_hooks("codex", "user", environ=env)
    hooks = _hooks_list(codex_bin, env, work)
    assert _ours(hooks) == []
    (after,) = [h for h in hooks if h.get("command") == "/usr/bin/true after"]
    assert after["key"].endswith(":stop:0:0")  # it moved up when agc's group went
    assert after["trustStatus"] == "trusted"
    (mine,) = [h for h in hooks if h.get("command") == "/usr/bin/true mine"]
    assert mine["trustStatus"] == "untrusted"


def test_codex_runs_project_hooks_agc_installs_once_the_project_is_trusted(
    codex_bin: Path, codex_setup: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, home = codex_setup
    project = tmp_path / "app"
    (project / ".git").mkdir(parents=True)
    command = hook_command(_agc(), "codex")
    install_hooks("codex", "project", command=command, project=project, environ=env)
    assert not check_hooks("codex", "project", project=project, environ=env).will_run
    assert _ours(_hooks_list(codex_bin, env, project)) == []  # an untrusted project

    config = home / "config.toml"
    config.write_text(config.read_text() + f'\n[projects."{project}"]\ntrust_level = "trusted"\n')
    ours = _ours(_hooks_list(codex_bin, env, project))
    assert len(ours) == len(CLIENT_EVENTS["codex"])
    assert {h["source"] for h in ours} == {"project"}
    assert {h["trustStatus"] for h in ours} == {"trusted"}
    asked = check_hooks("codex", "project", project=project, environ=env, codex=str(codex_bin))
    assert asked.will_run


def test_codex_runs_the_hooks_of_a_home_reached_through_a_symlink(
    codex_bin: Path, codex_setup: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, home = codex_setup
    link = tmp_path / "linked-codex-home"
    link.symlink_to(home)
    env = {**env, "CODEX_HOME": str(link)}
    install_hooks("codex", "user", command=hook_command(_agc(), "codex"), environ=env)
    work = tmp_path / "work"
    work.mkdir()
    ours = _ours(_hooks_list(codex_bin, env, work))
    assert len(ours) == len(CLIENT_EVENTS["codex"])
    assert {h["trustStatus"] for h in ours} == {"trusted"}


def test_install_and_status_ask_codex_and_take_its_digest_when_agcs_differs(
    codex_bin: Path,
    codex_setup: tuple[dict[str, str], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, home = codex_setup
    work = tmp_path / "work"
    work.mkdir()
    command = hook_command(_agc(), "codex")
    # A Codex whose digest agc does not know (a later version hashing more of the hook):
    # agc's own digest is wrong, Codex's hooks/list gives the right one.
    monkeypatch.setattr(_install, "codex_hook_hash", lambda *_a, **_k: "sha256:" + "0" * 64)
    monkeypatch.chdir(work)
    change = install_hooks("codex", "user", command=command, environ=env, codex=str(codex_bin))
    assert change.codex_says == "trusted"
    assert {h["trustStatus"] for h in _ours(_hooks_list(codex_bin, env, work))} == {"trusted"}
    status = check_hooks("codex", "user", environ=env, codex=str(codex_bin))
    assert status.codex_says is not None
    assert set(status.codex_says.values()) == {"trusted"}
    assert status.will_run  # Codex's word, not agc's (wrong) digest

    # A hook Codex will not run is named, whatever agc computes.
    config = home / "config.toml"
    config.write_text(config.read_text().replace('trusted_hash = "sha256:', 'trusted_hash = "x', 1))
    status = check_hooks("codex", "user", environ=env, codex=str(codex_bin))
    assert [p for p in status.problems if p.startswith("Codex says agc's")]
    assert not status.will_run


@settings(
    max_examples=examples(10, least=3),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(value=configs("codex"))
def test_whatever_the_users_codex_config_holds_codex_runs_agcs_hooks(
    codex_bin: Path, value: dict[str, Any]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        home = root / "codex-home"
        home.mkdir()
        user_config = tomli_w.dumps(value)
        (home / "config.toml").write_text(user_config)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "CODEX_HOME": str(home)}
        env.update({"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"})
        entry = _hooks_entry(codex_bin, env, root)
        # A configuration Codex itself refuses (a key it reads as a table given a scalar:
        # `features = 0`) is none a user runs Codex with.
        assume(entry["errors"] == [])
        before = {(h["key"], h["command"], h["trustStatus"]) for h in entry["hooks"]}
        command = hook_command(_agc(), "codex")
        install_hooks("codex", "user", command=command, environ=env)
        hooks = _hooks_list(codex_bin, env, root)
        ours = _ours(hooks)
        assert len(ours) == len(CLIENT_EVENTS["codex"])
        assert {h["trustStatus"] for h in ours} == {"trusted"}
        # the user's hooks: the same keys, commands and trust as before
        assert {(h["key"], h["command"], h["trustStatus"]) for h in hooks if h not in ours} == (
            before
        )
