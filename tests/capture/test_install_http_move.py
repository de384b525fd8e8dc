"""agc's HTTP hooks moved off a port another user holds: only agc's handlers that name
that port change (the HTTP hooks' URL and secret, the command hooks' ``--http``), the
user's own hooks and settings stay, a second move changes nothing, and a move killed at
any step is finished by the next one; the holder of a port is found however it bound."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

import agc.cli as agc_cli
from agc.capture import (
    HttpHook,
    config_paths,
    hook_client_command,
    install_hooks,
    keep_http_hook,
    listener_owner,
    move_http_hooks,
    read_http_hook,
)
from tests.conftest import sampled
from tests.faults import kill_at_step

SCRIPT = str(Path(agc_cli.__file__).with_name("_hookclient.py"))
USER_HOOK = {"type": "command", "command": "echo mine", "timeout": 3}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path


def _install(store: str, port: int) -> HttpHook:
    hook = keep_http_hook(port=port)
    command = hook_client_command(
        sys.executable, SCRIPT, "claude-code", store=store, http_port=port
    )
    path = config_paths("claude-code", "user").hooks
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"model": "x", "hooks": {"PreToolUse": [{"hooks": [USER_HOOK]}]}}) + "\n"
    )
    install_hooks("claude-code", "user", command=command, http=hook.handler("claude-code", store))
    return hook


def _settings() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(config_paths("claude-code", "user").hooks.read_text())
    return value


def _agc_ports(value: dict[str, Any], kept: HttpHook) -> set[str]:
    """Each agc handler's port, as ``url:PORT:secret-is-kept`` or ``cmd:PORT``."""
    ports = set()
    for groups in value["hooks"].values():
        for group in groups:
            for handler in group["hooks"]:
                if handler.get("type") == "http":
                    port = handler["url"].split(":")[2].split("/")[0]
                    kept_secret = handler["headers"]["Authorization"] == f"Bearer {kept.secret}"
                    ports.add(f"url:{port}:{kept_secret}")
                elif "--http" in handler.get("command", ""):
                    ports.add(f"cmd:{handler['command'].split('--http ')[1].split()[0]}")
    return ports


def test_a_move_changes_only_agc_s_handlers_of_that_port_and_a_second_one_nothing(
    home: Path,
) -> None:
    old = _install("/abs/store", 23456)
    before = _settings()
    kept, change = move_http_hooks(23456)
    after = _settings()
    assert change.changed
    assert change.backup is not None
    assert kept.port != 23456
    assert kept.secret != old.secret
    assert read_http_hook() == kept
    assert _agc_ports(after, kept) == {f"url:{kept.port}:True", f"cmd:{kept.port}"}
    assert after["model"] == before["model"]
    assert after["hooks"]["PreToolUse"][0]["hooks"] == [USER_HOOK]
    assert "store=%2Fabs%2Fstore" in json.dumps(after)
    # The same shape: only the port and the secret differ.
    assert json.dumps(after).replace(str(kept.port), "P").replace(kept.secret, "S") == json.dumps(
        before
    ).replace("23456", "P").replace(old.secret, "S")
    assert os.stat(config_paths("claude-code", "user").hooks).st_mode & 0o077 == 0
    again, second = move_http_hooks(23456)
    assert again == kept
    assert not second.changed


def test_a_settings_file_naming_another_port_is_left_as_it_is(home: Path) -> None:
    _install("/abs/store", 23457)
    text = config_paths("claude-code", "user").hooks.read_text()
    kept, change = move_http_hooks(23999)  # the kept port is 23457: nothing names 23999
    assert not change.changed
    assert config_paths("claude-code", "user").hooks.read_text() == text
    assert kept.port != 23999


def _move_in_child(step: int) -> int:
    """Fork; the child moves the hooks off 23458, killed at its ``step``-th mutating call."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        calls = kill_at_step(step)
        try:
            move_http_hooks(23458)
        finally:
            os._exit(min(calls(), 250) if step > 10**6 else 0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.real_fsync
def test_a_move_killed_at_any_step_is_finished_by_the_next(home: Path) -> None:
    """Killed at each mutating call of the move: the settings file is whole (the old one
    or the moved one, never a mix), and the next move (the next synchronous event that
    finds the port still held) leaves every agc handler on the kept port and secret."""
    settings = config_paths("claude-code", "user").hooks
    steps = _move_in_child(10**9)  # how many mutating calls a whole move makes
    assert steps > 2
    for step in sampled(range(1, steps + 1), keep=6, seed=38):
        for path in (settings, home / "state" / "agc" / "hook-http.json"):
            path.unlink(missing_ok=True)
        old = _install("/abs/store", 23458)
        assert _move_in_child(step) == 9, step
        between = _settings()  # parses: whole
        kept = read_http_hook()
        assert kept is not None
        ports = _agc_ports(between, kept)
        assert ports in (
            {"url:23458:True", "cmd:23458"},  # killed before the new secret was kept
            {"url:23458:False", "cmd:23458"},  # the secret kept, the settings not moved
            {f"url:{kept.port}:True", f"cmd:{kept.port}"},  # moved
        ), (step, ports)
        finished, _ = move_http_hooks(23458)
        assert finished.port != 23458, step
        assert finished.secret != old.secret, step
        assert _agc_ports(_settings(), finished) == {
            f"url:{finished.port}:True",
            f"cmd:{finished.port}",
        }, step


@pytest.mark.parametrize(
    ("family", "host"),
    [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")],
    ids=["loopback", "every-ipv4-address", "dual-stack-ipv6"],
)
def test_the_holder_of_a_port_is_found_however_it_bound(family: int, host: str) -> None:
    with socket.socket(family) as holder:
        if family == socket.AF_INET6:
            holder.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        try:
            holder.bind((host, 0))
        except OSError as exc:
            pytest.skip(f"cannot bind {host}: {exc}")
        port = holder.getsockname()[1]
        assert listener_owner(port) is None  # bound, not listening: nobody to send to
        holder.listen()
        assert listener_owner(port) == os.getuid()
