"""``agc hooks install --client claude-code`` (user scope, agc's hook client) sends the
per-tool-call events as HTTP hooks to agc's resident capture process: the golden shape,
the secret readable by the user alone, idempotent, an older install flagged outdated and
brought up to date, and taken out by uninstall with the user's own hooks kept."""

from __future__ import annotations

import json
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

import agc.cli as agc_cli
from agc.capture import (
    BACKGROUND_EVENTS,
    CLIENT_EVENTS,
    check_hooks,
    config_paths,
    hook_client_command,
    http_settings_path,
    install_hooks,
    read_http_hook,
)
from agc.cli.app import main

SCRIPT = str(Path(agc_cli.__file__).with_name("_hookclient.py"))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _settings(home: Path) -> Path:
    return config_paths("claude-code", "user", environ={"HOME": str(home)}).hooks


def _golden(port: int, secret: str, store: str) -> dict[str, Any]:
    """Every event's one handler as installed into an empty settings file."""
    argv = [sys.executable, "-I", "-S", SCRIPT, "--client", "claude-code", "--store", store]
    command = shlex.join([*argv, "--http", str(port)])
    url = f"http://127.0.0.1:{port}/agc-hook?client=claude-code&store=" + store.replace("/", "%2F")
    hooks: dict[str, Any] = {}
    for event in CLIENT_EVENTS["claude-code"]:
        if event in BACKGROUND_EVENTS["claude-code"]:
            handler: dict[str, Any] = {
                "type": "http",
                "url": url,
                "headers": {"Authorization": f"Bearer {secret}"},
                "timeout": 5,
            }
        else:
            handler = {"type": "command", "command": command, "timeout": 10}
        hooks[event] = [{"hooks": [handler]}]
    return hooks


def test_install_writes_http_hooks_for_the_tool_events_with_a_private_secret(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(home / "ev")
    assert main(["hooks", "install", "--client", "claude-code", "--store", store]) == 0
    out = capsys.readouterr().out
    kept = read_http_hook()
    assert kept is not None
    assert 0 < kept.port < 65536
    assert len(kept.secret) >= 43  # 32 random bytes
    assert kept.secret not in out  # never printed
    assert f"http://127.0.0.1:{kept.port}/agc-hook" in out
    settings = _settings(home)
    assert json.loads(settings.read_text())["hooks"] == _golden(kept.port, kept.secret, store)
    # the secret is readable by the user alone, where it is kept and where it is sent from
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert stat.S_IMODE(http_settings_path().stat().st_mode) == 0o600
    assert stat.S_IMODE(http_settings_path().parent.stat().st_mode) == 0o700
    # installing again changes nothing, and keeps the port and the secret
    text = settings.read_text()
    assert main(["hooks", "install", "--client", "claude-code", "--store", store]) == 0
    assert "unchanged" in capsys.readouterr().out
    assert settings.read_text() == text
    assert read_http_hook() == kept


def test_an_existing_settings_file_others_could_read_becomes_the_user_s_alone(
    home: Path,
) -> None:
    settings = _settings(home)
    settings.parent.mkdir(parents=True)
    settings.write_text('{"theme": "dark"}\n')
    settings.chmod(0o644)
    assert main(["hooks", "install", "--client", "claude-code"]) == 0
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert json.loads(settings.read_text())["theme"] == "dark"


def test_port_option_moves_the_port_with_a_new_secret(home: Path) -> None:
    """A port is moved away from a program that held it, which Claude Code may have
    sent the secret: the secret moves too (and stays when the port does not)."""
    assert main(["hooks", "install", "--client", "claude-code"]) == 0
    first = read_http_hook()
    assert first is not None
    assert main(["hooks", "install", "--client", "claude-code", "--port", str(first.port)]) == 0
    assert read_http_hook() == first
    port = 20000 + (first.port + 1) % 10000
    assert main(["hooks", "install", "--client", "claude-code", "--port", str(port)]) == 0
    second = read_http_hook()
    assert second is not None
    assert second.port == port
    assert second.secret != first.secret
    settings = (home / ".claude" / "settings.json").read_text(encoding="utf-8")
    assert second.secret in settings
    assert first.secret not in settings
    status = check_hooks("claude-code", "user")
    assert (status.port, status.outdated, status.will_run) == (port, False, True)
    assert f"--http {port}" in (status.command or "")


@pytest.mark.parametrize(
    "argv",
    [
        ["--client", "codex", "--codex", ""],
        ["--client", "gemini"],
        ["--client", "claude-code", "--scope", "project"],
    ],
)
def test_port_is_refused_where_no_http_hooks_are_installed(
    home: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hooks", "install", *argv, "--port", "23456"]) == 2
    assert "--port is for Claude Code's HTTP hooks" in capsys.readouterr().err


def test_project_scope_keeps_command_hooks_and_no_secret(home: Path) -> None:
    """A project's settings file is shared: no secret goes into it."""
    assert main(["hooks", "install", "--client", "claude-code", "--scope", "project"]) == 0
    text = (home / ".claude" / "settings.json").read_text()
    assert '"http"' not in text
    assert "Authorization" not in text
    status = check_hooks("claude-code", "project", project=home)
    assert status.http == ()
    assert set(status.background) == BACKGROUND_EVENTS["claude-code"]
    assert not status.outdated


def test_status_says_over_http_and_flags_an_older_install_as_outdated(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As an earlier agc installed it: the tool events as background command hooks.
    older = hook_client_command(sys.executable, SCRIPT, "claude-code")
    install_hooks("claude-code", "user", command=older)
    before = check_hooks("claude-code", "user")
    assert (before.outdated, before.http) == (True, ())
    assert main(["hooks", "status", "--client", "claude-code"]) == 0
    assert "not installed as this agc installs them" in capsys.readouterr().out
    assert main(["hooks", "install", "--client", "claude-code"]) == 0
    capsys.readouterr()
    after = check_hooks("claude-code", "user")
    kept = read_http_hook()
    assert kept is not None
    assert (after.outdated, after.will_run, after.port) == (False, True, kept.port)
    assert set(after.http) == BACKGROUND_EVENTS["claude-code"]
    assert after.background == ()
    assert sorted(after.events) == sorted(CLIENT_EVENTS["claude-code"])
    value = json.loads(_settings(home).read_text())
    assert all(len(groups) == 1 for groups in value["hooks"].values())  # replaced in place
    assert main(["hooks", "status", "--client", "claude-code", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["clients"]
    assert (entry["port"], entry["outdated"]) == (kept.port, False)
    assert sorted(entry["http"]) == sorted(BACKGROUND_EVENTS["claude-code"])
    assert main(["hooks", "status", "--client", "claude-code"]) == 0
    assert f"over HTTP to 127.0.0.1:{kept.port}" in capsys.readouterr().out


@pytest.mark.parametrize("spoil", ["missing", "readable by others", "another port"])
def test_status_says_the_listener_would_refuse_without_the_kept_secret(
    home: Path, spoil: str
) -> None:
    assert main(["hooks", "install", "--client", "claude-code"]) == 0
    path = http_settings_path()
    if spoil == "missing":
        path.unlink()
    elif spoil == "readable by others":
        path.chmod(0o644)
    else:
        kept = json.loads(path.read_text())
        path.write_text(json.dumps({**kept, "port": kept["port"] + 1}))
    status = check_hooks("claude-code", "user")
    assert not status.will_run
    assert any("agc's listener would refuse every event" in p for p in status.problems)


def test_uninstall_takes_out_the_http_hooks_and_keeps_the_user_s_own(home: Path) -> None:
    settings = _settings(home)
    settings.parent.mkdir(parents=True)
    own_http = {"type": "http", "url": "http://127.0.0.1:9999/mine", "timeout": 3}
    own = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [own_http]}]}}
    settings.write_text(json.dumps(own))
    assert main(["hooks", "install", "--client", "claude-code"]) == 0
    assert len(json.loads(settings.read_text())["hooks"]["PreToolUse"]) == 2
    assert main(["hooks", "uninstall", "--client", "claude-code"]) == 0
    assert json.loads(settings.read_text()) == own
    assert not check_hooks("claude-code", "user").installed


@pytest.mark.parametrize(
    ("patterns", "blocked"),
    [
        (["https://hooks.example.com/*"], True),
        ([], True),
        (["http://127.0.0.1:*"], False),
        (["*"], False),
    ],
)
def test_status_says_when_claude_code_s_url_allowlist_blocks_the_http_hooks(
    home: Path, patterns: list[str], blocked: bool
) -> None:
    """Claude Code blocks an HTTP hook whose URL no pattern of ``allowedHttpHookUrls``
    matches: the listener would then hear nothing, and nothing would say so."""
    settings = _settings(home)
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"allowedHttpHookUrls": patterns}))
    assert main(["hooks", "install", "--client", "claude-code"]) == 0
    status = check_hooks("claude-code", "user")
    said = [p for p in status.problems if "allowedHttpHookUrls" in p]
    assert bool(said) == blocked
    assert status.will_run == (not blocked)
