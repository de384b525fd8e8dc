"""The resident capture process's HTTP listener (Claude Code's HTTP hooks): only the
holder of the secret is heard, a body is capped, a slow peer is cut off, a replay is
captured once and fails nothing, an event is captured as the socket captures it, and
what the listener could not hear is said at the session's next synchronous event."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.capture import HttpHook, keep_http_hook, read_http_hook, run_id_for
from agc.cli import _hookclient, _hookhttp, _hookserve
from agc.flows import capture_failures
from tests.conftest import examples

SESSION = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
RUN = run_id_for("claude-code", SESSION)


def _event(name: str, index: int = 0, session: str = SESSION, **members: Any) -> bytes:
    event: dict[str, Any] = {"session_id": session, "hook_event_name": name, "cwd": "/w"}
    if name in {"PreToolUse", "PostToolUse"}:
        event |= {
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {index}"},
            "tool_use_id": f"toolu_{index}",
        }
    return json.dumps(event | members).encode()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Resident:
    """A resident capture process serving in a thread, its hook port and store."""

    def __init__(self, path: Path, state: Path, store: Path, hook: HttpHook) -> None:
        self.path, self.state, self.store, self.hook = path, state, store, hook
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=_hookserve.serve, args=(str(path),), kwargs={"idle_s": 600.0, "stop": self._stop}
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not path.exists():
            assert time.monotonic() < deadline, "the resident process never listened"
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def args(self) -> list[str]:
        return [
            "--client",
            "claude-code",
            "--store",
            str(self.store),
            "--http",
            str(self.hook.port),
        ]

    def sync(self, data: bytes) -> tuple[bool, bytes | None]:
        """A synchronous event through the socket, as the installed command hook sends
        it (it makes the process listen on the port, and waits for the capture). A Stop
        names the session's file, as Claude Code's does (a turn's end without one keeps a
        failure of its own)."""
        event = json.loads(data)
        if event["hook_event_name"] == "Stop" and "transcript_path" not in event:
            session_file = self.store.parent / f"{event['session_id']}.jsonl"
            if not session_file.exists():
                line = {"type": "user", "sessionId": event["session_id"], "message": {}}
                session_file.write_text(json.dumps(line) + "\n", encoding="utf-8")
            data = json.dumps(event | {"transcript_path": str(session_file)}).encode()
        env = {"HOME": str(self.state.parent), "XDG_STATE_HOME": str(self.state)}
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(self.path))
        with sock:
            return _hookclient.exchange(sock, _hookclient.request(self.args(), data, env))

    def post(
        self,
        data: bytes,
        *,
        secret: str | None = None,
        headers: dict[str, str] | None = None,
        store: Path | None = None,
    ) -> int:
        """POST an event as Claude Code does (to the hook of ``store``, default this
        resident's); the status."""
        conn = http.client.HTTPConnection("127.0.0.1", self.hook.port, timeout=10)
        sent = {"Content-Type": "application/json"}
        token = self.hook.secret if secret is None else secret
        if token:
            sent["Authorization"] = f"Bearer {token}"
        sent |= headers or {}
        try:
            where = str(self.store if store is None else store)
            conn.request("POST", self.hook.url("claude-code", where), data, sent)
            return conn.getresponse().status
        finally:
            conn.close()


@pytest.fixture
def resident(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Resident]:
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    store = tmp_path / "store"
    store.mkdir()
    hook = keep_http_hook(port=_free_port())
    server = Resident(tmp_path / "r.sock", state, store, hook)
    yield server
    server.stop()


def _records(store: Path, run: str = RUN) -> list[dict[str, Any]]:
    path = store / "audit" / "tool-events" / f"{run}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _client_events(store: Path, run: str = RUN) -> list[dict[str, Any]]:
    return [r for r in _records(store, run) if r["event"] not in {"sealed", "capture-failed"}]


def test_a_session_heard_throughout_is_captured_in_order_without_a_failure(
    resident: Resident,
) -> None:
    assert resident.sync(_event("SessionStart", source="startup")) == (True, b"")
    assert resident.sync(_event("UserPromptSubmit", prompt="go")) == (True, b"")
    for index in range(5):
        assert resident.post(_event("PreToolUse", index)) == 200
        assert resident.post(_event("PostToolUse", index, tool_response={"ok": 1})) == 200
    # The synchronous Stop is captured after every event that came before it.
    assert resident.sync(_event("Stop")) == (True, b"")
    hooks = [r["hook"] for r in _client_events(resident.store)]
    assert hooks == ["SessionStart", "UserPromptSubmit"] + ["PreToolUse", "PostToolUse"] * 5 + [
        "Stop"
    ]
    assert [r["call_id"] for r in _client_events(resident.store)[2:-1:2]] == [
        f"toolu_{i}" for i in range(5)
    ]
    assert capture_failures(resident.store) == []


@pytest.mark.parametrize("secret", ["", "wrong", "Bearer"])
def test_a_request_without_the_secret_is_refused_and_nothing_is_captured(
    resident: Resident, secret: str
) -> None:
    resident.sync(_event("SessionStart", source="startup"))
    assert resident.post(_event("PreToolUse", 1), secret=secret) == 401
    assert resident.post(_event("PreToolUse", 2), secret=resident.hook.secret + "x") == 401
    resident.sync(_event("Stop"))
    assert [r["hook"] for r in _client_events(resident.store)] == ["SessionStart", "Stop"]


def test_other_paths_methods_and_unannounced_bodies_are_refused(resident: Resident) -> None:
    resident.sync(_event("SessionStart", source="startup"))
    conn = http.client.HTTPConnection("127.0.0.1", resident.hook.port, timeout=10)
    auth = {"Authorization": f"Bearer {resident.hook.secret}"}
    conn.request("GET", "/agc-hook?client=claude-code", headers=auth)
    assert conn.getresponse().status == 405
    conn.close()
    conn.request("POST", "/other", b"{}", auth)
    assert conn.getresponse().status == 404
    conn.close()
    # chunked: no Content-Length
    conn.putrequest("POST", resident.hook.url("claude-code", str(resident.store)))
    conn.putheader("Authorization", auth["Authorization"])
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    conn.send(b"2\r\n{}\r\n0\r\n\r\n")
    assert conn.getresponse().status == 411
    conn.close()
    resident.sync(_event("Stop"))
    assert [r["hook"] for r in _client_events(resident.store)] == ["SessionStart", "Stop"]


def test_a_body_over_the_cap_is_refused_unread_and_its_failure_kept(
    resident: Resident, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_hookhttp, "MAX_HOOK_EVENT_BYTES", 1000)
    resident.sync(_event("SessionStart", source="startup"))
    big = _event("PostToolUse", 1, tool_response={"output": "x" * 5000})
    assert resident.post(big) == 413
    resident.sync(_event("Stop"))
    assert [r["hook"] for r in _client_events(resident.store)] == ["SessionStart", "Stop"]
    (failure,) = capture_failures(resident.store)
    assert failure.code == "hook-event-invalid"
    assert failure.run_id == RUN
    assert "more than the 1,000 agc reads" in failure.message


def test_a_peer_that_trickles_its_request_is_cut_off(
    resident: Resident, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_hookhttp, "READ_S", 0.3)
    resident.sync(_event("SessionStart", source="startup"))
    with socket.create_connection(("127.0.0.1", resident.hook.port), timeout=30) as slow:
        slow.sendall(b"POST /agc-hook?client=claude-code HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        assert slow.recv(100) == b""  # closed by the listener, not by this timeout
        assert time.monotonic() - started < 25
    # and the listener still hears the client
    assert resident.post(_event("PreToolUse", 1)) == 200


@settings(
    max_examples=examples(10),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(sends=st.lists(st.integers(1, 3), min_size=1, max_size=4))
def test_a_replayed_event_is_captured_once_and_fails_nothing(
    resident: Resident, sends: list[int]
) -> None:
    """Each of a turn's tool events sent 1 to 3 times (a replay, or a retry of a request
    whose answer was lost): every request is answered 200, each event is in the run once,
    and no failure is kept against the run, which holds every event (a 409 that kept a
    failure made the run fail for good)."""
    resident.sync(_event("SessionStart", source="startup"))
    resident.sync(_event("UserPromptSubmit", prompt="go"))
    base = len(_client_events(resident.store))
    unique = [_event("PreToolUse", 1000 * base + index) for index in range(len(sends))]
    for event, times in zip(unique, sends, strict=True):
        assert [resident.post(event) for _ in range(times)] == [200] * times
    resident.sync(_event("Stop"))
    calls = [r["call_id"] for r in _client_events(resident.store) if r["hook"] == "PreToolUse"]
    assert calls[-len(unique) :] == [json.loads(e)["tool_use_id"] for e in unique]
    assert len(calls) == len(set(calls))
    assert [f for f in capture_failures(resident.store) if "replay" in f.message] == []


def test_the_same_event_for_another_store_is_captured_there_too(
    resident: Resident, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    resident.sync(_event("SessionStart", source="startup"))
    event = _event("PreToolUse", 3)
    assert resident.post(event) == 200
    assert resident.post(event, store=other) == 200
    resident.sync(_event("Stop"))
    for store in (resident.store, other):
        deadline = time.monotonic() + 30
        while not [r for r in _client_events(store) if r.get("call_id") == "toolu_3"]:
            assert time.monotonic() < deadline, f"the event never reached {store}"
            time.sleep(0.01)


def test_a_resident_started_after_the_session_s_previous_event_keeps_the_gap(
    resident: Resident, tmp_path: Path
) -> None:
    resident.sync(_event("SessionStart", source="startup"))
    resident.sync(_event("UserPromptSubmit", prompt="go"))
    assert resident.post(_event("PreToolUse", 1)) == 200
    resident.stop()  # the process dies mid-turn: what the client sends now is lost
    again = Resident(tmp_path / "r2.sock", resident.state, resident.store, resident.hook)
    try:
        said = again.sync(_event("Stop"))
        assert said[0]
        assert said[1] is not None
        assert b"before this Stop event may be lost" in said[1]  # said on stderr
        (failure,) = capture_failures(resident.store)
        assert failure.code == "hook-events-unheard"
        assert "started after the session's previous event" in failure.message
        assert "capture-failed" in {r["event"] for r in _records(resident.store)}
        # heard from then on: the next turn is whole
        again.sync(_event("UserPromptSubmit", prompt="more"))
        assert again.post(_event("PreToolUse", 2)) == 200
        assert again.sync(_event("Stop")) == (True, b"")
        assert len(capture_failures(resident.store)) == 1
    finally:
        again.stop()
        resident._stop.clear()  # the fixture stops the first one (already stopped)


def test_a_port_another_program_holds_is_said_at_the_end_of_every_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    store = tmp_path / "store"
    store.mkdir()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        hook = keep_http_hook(port=int(squatter.getsockname()[1]))
        server = Resident(tmp_path / "r.sock", state, store, hook)
        try:
            server.sync(_event("SessionStart", source="startup"))
            server.sync(_event("UserPromptSubmit", prompt="go"))
            server.sync(_event("Stop"))
        finally:
            server.stop()
    (failure,) = capture_failures(store)
    assert failure.code == "hook-events-unheard"
    assert "another program holds the port" in failure.message


@settings(
    max_examples=examples(15),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    events=st.lists(
        st.tuples(
            st.sampled_from(["PreToolUse", "PostToolUse", "PostToolUseFailure"]),
            st.dictionaries(
                st.sampled_from(["command", "file_path", "token", "n"]),
                st.one_of(st.text(max_size=30), st.integers(), st.none()),
                max_size=3,
            ),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_an_event_over_http_is_captured_as_the_socket_captures_it(
    resident: Resident, events: list[tuple[str, dict[str, Any]]]
) -> None:
    """The same events, one session through the socket and another over HTTP: the same
    records, but for the run and the writer's own members."""
    over_socket = "s-" + str(time.monotonic_ns())
    over_http = "h-" + str(time.monotonic_ns())
    for index, (name, tool_input) in enumerate(events):
        members = {"tool_input": tool_input, "tool_use_id": f"toolu_{index}"}
        assert resident.sync(_event(name, index, over_socket, **members)) == (True, b"")
        assert resident.post(_event(name, index, over_http, **members)) == 200
    resident.sync(_event("Stop", session=over_http))  # after every HTTP event before it

    def shape(session: str) -> list[dict[str, Any]]:
        run = run_id_for("claude-code", session)
        drop = {"ts", "seq", "run_id", "session_id", "prev", "hash"}
        return [
            {k: v for k, v in r.items() if k not in drop}
            for r in _client_events(resident.store, run)
            if r["hook"] != "Stop"
        ]

    assert shape(over_http) == shape(over_socket)
    assert len(shape(over_http)) == len(events)


def test_the_resident_stays_while_a_session_is_open_and_its_client_runs(tmp_path: Path) -> None:
    """The port is held between a session's turns, not only within them: the resident
    process stays (:meth:`HookListener.holding`) from a session's first synchronous
    event until its ``SessionEnd`` or the end of the client process that ran its hooks;
    a session whose client cannot be watched holds it for a bounded time."""
    listener = _hookhttp.HookListener(
        _free_port(), "s", ("/", str(tmp_path), str(tmp_path)), lambda *_: None
    )
    listener.start()
    client = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        assert not listener.holding()
        listener.note("a", "SessionStart", client=client.pid)
        assert listener.holding()
        listener.note("a", "UserPromptSubmit", client=client.pid)
        listener.note("a", "Stop", client=client.pid)
        assert listener.holding()  # between turns: the session is still open
        assert client.stdin is not None
        client.stdin.close()
        client.wait()
        assert not listener.holding()  # its client ended without a SessionEnd
        listener.note("b", "Stop")  # a client agc cannot watch
        assert listener.holding()
        listener.note("b", "SessionEnd")
        assert not listener.holding()
    finally:
        client.kill()
        client.wait()
        listener.stop()


def test_the_hook_names_the_client_that_ran_it_through_a_shell(tmp_path: Path) -> None:
    """A client runs the hook command with ``sh -c``: the pid the hook sends is the
    client's (the shell's parent), which the resident watches."""
    code = "from agc.cli._hookclient import client_pid; print(client_pid())"
    for command in (f"{sys.executable} -c '{code}'", f"{sys.executable} -c '{code}'; true"):
        out = subprocess.run(["/bin/sh", "-c", command], capture_output=True, check=True)
        assert int(out.stdout) == os.getpid(), command


def _serving(path: Path, port: int, state: Path, idle_s: float) -> threading.Thread:
    thread = threading.Thread(
        target=_hookserve.serve,
        args=(str(path),),
        kwargs={"idle_s": idle_s, "listen": (str(port), str(state)), "keep": True},
    )
    thread.start()
    return thread


def _wait_for(done: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_resident_that_exits_leaves_its_port_held_until_the_next_one_takes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resident process exits when idle (no session open); its listening socket is
    handed to a port keeper, so the port is never free for another user to bind: a
    request meanwhile is answered 503 (unread), and the next resident takes the socket
    back and hears the events, its keeper gone."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    store = tmp_path / "store"
    store.mkdir()
    hook = keep_http_hook(port=_free_port())
    folder = tmp_path / "sock"
    folder.mkdir(mode=0o700)
    kept_in = state / "agc"  # beside hook-http.json, whatever the socket folder
    keeper = Path(str(_hookclient.keeper_path(str(kept_in), hook.port)))
    first = _serving(folder / "r.sock", hook.port, state, idle_s=0.05)
    first.join(timeout=60)
    assert not first.is_alive()
    try:
        _wait_for(keeper.exists, "no keeper took the port")
        _held_then_taken_back(folder, keeper, hook, state, store)
    finally:
        taken = _hookclient.take_kept(str(kept_in), hook.port)  # a keeper left: ended
        if isinstance(taken, socket.socket):
            taken.close()


def _held_then_taken_back(
    folder: Path, keeper: Path, hook: HttpHook, state: Path, store: Path
) -> None:
    assert keeper.stat().st_mode & 0o077 == 0
    with socket.socket() as other, pytest.raises(OSError, match="in use"):
        other.bind(("127.0.0.1", hook.port))  # held: Linux refuses a second bind
    if os.getuid() == 0 and Path("/usr/bin/python3").exists():
        squat = f"import socket; socket.socket().bind(('127.0.0.1', {hook.port}))"
        tried = subprocess.run(
            ["/usr/bin/python3", "-I", "-c", squat], check=False, user=65534, cwd="/"
        )
        assert tried.returncode != 0, "another user bound the port the keeper holds"
    conn = http.client.HTTPConnection("127.0.0.1", hook.port, timeout=10)
    try:  # answered 503 unread, or cut off as it sends: never taken
        conn.request("POST", "/agc-hook?client=claude-code", b"{}")
        assert conn.getresponse().status == 503
    except OSError:
        pass
    finally:
        conn.close()
    stop = threading.Event()
    elsewhere = folder.parent / "another-socket-folder"  # a resident of another environment
    elsewhere.mkdir(mode=0o700)
    second = threading.Thread(
        target=_hookserve.serve,
        args=(str(elsewhere / "r.sock"),),
        kwargs={"idle_s": 600.0, "stop": stop, "listen": (str(hook.port), str(state))},
    )
    second.start()
    try:
        _wait_for(lambda: not keeper.exists(), "the keeper did not hand the port over")
        conn = http.client.HTTPConnection("127.0.0.1", hook.port, timeout=10)
        try:
            sent = {"Authorization": f"Bearer {hook.secret}"}
            conn.request("POST", hook.url("claude-code", str(store)), _event("PreToolUse", 1), sent)
            assert conn.getresponse().status == 200
        finally:
            conn.close()
    finally:
        stop.set()
        second.join()
    assert [r["call_id"] for r in _client_events(store)] == ["toolu_1"]
    assert not keeper.exists()  # the second resident (keep off) handed it to none


def test_hooks_status_says_whether_the_resident_runs_and_the_port_listens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`agc hooks status` tells whether the resident capture process the installed hook
    command uses answers, and whether the HTTP hooks' port listens; asking keeps no
    capture failure (the port is not connected to: a connection that sends no event
    would read, for the listener, as an event it may have lost)."""
    from agc.cli.app import main  # noqa: PLC0415

    for name in ("CLAUDE_CONFIG_DIR", "AGC_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # the resident's socket folder
    store = tmp_path / "store"
    store.mkdir()
    assert main(["hooks", "install", "--client", "claude-code", "--store", str(store)]) == 0
    capsys.readouterr()

    def status() -> dict[str, Any]:
        assert main(["hooks", "status", "--client", "claude-code", "--json"]) == 0
        (client,) = json.loads(capsys.readouterr().out)["clients"]
        assert isinstance(client["resident"], dict)
        return client["resident"]

    before = status()
    assert (before["running"], before["http_listening"]) == (False, False)
    assert before["socket"].startswith(str(tmp_path / "agc"))
    assert main(["hooks", "status", "--client", "claude-code"]) == 0
    said = capsys.readouterr().out
    assert "resident capture process: not running" in said
    assert "HTTP listener on 127.0.0.1:" in said
    assert ": not listening" in said
    hook = read_http_hook()
    assert hook is not None
    resident = Resident(Path(before["socket"]), state, store, hook)
    try:
        assert status()["running"] is True
        resident.sync(_event("SessionStart", source="startup"))  # makes it listen
        assert status() == {"running": True, "socket": before["socket"], "http_listening": True}
        assert main(["hooks", "status", "--client", "claude-code"]) == 0
        said = capsys.readouterr().out
        assert f"resident capture process: running (socket {before['socket']})" in said
        assert f"HTTP listener on 127.0.0.1:{hook.port}: listening" in said
    finally:
        resident.stop()
    assert capture_failures(store) == []
