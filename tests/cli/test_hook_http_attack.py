# ruff: noqa: F811, PLC0415, PT018
"""Claude Code's HTTP hooks to agc's listener attacked as another local user or a
forger holding the secret would: an event turned away or cut off is never lost in
silence, only the tool events are taken, each session's events go to its own store."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agc.cli import _hookhttp
from agc.flows import capture_failures
from tests.cli.test_hook_http import (
    RUN,
    Resident,
    _client_events,
    _event,
    _records,
    resident,  # noqa: F401 - the fixture
)

REACHES_INSIDE = {"agc.capture._http_hooks": "its port range, narrowed to the squatted port"}


def test_an_event_turned_away_by_peers_holding_every_slot_is_never_lost_silently(
    resident: Resident, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another local user opens MAX_CONNECTIONS connections that send nothing (no secret
    needed): the client's own event may be closed unread, and then the session's next
    synchronous event keeps a failure (the listener turned a request away)."""
    resident.sync(_event("SessionStart", source="startup"))
    resident.sync(_event("UserPromptSubmit", prompt="go"))
    holders = []
    for _ in range(_hookhttp.MAX_CONNECTIONS):
        conn = socket.create_connection(("127.0.0.1", resident.hook.port), timeout=10)
        conn.sendall(b"POST /agc-hook HTTP/1.1\r\n")  # never finished
        holders.append(conn)
    time.sleep(0.3)  # let the listener take them (a race only in the attacker's favour)
    try:
        status: int | str
        try:
            status = resident.post(_event("PreToolUse", 1))
        except (http.client.HTTPException, OSError) as exc:
            status = type(exc).__name__
    finally:
        for conn in holders:
            conn.close()
    resident.sync(_event("Stop"))
    hooks = [r["hook"] for r in _client_events(resident.store)]
    lost = "PreToolUse" not in hooks
    kept = capture_failures(resident.store)
    # What must hold: an event the listener dropped is never lost silently.
    assert not lost or kept, (status, hooks, kept)


def test_a_synchronous_event_sent_over_http_is_not_taken_as_one(
    resident: Resident, tmp_path: Path
) -> None:
    """Only the per-tool-call events are installed as HTTP hooks: a SessionEnd POSTed to
    the listener with the secret (naming any file as the session's transcript) is
    refused, and seals nothing."""
    resident.sync(_event("SessionStart", source="startup"))
    resident.sync(_event("UserPromptSubmit", prompt="go"))
    forged = tmp_path / "forged.jsonl"
    forged.write_text(json.dumps({"type": "user", "sessionId": "x", "message": {}}) + "\n")
    status = resident.post(_event("SessionEnd", transcript_path=str(forged)))
    resident.sync(_event("Stop"))  # flushes the queue
    sealed = [r for r in _records(resident.store) if r["event"] == "sealed"]
    assert status >= 400 and not any(r.get("hook") == "SessionEnd" for r in sealed), (
        status,
        [r["hook"] for r in _client_events(resident.store)],
    )


def test_a_body_cut_by_the_deadline_is_kept_as_a_failure(
    resident: Resident, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client too slow to send its (large) body within READ_S: the listener shuts the
    connection, and the session's next synchronous event keeps a failure."""
    monkeypatch.setattr(_hookhttp, "READ_S", 0.5)
    resident.sync(_event("SessionStart", source="startup"))
    resident.sync(_event("UserPromptSubmit", prompt="go"))
    body = _event("PostToolUse", 1, tool_response={"output": "x" * 1000})
    url = resident.hook.url("claude-code", str(resident.store))
    with socket.create_connection(("127.0.0.1", resident.hook.port), timeout=10) as slow:
        head = (
            f"POST {url} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {resident.hook.secret}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        slow.sendall(head + body[:100])
        assert slow.recv(100) == b""  # shut by the deadline
    resident.sync(_event("Stop"))
    assert "PostToolUse" not in [r["hook"] for r in _client_events(resident.store)]
    assert capture_failures(resident.store), "the event was lost without a failure"


def test_an_http_event_goes_to_its_own_session_s_store(resident: Resident, tmp_path: Path) -> None:
    """Installed without --store, the HTTP hooks' URL names no store: an event is
    captured in the store of its own session's synchronous hooks ($AGC_HOME of that
    Claude Code), not of whichever session's hook came last."""
    from agc.capture import run_id_for
    from agc.cli import _hookclient

    store_a, store_b = tmp_path / "store-a", tmp_path / "store-b"
    store_a.mkdir()
    store_b.mkdir()
    args = ["--client", "claude-code", "--http", str(resident.hook.port)]

    def sync(data: bytes, agc_home: Path) -> None:
        env = {
            "HOME": str(resident.state.parent),
            "XDG_STATE_HOME": str(resident.state),
            "AGC_HOME": str(agc_home),
        }
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(resident.path))
        with sock:
            _hookclient.exchange(sock, _hookclient.request(args, data, env))

    def post(data: bytes) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", resident.hook.port, timeout=10)
        try:
            conn.request(
                "POST",
                resident.hook.url("claude-code"),  # no store: as installed without --store
                data,
                {"Authorization": f"Bearer {resident.hook.secret}"},
            )
            return conn.getresponse().status
        finally:
            conn.close()

    a, b = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
    sync(_event("SessionStart", session=a, source="startup"), store_a)
    sync(_event("UserPromptSubmit", session=a, prompt="go"), store_a)
    sync(_event("SessionStart", session=b, source="startup"), store_b)  # another project
    assert post(_event("PreToolUse", 1, session=a)) == 200
    sync(_event("SessionStart", session=b, source="resume"), store_b)  # flushes the queue
    in_a = [r["hook"] for r in _client_events(store_a, run_id_for("claude-code", a))]
    in_b = [r["hook"] for r in _client_events(store_b, run_id_for("claude-code", a))]
    assert "PreToolUse" in in_a and not in_b, (in_a, in_b)


def test_a_session_forged_over_http_alone_never_verifies(
    resident: Resident, tmp_path: Path
) -> None:
    """A whole session sent over HTTP alone (start, prompt, a call, Stop naming a
    made-up transcript, SessionEnd) by whoever holds the secret: the synchronous events
    are refused, and agc-verify never says complete."""
    from agc.cli.verify_main import main as verify

    session = "fffffff0-0000-4000-8000-00000000f0f0"
    forged = tmp_path / "forged.jsonl"
    lines = [
        {"type": "user", "sessionId": session, "message": {"role": "user", "content": "go"}},
        {
            "type": "assistant",
            "sessionId": session,
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {"command": "echo 1"},
                    }
                ],
            },
        },
        {
            "type": "user",
            "sessionId": session,
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "1"}],
            },
        },
    ]
    forged.write_text("".join(json.dumps(line) + "\n" for line in lines))
    t: dict[str, Any] = {"transcript_path": str(forged)}
    resident.sync(_event("SessionStart", source="startup"))  # the user's own session: listens
    for data in (
        _event("SessionStart", session=session, source="startup", **t),
        _event("UserPromptSubmit", session=session, prompt="go", **t),
        _event("PreToolUse", 1, session=session, **t),
        _event("PostToolUse", 1, session=session, tool_response={"stdout": "1"}, **t),
        _event("Stop", session=session, **t),
        _event("SessionEnd", session=session, reason="exit", **t),
    ):
        # Only the tool events are taken over HTTP: a session's start, turn and end
        # come through `agc hook`.
        tool = b'"PreToolUse"' in data or b'"PostToolUse"' in data
        assert resident.post(data) == (200 if tool else 403)
    resident.sync(_event("UserPromptSubmit", prompt="go"))  # flushes the queue
    from agc.capture import run_id_for

    run = run_id_for("claude-code", session)
    code = verify([run, "--store", str(resident.store)])
    assert code != 0, "a session forged over HTTP alone verifies complete"


def test_events_lost_to_a_full_listener_never_verify_complete(
    resident: Resident, tmp_path: Path
) -> None:
    """Another local user fills the listener's slots while a call runs whose result is an
    error (a command that exited non-zero): its PreToolUse and PostToolUseFailure may be
    lost, and agc-verify never says the run is complete."""
    from agc.capture import run_id_for
    from agc.cli.verify_main import main as verify
    from tests.flows.test_crosscheck_flow import _lines

    session_id = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"  # the fixture's SESSION
    transcript = tmp_path / "t.jsonl"
    t: dict[str, Any] = {"transcript_path": str(transcript)}
    resident.sync(_event("SessionStart", source="startup", **t))
    resident.sync(_event("UserPromptSubmit", prompt="go", **t))
    members: dict[str, Any] = {"tool_name": "Bash", "tool_input": {}}
    assert resident.post(_event("PreToolUse", 1, **t, **members)) == 200
    assert resident.post(_event("PostToolUse", 1, **t, **members, tool_response={})) == 200
    holders = []
    for _ in range(_hookhttp.MAX_CONNECTIONS):
        conn = socket.create_connection(("127.0.0.1", resident.hook.port), timeout=10)
        conn.sendall(b"POST /agc-hook HTTP/1.1\r\n")
        holders.append(conn)
    time.sleep(0.3)
    for data in (
        _event("PreToolUse", 2, **t, **members),
        _event("PostToolUseFailure", 2, **t, **members, error="exit 1", tool_use_id="toolu_2"),
    ):
        with contextlib.suppress(http.client.HTTPException, OSError):
            resident.post(data)
    for conn in holders:
        conn.close()
    # the transcript: call toolu_1 answered, toolu_2 answered with an error
    lines = _lines([("toolu_1", "Bash"), ("toolu_2", "Bash")], refused=frozenset({"toolu_2"}))
    transcript.write_text(
        "".join(
            line.replace("5a1c0b7e-0000-4000-8000-00000000cafe", session_id) + "\n"
            for line in lines
        )
    )
    resident.sync(_event("Stop", **t))
    resident.sync(_event("SessionEnd", reason="exit", **t))
    hooked = {r.get("call_id") for r in _client_events(resident.store)}
    code = verify([run_id_for("claude-code", session_id), "--store", str(resident.store), "--json"])
    # (Whether the listener had taken every held connection when the events came is a
    # race; when it had, they were lost.)
    lost = "toolu_2" not in hooked
    assert not (lost and code == 0), "events were lost, yet agc-verify says complete"


# -- another user squats the port while agc's resident capture process is down ----------

_SQUAT = r"""
import socket, sys
family, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
sock = socket.socket(socket.AF_INET6 if family == "6" else socket.AF_INET)
if family == "6":
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
sock.bind((host, port))
sock.listen(16)
print("ready", flush=True)
while True:
    conn, _ = sock.accept()
    conn.settimeout(2)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    except OSError:
        pass
    conn.close()
    print(data.hex(), flush=True)
"""

_NOBODY = 65534
_SYSTEM_PYTHON = Path("/usr/bin/python3")


class Squatter:
    """A program of another user (uid 65534) listening where agc's hooks point,
    answering 200 to what it is sent and keeping every byte (root only)."""

    def __init__(self, family: str, host: str, port: int) -> None:
        import subprocess

        if os.getuid() != 0 or not _SYSTEM_PYTHON.exists():
            pytest.skip("binding a port as another user needs root and /usr/bin/python3")
        self.process = subprocess.Popen(
            [str(_SYSTEM_PYTHON), "-I", "-c", _SQUAT, family, host, str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            user=_NOBODY,
            cwd="/",
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline() != b"ready\n":
            self.process.kill()
            pytest.skip(f"uid {_NOBODY} could not listen on {host}:{port} here")

    def heard(self) -> bytes:
        """Everything it was sent (it is stopped)."""
        self.process.kill()
        out, _ = self.process.communicate()
        return b"".join(bytes.fromhex(line) for line in out.decode().split())


def _settings_hooks(home: Path) -> tuple[list[dict[str, Any]], str]:
    text = (home / ".claude" / "settings.json").read_text()
    handlers = [
        handler
        for groups in json.loads(text)["hooks"].values()
        for group in groups
        for handler in group["hooks"]
    ]
    return handlers, text


def _post(url: str, headers: dict[str, str], data: bytes) -> int:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=10)
    try:
        conn.request("POST", f"{parts.path}?{parts.query}", data, headers)
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("family", "host"),
    [("4", "127.0.0.1"), ("4", "0.0.0.0"), ("6", "::")],
    ids=["loopback", "every-ipv4-address", "dual-stack-ipv6"],
)
def test_a_port_squatted_by_another_user_is_moved_off_before_any_tool_event(
    family: str, host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user binds the hooks' port while no resident holds it (between sessions,
    after its idle exit). The next session's first synchronous event finds it: before
    that event is answered, agc keeps a new port and secret and moves its hooks in the
    user's settings to them, so the sessions started after send nothing to the
    squatter and it never sees the new secret; the session that found it still sends
    (Claude Code keeps the hooks it started with) its tool events and the old secret
    there, which agc no longer hears, and its run never verifies complete."""
    from agc.capture import hook_client_command, install_hooks, keep_http_hook, read_http_hook
    from agc.cli import _hookclient
    from agc.cli.verify_main import main as verify

    home, state, store = tmp_path / "home", tmp_path / "state", tmp_path / "store"
    home.mkdir()
    store.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    old = keep_http_hook(port=port)
    command = hook_client_command(
        sys.executable, _hookclient.__file__, "claude-code", store=str(store), http_port=port
    )
    install_hooks(
        "claude-code", "user", command=command, http=old.handler("claude-code", str(store))
    )
    squatter = Squatter(family, host, port)
    server = Resident(tmp_path / "r.sock", state, store, old)  # the next session starts one
    try:
        server.sync(_event("SessionStart", source="startup"))
        # Before any tool event: a new port and secret, the settings moved to them.
        new = read_http_hook()
        assert new is not None and new.port != port and new.secret != old.secret
        handlers, text = _settings_hooks(home)
        assert old.secret not in text and f":{port}/" not in text
        assert f"--http {port}" not in text
        http = [h for h in handlers if h["type"] == "http"]
        assert http and all(f"127.0.0.1:{new.port}/" in h["url"] for h in http)
        assert all(h["headers"]["Authorization"] == f"Bearer {new.secret}" for h in http)
        assert all(f"--http {new.port}" in h["command"] for h in handlers if "command" in h)
        # The session that found it sends as it started: to the squatter, old secret.
        server.sync(_event("UserPromptSubmit", prompt="go"))
        snapshot = http[0]["url"].replace(f":{new.port}/", f":{port}/")
        stale = {"Authorization": f"Bearer {old.secret}", "Content-Type": "application/json"}
        for name in ("PreToolUse", "PostToolUse"):
            assert _post(snapshot, stale, _event(name)) == 200
        server.sync(_event("Stop"))
        # agc no longer hears the old secret; a session started now sends to agc.
        later = "0199a1b2-7c3d-7e4f-8a9b-00000000beef"
        headers = dict(http[0]["headers"]) | {"Content-Type": "application/json"}
        assert _post(http[0]["url"], stale, _event("PreToolUse", 7, session=later)) == 401
        assert _post(http[0]["url"], headers, _event("PreToolUse", 8, session=later)) == 200
    finally:
        server.stop()
        heard = squatter.heard()
    assert old.secret.encode() in heard  # what Claude Code's snapshot sent it
    assert new.secret.encode() not in heard
    assert b"toolu_8" not in heard
    assert verify([RUN, "--store", str(store)]) != 0
    codes = [f.code for f in capture_failures(store, run_id=RUN)]
    assert codes.count("hook-port-taken") == 1  # once for the session, not per event
    assert "hook-events-unheard" in codes  # its turn's tool events went elsewhere


def test_a_move_stopped_before_the_settings_were_moved_is_finished_by_the_next_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resident killed half-way through a move left the new port and secret kept and
    the settings still naming the squatted port: the next session (started with those
    settings) finds the squatter again, and its first synchronous event moves the
    settings to the kept port and secret before it is answered."""
    from agc.capture import (
        hook_client_command,
        install_hooks,
        keep_http_hook,
        read_http_hook,
    )
    from agc.cli import _hookclient

    home, state, store = tmp_path / "home", tmp_path / "state", tmp_path / "store"
    home.mkdir()
    store.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    old = keep_http_hook(port=port)
    command = hook_client_command(
        sys.executable, _hookclient.__file__, "claude-code", store=str(store), http_port=port
    )
    install_hooks(
        "claude-code", "user", command=command, http=old.handler("claude-code", str(store))
    )
    squatter = Squatter("4", "127.0.0.1", port)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        kept = keep_http_hook(port=int(probe.getsockname()[1]))  # the move's first write
    server = Resident(tmp_path / "r.sock", state, store, old)
    try:
        server.sync(_event("SessionStart", source="startup"))
        handlers, text = _settings_hooks(home)
        assert read_http_hook() == kept
        assert old.secret not in text
        assert f"--http {port}" not in text
        assert all(f"127.0.0.1:{kept.port}/" in h["url"] for h in handlers if "url" in h)
        assert all(f"--http {kept.port}" in h["command"] for h in handlers if "command" in h)
        assert kept.secret in text
    finally:
        server.stop()
        heard = squatter.heard()
    assert kept.secret.encode() not in heard
    assert "hook-port-taken" in {f.code for f in capture_failures(store, run_id=RUN)}


def test_no_free_port_to_move_to_leaves_the_hooks_where_they_are_and_the_run_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user holds the hooks' port and no other port of agc's range can be bound:
    the resident names no port it does not hold (the settings and the kept secret stay
    as they were) and keeps the failure: the run never verifies complete."""
    from agc.capture import (
        _http_hooks,
        hook_client_command,
        install_hooks,
        keep_http_hook,
        read_http_hook,
    )
    from agc.cli import _hookclient
    from agc.cli.verify_main import main as verify

    home, state, store = tmp_path / "home", tmp_path / "state", tmp_path / "store"
    home.mkdir()
    store.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    old = keep_http_hook(port=port)
    command = hook_client_command(
        sys.executable, _hookclient.__file__, "claude-code", store=str(store), http_port=port
    )
    install_hooks(
        "claude-code", "user", command=command, http=old.handler("claude-code", str(store))
    )
    before = (home / ".claude" / "settings.json").read_text()
    squatter = Squatter("4", "127.0.0.1", port)
    monkeypatch.setattr(_http_hooks, "_PORTS", (port, port))  # its only port is held
    server = Resident(tmp_path / "r.sock", state, store, old)
    try:
        server.sync(_event("SessionStart", source="startup"))
        server.sync(_event("Stop"))
    finally:
        server.stop()
        squatter.heard()
    assert (home / ".claude" / "settings.json").read_text() == before
    assert read_http_hook() == old
    assert verify([RUN, "--store", str(store)]) != 0
    failures = [f for f in capture_failures(store, run_id=RUN) if f.code == "hook-port-taken"]
    assert failures and "could not move" in failures[0].message
