"""`agc hooks uninstall` of the last HTTP hooks retires their secret: agc's listener
refuses it at once (401, nothing kept), agc's resident capture process and its port
keeper let the port go and exit, `agc hooks status` says whether one still runs, a
new install makes a new secret that is heard, and an uninstall killed at any step
leaves either the hooks with their secret or, once run again, neither."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agc.capture import (
    check_hooks,
    keep_http_hook,
    port_listening,
    read_http_hook,
    retire_http_hook,
    retired_http_port,
)
from agc.cli import _hookclient
from agc.cli.app import main
from agc.cli.hooks import HOOK_CLIENT_SCRIPT
from agc.flows import capture_failures
from tests.cli.test_hook_http import RUN, Resident, _client_events, _event, _wait_for
from tests.faults import kill_at_step


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("CLAUDE_CONFIG_DIR", "AGC_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # the resident's socket folder
    monkeypatch.chdir(tmp_path)
    (tmp_path / "store").mkdir()
    return tmp_path


def _install(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["hooks", "install", "--client", "claude-code", "--store", str(home / "store")]) == 0
    )
    capsys.readouterr()


def _uninstall(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["hooks", "uninstall", "--client", "claude-code"]) == 0
    return capsys.readouterr().out


def _post(port: int, secret: str, data: bytes, store: Path) -> int:
    """POST an event as Claude Code does; the status (OSError: nothing listens)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        query = f"client=claude-code&store={store}"
        headers = {"Authorization": f"Bearer {secret}"}
        conn.request("POST", f"/agc-hook?{query}", data, headers)
        return conn.getresponse().status
    finally:
        conn.close()


def _socket_path() -> Path:
    folder = _hookclient.socket_dir(os.environ)
    assert folder is not None
    return Path(folder) / (
        _hookclient.installation_key(sys.executable, str(HOOK_CLIENT_SCRIPT)) + ".sock"
    )


def _calls(store: Path) -> list[str]:
    return [r["call_id"] for r in _client_events(store) if r.get("call_id")]


def _runs(store: Path) -> list[str]:
    folder = store / "audit" / "tool-events"
    return sorted(p.name for p in folder.glob("*.jsonl")) if folder.exists() else []


def test_a_retired_secret_is_refused_at_once_and_keeps_nothing(home: Path) -> None:
    """Retired while the listener runs (no word to it): the next request with the old
    secret is refused (401) and nothing of it is captured."""
    store = home / "store"
    assert retire_http_hook() is None  # nothing kept yet: nothing retired
    assert retired_http_port() is None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    kept = keep_http_hook(port=port)
    resident = Resident(home / "r.sock", home / "state", store, kept)
    try:
        resident.sync(_event("SessionStart", source="startup"))
        assert resident.post(_event("PreToolUse", 1)) == 200
        assert retire_http_hook() == kept.port
        assert read_http_hook() is None
        assert retired_http_port() == kept.port
        other = _event("PreToolUse", 2, session="after-uninstall")
        assert resident.post(other) == 401
        assert resident.post(_event("PreToolUse", 3)) == 401
    finally:
        resident.stop()
    assert _calls(store) == ["toolu_1"]
    assert not any("after-uninstall" in name for name in _runs(store))


def _start_resident(home: Path, port: int) -> subprocess.Popen[bytes]:
    """agc's resident capture process, a real process listening on ``port`` as the
    installed hook command starts it."""
    path = _socket_path()
    env = {
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "AGC_HOME": str(home / "store"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-S",
            str(HOOK_CLIENT_SCRIPT),
            "--serve",
            str(path.parent),
            path.name.removesuffix(".sock"),
            "--http",
            str(port),
            "--state",
            str(home / "state"),
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for(lambda: path.exists() and port_listening(port), "the resident never listened")
    return process


def _ended(process: subprocess.Popen[bytes], what: str) -> None:
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(what)


def test_uninstall_stops_the_resident_and_retires_the_secret(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The resident capture process (a real process) lets the port go and exits; the old
    secret opens nothing; the settings' backups stay; a new install makes a new secret
    that is heard, and the old one is refused there."""
    store = home / "store"
    _install(home, capsys)
    old = read_http_hook()
    assert old is not None
    resident = _start_resident(home, old.port)
    try:
        assert _post(old.port, old.secret, _event("PreToolUse", 1), store) == 200
        _wait_for(lambda: len(_calls(store)) == 1, "the event was not captured")
        backups = sorted((home / ".claude").glob("settings.json.agc-backup-*"))
        said = _uninstall(capsys)
        assert f"stopped agc's capture process (resident) on 127.0.0.1:{old.port}" in said
        assert "the HTTP hooks' secret is retired" in said
        _ended(resident, "the resident capture process did not exit")
    finally:
        if resident.poll() is None:
            resident.kill()
            resident.wait()
    assert port_listening(old.port) is False
    with pytest.raises(ConnectionRefusedError):
        _post(old.port, old.secret, _event("PreToolUse", 2, session="after"), store)
    assert not any("after" in name for name in _runs(store))
    assert set(backups) <= set((home / ".claude").glob("settings.json.agc-backup-*"))

    _install(home, capsys)
    new = read_http_hook()
    assert new is not None
    assert new.secret != old.secret
    again = Resident(_socket_path(), home / "state", store, new)
    try:
        again.sync(_event("SessionStart", source="startup"))
        assert again.post(_event("PreToolUse", 3)) == 200
        assert again.post(_event("PreToolUse", 4), secret=old.secret) == 401
    finally:
        again.stop()
    assert _calls(store) == ["toolu_1", "toolu_3"]


def test_uninstall_takes_the_port_back_from_its_keeper(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A port keeper (a real process, holding the port since the resident exited) hands
    the port over and exits: the port is let go at once, not at its next look."""
    _install(home, capsys)
    hook = read_http_hook()
    assert hook is not None
    kept_in = home / "state" / "agc"
    door = Path(str(_hookclient.keeper_path(str(kept_in), hook.port)))
    listening = socket.socket()
    listening.bind(("127.0.0.1", hook.port))
    listening.listen(8)
    fd = listening.fileno()
    keeper = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-S",
            str(HOOK_CLIENT_SCRIPT),
            "--keep",
            str(kept_in),
            str(home / "state"),
            str(fd),
            str(hook.port),
        ],
        pass_fds=(fd,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    listening.close()
    try:
        _wait_for(door.exists, "the keeper never held the port")
        said = _uninstall(capsys)
        assert f"stopped agc's capture process (port keeper) on 127.0.0.1:{hook.port}" in said
        _ended(keeper, "the port keeper did not exit")
    finally:
        if keeper.poll() is None:
            keeper.kill()
            keeper.wait()
    assert port_listening(hook.port) is False
    assert not door.exists()


def test_status_after_uninstall_says_whether_a_capture_process_still_runs(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _install(home, capsys)
    hook = read_http_hook()
    assert hook is not None
    _uninstall(capsys)

    def status() -> tuple[str, dict[str, Any]]:
        assert main(["hooks", "status", "--client", "claude-code"]) == 1
        said = capsys.readouterr().out
        assert main(["hooks", "status", "--client", "claude-code", "--json"]) == 1
        (client,) = json.loads(capsys.readouterr().out)["clients"]
        return said, client["http_secret"]

    said, found = status()
    assert f"HTTP hooks' secret: retired (agc hooks uninstall; port {hook.port})" in said
    assert "agc capture process of this state folder: none runs" in said
    assert found == {"state": "retired", "port": hook.port, "listening": False}
    with socket.socket() as still:  # as a capture process the uninstall could not reach
        still.bind(("127.0.0.1", hook.port))
        still.listen(1)
        said, found = status()
    assert "agc capture process of this state folder: still runs" in said
    assert found["listening"] is True


def _uninstall_killed_at(step: int) -> int:
    """Fork; the child uninstalls with a kill at ``step``; its exit code (0: finished
    before ``step``)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 0
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                os.dup2(null.fileno(), 2)
            kill_at_step(step)
            main(["hooks", "uninstall", "--client", "claude-code"])
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.real_fsync
def test_an_uninstall_killed_at_any_step_never_leaves_hooks_without_their_secret(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Killed at each of its writes: the HTTP hooks still installed keep their secret
    (they are never left naming a retired one), and the uninstall run again takes the
    hooks out and retires the secret."""
    for step in range(1, 200):
        _install(home, capsys)
        secret = read_http_hook()
        assert secret is not None
        code = _uninstall_killed_at(step)
        if check_hooks("claude-code", "user").http:
            assert read_http_hook() == secret, f"killed at step {step}"
        _uninstall(capsys)
        assert not check_hooks("claude-code", "user").installed
        assert read_http_hook() is None
        assert retired_http_port() == secret.port
        if code == 0:
            break
    else:
        pytest.fail("the uninstall never finished")
    assert step > 2  # killed at least once before it finished


def test_a_session_in_a_turn_at_uninstall_keeps_its_unheard_events_as_a_failure(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Claude Code session started before the uninstall keeps its hooks until it ends:
    its tool events after the uninstall are refused, and its turn's end, captured by a
    resident started again, keeps a `hook-events-unheard` failure saying why: the run is
    never complete, nothing is silently lost."""
    store = home / "store"
    _install(home, capsys)
    hook = read_http_hook()
    assert hook is not None
    first = Resident(_socket_path(), home / "state", store, hook)
    try:
        first.sync(_event("SessionStart", source="startup"))
        first.sync(_event("UserPromptSubmit", prompt="go"))
        assert first.post(_event("PreToolUse", 1)) == 200
        _uninstall(capsys)
    finally:
        first.stop()
    second = Resident(_socket_path(), home / "state", store, hook)
    try:
        with pytest.raises(ConnectionRefusedError):
            second.post(_event("PreToolUse", 2))
        second.sync(_event("Stop"))
    finally:
        second.stop()
    (failure,) = [f for f in capture_failures(store) if f.code == "hook-events-unheard"]
    assert "uninstalled" in failure.message
    assert failure.run_id == RUN
    assert _calls(store) == ["toolu_1"]


def test_the_secret_stays_while_other_settings_still_hold_the_http_hooks(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Taking agc's hooks out of a project's settings leaves the user's HTTP hooks, and
    their secret, as they are, and says so; the user's uninstall then retires it."""
    _install(home, capsys)
    hook = read_http_hook()
    (home / "app").mkdir()
    project = ["--scope", "project", "--project", str(home / "app")]
    assert main(["hooks", "install", "--client", "claude-code", *project]) == 0
    assert main(["hooks", "uninstall", "--client", "claude-code", *project]) == 0
    said = capsys.readouterr().out
    assert f"still installed in {home / '.claude' / 'settings.json'}" in said
    assert read_http_hook() == hook
    _uninstall(capsys)
    assert read_http_hook() is None
