"""The hook client and the resident capture process: every event durable in its run by
the time the hook returns, or its failure kept, whatever dies when."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agc.capture import run_id_for
from agc.cli import _hookclient, _hookserve, hook
from agc.cli.hooks import HOOK_CLIENT_SCRIPT
from agc.flows import capture_failures, capture_hook_event
from agc.integrity import check_run, recover_run
from tests.conftest import sampled
from tests.faults import kill_at_step

SESSION = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
RUN = run_id_for("claude-code", SESSION)


def _call(index: int) -> bytes:
    return json.dumps(
        {
            "session_id": SESSION,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {index}"},
            "tool_use_id": f"toolu_{index}",
            "cwd": "/w",
        }
    ).encode()


def _ids(store: Path) -> list[str]:
    path = store / "audit/tool-events" / f"{RUN}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["call_id"] for line in path.read_bytes().splitlines()]


def _args(store: Path) -> list[str]:
    return ["--client", "claude-code", "--store", str(store)]


def _env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "state")}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    folder = tmp_path / "store"
    folder.mkdir()
    return folder


@pytest.fixture
def resident(tmp_path: Path) -> Iterator[Path]:
    """A resident capture process serving a socket, in a thread of this process."""
    path = tmp_path / "r.sock"
    stop = threading.Event()
    # Ended by the test, not by an idle time: a loaded machine may stall the test past
    # any short one before its first request (the server then refused it).
    server = threading.Thread(
        target=_hookserve.serve, args=(str(path),), kwargs={"idle_s": 600.0, "stop": stop}
    )
    server.start()
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline, "the resident process never listened"
        time.sleep(0.01)
    yield path
    stop.set()
    server.join()


def _send(
    path: Path, args: list[str], data: bytes, env: dict[str, str]
) -> tuple[bool, bytes | None]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    with sock:
        return _hookclient.exchange(sock, _hookclient.request(args, data, env))


def test_parallel_hooks_through_the_resident_process_append_every_event_once(
    resident: Path, store: Path, tmp_path: Path
) -> None:
    answers: list[tuple[bool, bytes | None]] = []

    def hook(index: int) -> None:
        answers.append(_send(resident, _args(store), _call(index), _env(tmp_path)))

    threads = [threading.Thread(target=hook, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [(True, b"")] * 16  # each answered only once it was captured
    assert sorted(_ids(store)) == sorted(f"toolu_{i}" for i in range(16))
    assert capture_failures(store) == []
    recovery = recover_run(RUN, store)
    events = next(a for a in recovery.artifacts if a.kind == "tool-events")
    assert (events.records, events.verified_bytes) == (16, events.bytes)  # all vouched for


def test_the_resident_process_keeps_the_hooks_failure_where_the_hook_would(
    resident: Path, tmp_path: Path
) -> None:
    """The store and the fallback failure file are the hook's (its working folder, its
    $AGC_HOME or home, its $XDG_STATE_HOME), not the resident process's."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "store").write_text("a file, not a store")
    env = {**_env(tmp_path), "AGC_HOME": "store"}
    cwd = os.getcwd()
    os.chdir(tmp_path / "work")
    try:
        taken, answer = _send(resident, ["--client", "codex"], _call(1), env)
    finally:
        os.chdir(cwd)
    assert taken
    assert answer is not None
    assert b"is not a folder" in answer
    assert answer.count(b"\n") == 1
    kept = tmp_path / "state" / "agc" / "capture-failures.jsonl"
    failure = json.loads(kept.read_bytes().splitlines()[-1])
    assert failure["store"] == str(tmp_path / "work" / "store")
    assert failure["client"] == "codex"


def test_a_hook_killed_while_it_sends_keeps_the_failure_of_its_run(
    resident: Path, store: Path, tmp_path: Path
) -> None:
    data = _call(7)
    payload = _hookclient.request(_args(store), data, _env(tmp_path))
    cut = len(payload) - len(data) // 2
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(resident))
    sock.sendall(payload[:cut])
    sock.close()  # as the kernel closes it when the hook process is killed
    deadline = time.monotonic() + 30
    while not capture_failures(store, run_id=RUN):
        assert time.monotonic() < deadline, "no failure kept"
        time.sleep(0.01)
    (failure,) = capture_failures(store, run_id=RUN)
    assert failure.code == "hook-event-invalid"
    assert "stopped after handing over" in failure.message
    assert _ids(store) == []
    capture_hook_event("claude-code", _call(8), store=store)
    recover_run(RUN, store)
    codes = {f.code for f in check_run(RUN, store).findings}
    assert "capture-failed" in codes  # never complete


def _resident_in_child(conn: socket.socket, step: int, *, after: bool) -> int:
    """Fork; the child answers one request on ``conn``, killed at its ``step``-th
    mutating call, or (``after``) once the event is captured, before its answer."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        calls = kill_at_step(step)
        if after:
            captured = hook.capture

            def capture_then_die(*args: Any, **kwargs: Any) -> str:
                captured(*args, **kwargs)
                os._exit(9)

            hook.capture = capture_then_die
        try:
            _hookserve.answer(conn, _hookserve.Captures())
        finally:
            os._exit(min(calls(), 250) if step > 10**6 else 0)
    conn.close()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _hook_against_child(store: Path, tmp_path: Path, step: int, *, after: bool) -> int:
    """One hook whose resident process is killed at ``step``: the hook's own protocol
    (send, wait, capture here when no answer came)."""
    mine, theirs = socket.socketpair()
    args, data = _args(store), _call(99)
    result: list[tuple[bool, bytes | None]] = []
    sender = threading.Thread(
        target=lambda: result.append(
            _hookclient.exchange(mine, _hookclient.request(args, data, _env(tmp_path)))
        )
    )
    sender.start()
    code = _resident_in_child(theirs, step, after=after)
    sender.join()
    mine.close()
    taken, answer = result[0]
    if answer is None:  # as _hookclient.main: capture it here
        assert hook.run(args, stdin=io.BytesIO(data), retry=taken) == 0
    return code


@pytest.mark.real_fsync
def test_a_resident_process_killed_at_any_step_loses_no_event_and_doubles_none(
    store: Path, tmp_path: Path
) -> None:
    """Crash points from the request's receipt to the answer: the hook captures the
    event itself when no answer came; the event is in the run once (or, where the kill
    left bytes no checkpoint vouches for, the failure is kept)."""
    probe = tmp_path / "probe"
    probe.mkdir()
    capture_hook_event("claude-code", _call(0), store=probe)
    steps = _hook_against_child(probe, tmp_path, 10**9, after=False)
    assert 2 <= steps < 250, steps
    cases = [(step, False) for step in sampled(range(1, steps + 1), keep=10, seed=29)]
    for step, after in [*cases, (10**9, True)]:
        folder = tmp_path / f"s{step}-{after}"
        folder.mkdir()
        capture_hook_event("claude-code", _call(0), store=folder)
        assert _hook_against_child(folder, tmp_path, step, after=after) == 9, step
        ids = _ids(folder)
        failures = capture_failures(folder, run_id=RUN)
        assert ids[0] == "toolu_0", step
        assert ids.count("toolu_99") == 1 or failures, (step, ids)
        assert ids.count("toolu_99") == 1 or (ids.count("toolu_99") == 2 and failures), step
        recovery = recover_run(RUN, folder)
        report = check_run(RUN, folder, allow_recovered=True)
        errors = {f.code for f in report.findings if f.severity == "error"}
        assert errors <= {"empty", "capture-failed"}, (step, report.findings)
        if not failures:  # nothing unvouched was left behind
            events = next(a for a in recovery.artifacts if a.kind == "tool-events")
            assert events.verified_bytes == events.bytes, step


def test_retry_appends_an_event_the_run_does_not_end_with(store: Path) -> None:
    capture_hook_event("claude-code", _call(1), store=store)
    capture_hook_event("claude-code", _call(1), store=store, retry=True)
    capture_hook_event("claude-code", _call(2), store=store, retry=True)
    capture_hook_event("claude-code", _call(1), store=store, retry=True)
    assert _ids(store) == ["toolu_1", "toolu_2", "toolu_1"]


# --- the installed command, as a client runs it ------------------------------------------


def _resident_pid(runtime: Path) -> int | None:
    locks = list((runtime / "agc").glob("*.lock"))
    if not locks:
        return None
    text = locks[0].read_text().strip()
    return int(text) if text else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def runtime() -> Iterator[Path]:
    # A short folder of its own: a socket path must fit 107 bytes, and the hook falls
    # back to another folder when $XDG_RUNTIME_DIR/agc/<key>.sock would not (pytest's
    # tmp_path can be too long for that).
    folder = Path(tempfile.mkdtemp(prefix="agc-rt-", dir="/tmp"))
    folder.chmod(0o700)
    yield folder
    pid = _resident_pid(folder)
    if pid is not None and _alive(pid):
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


def _hook(
    runtime: Path, store: Path, data: bytes, tmp_path: Path
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-I", "-S", str(HOOK_CLIENT_SCRIPT), *_args(store)]
    return subprocess.run(
        command,
        input=data,
        capture_output=True,
        env={**_env(tmp_path), "XDG_RUNTIME_DIR": str(runtime), "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )


def test_the_installed_command_starts_a_resident_process_and_survives_its_kill(
    runtime: Path, store: Path, tmp_path: Path
) -> None:
    first = _hook(runtime, store, _call(1), tmp_path)
    assert (first.returncode, first.stdout, first.stderr) == (0, b"", b"")
    assert _ids(store) == ["toolu_1"]  # captured by the hook itself: none answered yet
    socket_files: list[Path] = []
    deadline = time.monotonic() + 60
    while not socket_files:
        assert time.monotonic() < deadline, "no resident process started"
        socket_files = list((runtime / "agc").glob("*.sock"))
        time.sleep(0.02)
    assert socket_files[0].stat().st_mode & 0o777 == 0o600
    assert (runtime / "agc").stat().st_mode & 0o777 == 0o700
    pid = _resident_pid(runtime)
    assert pid is not None
    second = _hook(runtime, store, _call(2), tmp_path)
    assert (second.returncode, second.stdout, second.stderr) == (0, b"", b"")
    assert _ids(store) == ["toolu_1", "toolu_2"]
    os.kill(pid, signal.SIGKILL)
    third = _hook(runtime, store, _call(3), tmp_path)
    assert (third.returncode, third.stdout) == (0, b"")
    assert _ids(store) == ["toolu_1", "toolu_2", "toolu_3"]
    deadline = time.monotonic() + 60
    while _resident_pid(runtime) in (None, pid):  # the third hook started a new one
        assert time.monotonic() < deadline, "no resident process started again"
        time.sleep(0.02)


def test_parallel_hooks_with_no_resident_running_start_one_and_lose_no_event(
    runtime: Path, store: Path, tmp_path: Path
) -> None:
    """Parallel tool calls' hooks at a session's start: each finds none answering and
    starts one (one wins its lock, the others exit) and captures its event itself."""
    command = [sys.executable, "-I", "-S", str(HOOK_CLIENT_SCRIPT), *_args(store)]
    env = {**_env(tmp_path), "XDG_RUNTIME_DIR": str(runtime), "PATH": "/usr/bin:/bin"}
    hooks = [
        subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for _ in range(6)
    ]
    done = [hook.communicate(_call(index), timeout=120) for index, hook in enumerate(hooks)]
    assert [(h.returncode, out) for h, (out, _) in zip(hooks, done, strict=True)] == [(0, b"")] * 6
    assert sorted(_ids(store)) == sorted(f"toolu_{i}" for i in range(6))
    assert capture_failures(store) == []
    deadline = time.monotonic() + 60
    while not list((runtime / "agc").glob("*.sock")):
        assert time.monotonic() < deadline, "no resident process started"
        time.sleep(0.02)
    pid = _resident_pid(runtime)
    assert pid is not None
    assert _alive(pid)
    # the resident that won serves the next ones
    after = _hook(runtime, store, _call(6), tmp_path)
    assert (after.returncode, after.stdout, after.stderr) == (0, b"", b"")
    assert _ids(store).count("toolu_6") == 1
    assert _resident_pid(runtime) == pid


def test_a_hook_that_says_no_after_a_late_take_leaves_the_event_to_itself(
    resident: Path, store: Path, tmp_path: Path
) -> None:
    """`R` came after the hook stopped waiting: it says `N` and captures the event
    itself; the resident drops it (no record, no failure), so it is never written twice."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(resident))
    with sock:
        sock.sendall(_hookclient.request(_args(store), _call(5), _env(tmp_path)))
        assert sock.recv(1) == b"R"
        sock.sendall(b"N")
        assert sock.recv(16) == b""  # it closed without capturing
    assert hook.run(_args(store), stdin=io.BytesIO(_call(5))) == 0
    assert _ids(store) == ["toolu_5"]
    assert capture_failures(store) == []


def _ignored(pid: int) -> set[int]:
    """The signals process ``pid`` ignores (Linux: ``SigIgn`` in ``/proc/PID/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            mask = int(line.split()[1], 16)
            return {n for n in range(1, 65) if mask & (1 << (n - 1))}
    return set()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_a_hook_ended_by_its_client_still_hands_on_its_event(
    runtime: Path, store: Path, tmp_path: Path
) -> None:
    """A client ends the background hooks still running when its turn ends (Claude Code
    sends SIGTERM): the hook client has read, or is reading, an event the client gave
    it, and captures it all the same; the resident process it starts can be ended."""
    command = [sys.executable, "-I", "-S", str(HOOK_CLIENT_SCRIPT), *_args(store)]
    env = {**_env(tmp_path), "XDG_RUNTIME_DIR": str(runtime), "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    deadline = time.monotonic() + 30
    while not {signal.SIGTERM, signal.SIGHUP} <= _ignored(process.pid):
        assert process.poll() is None, "the hook exited before reading its event"
        assert time.monotonic() < deadline, "the hook never came to ignore SIGTERM"
        time.sleep(0.005)
    process.send_signal(signal.SIGTERM)
    process.send_signal(signal.SIGHUP)
    out, _ = process.communicate(_call(7), timeout=60)
    assert (process.returncode, out) == (0, b"")
    assert _ids(store) == ["toolu_7"]
    deadline = time.monotonic() + 60
    while (pid := _resident_pid(runtime)) is None:
        assert time.monotonic() < deadline, "no resident process started"
        time.sleep(0.02)
    assert not {signal.SIGTERM, signal.SIGHUP} & _ignored(pid)  # SIGTERM still ends it
