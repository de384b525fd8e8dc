"""JSON-RPC over a child's stdio (the framing ``codex app-server`` speaks) against small
Python children: answers, refusals with their message redacted, timeouts, a child that
exits or will not stop, lines that are not JSON or nest too deep, the child's own
requests answered "not supported", and its stderr counted and logged redacted."""

from __future__ import annotations

import asyncio
import errno
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agc.serve import ProviderError
from agc.serve._stdio import StdioRpc, spawn_error

REACHES_INSIDE = {
    "agc.serve._stdio": "the JSON-RPC connection on its own, with a scripted child in "
    "place of Codex; the sessions that use it are tested in test_appserver.py",
}

T = TypeVar("T")
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape

# The child's prelude: read one request per line, answer with ``reply(message)``.
PRELUDE = """
import json, sys
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()
def requests():
    for line in sys.stdin:
        yield json.loads(line)
"""


def child(tmp_path: Path, body: str, **options: Any) -> StdioRpc:
    return StdioRpc([sys.executable, "-S", "-c", PRELUDE + body], env={}, cwd=tmp_path, **options)


def run(case: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(case(), 30))


async def drain(rpc: StdioRpc) -> list[Any]:
    """Every event until the child's stdout ends."""
    events = []
    while (event := await rpc.events.get()) is not None:
        events.append(event)
    return events


def test_a_request_gets_its_result_and_a_notification_becomes_an_event(tmp_path: Path) -> None:
    body = """
for message in requests():
    if "id" in message:
        send({"id": message["id"], "result": {"echo": message["params"]}})
    else:
        send({"method": "seen", "params": message.get("params", "none")})
"""

    async def case() -> tuple[Any, list[Any]]:
        rpc = child(tmp_path, body)
        await rpc.start()
        result = await rpc.request("ping", {"n": 1}, timeout_s=10)
        await rpc.notify("note", {"a": 1})
        await rpc.notify("bare")
        await rpc.close(grace_s=5)
        return result, await drain(rpc)

    result, events = run(case)
    assert result == {"echo": {"n": 1}}
    assert [(e.method, e.params) for e in events] == [
        ("seen", {"a": 1}),
        ("seen", {"value": "none"}),  # params that are not an object are wrapped
    ]


def test_an_error_answer_is_refused_with_its_message_redacted(tmp_path: Path) -> None:
    body = f"""
for message in requests():
    send({{"id": message["id"], "error": {{"code": -1, "message": "bad token {SECRET}"}}}})
    send({{"id": message["id"] + 100, "error": {{}}}})  # an answer to nothing: ignored
"""

    async def case() -> ProviderError:
        rpc = child(tmp_path, body)
        await rpc.start()
        try:
            with pytest.raises(ProviderError) as caught:
                await rpc.request("x", {}, timeout_s=10)
            return caught.value
        finally:
            await rpc.close(grace_s=5)

    error = run(case)
    assert error.code == "provider_request_refused"
    assert SECRET not in error.message
    assert "bad token [REDACTED:github-token]" in error.message


def test_an_error_answer_without_a_message_says_the_agent_refused(tmp_path: Path) -> None:
    body = """
for message in requests():
    send({"id": message["id"], "error": {"code": -1}})
"""

    async def case() -> ProviderError:
        rpc = child(tmp_path, body)
        await rpc.start()
        try:
            with pytest.raises(ProviderError) as caught:
                await rpc.request("x", {}, timeout_s=10)
            return caught.value
        finally:
            await rpc.close(grace_s=5)

    assert run(case).message == "the agent refused the request"


def test_no_answer_in_time_is_a_timeout_naming_the_method(tmp_path: Path) -> None:
    async def case() -> ProviderError:
        rpc = child(tmp_path, "for message in requests(): pass")
        await rpc.start()
        try:
            with pytest.raises(ProviderError) as caught:
                await rpc.request("thread/start", {}, timeout_s=0.05)
            return caught.value
        finally:
            await rpc.close(grace_s=5)

    error = run(case)
    assert (error.code, error.message) == (
        "provider_timeout",
        "no answer to thread/start within 0.05 s",
    )


def test_a_child_that_exits_fails_pending_and_later_requests_with_its_exit_code(
    tmp_path: Path,
) -> None:
    body = """
for message in requests():
    sys.exit(3)  # on the first request, without answering
"""

    async def case() -> tuple[ProviderError, ProviderError, ProviderError]:
        rpc = child(tmp_path, body)
        await rpc.start()
        with pytest.raises(ProviderError) as pending:
            await rpc.request("x", {}, timeout_s=10)
        await rpc.wait_closed()
        with pytest.raises(ProviderError) as later:
            await rpc.request("y", {}, timeout_s=10)
        await rpc.close(grace_s=5)
        with pytest.raises(ProviderError) as notified:
            await rpc.notify("z")
        return pending.value, later.value, notified.value

    pending, later, notified = run(case)
    assert (pending.code, pending.message) == (
        "provider_exited",
        "the agent process exited with code 3",
    )
    assert (later.code, later.message) == (
        "provider_exited",
        "the agent process exited with code 3",
    )
    assert notified.code == "provider_exited"


@pytest.mark.parametrize(
    ("ignores", "signal_name"), [("", "SIGTERM"), ("signal.SIGTERM", "SIGKILL")]
)
def test_a_child_that_will_not_exit_is_terminated_then_killed(
    tmp_path: Path, ignores: str, signal_name: str
) -> None:
    body = f"""
import signal, time
if "{ignores}":
    signal.signal({ignores or "signal.SIGTERM"}, signal.SIG_IGN)
sys.stdin.close()
send({{"method": "ready"}})
time.sleep(60)
"""

    async def case() -> tuple[int | None, str, bool]:
        rpc = child(tmp_path, body)
        await rpc.start()
        assert (await rpc.events.get()).method == "ready"  # type: ignore[union-attr]
        await rpc.close(grace_s=0.05)
        await rpc.close(grace_s=0.05)  # again: nothing more to do, no error
        return rpc.returncode, rpc.exit_text(), rpc.alive()

    code, text, alive = run(case)
    assert code == -getattr(signal, signal_name)
    assert text == f"the agent process was killed by {signal_name}"
    assert not alive


def test_kill_stops_a_stuck_child_at_once(tmp_path: Path) -> None:
    async def case() -> str:
        rpc = child(tmp_path, "import time; send({'method': 'ready'}); time.sleep(60)")
        await rpc.start()
        await rpc.events.get()
        rpc.kill()
        await rpc.wait_closed()
        return rpc.exit_text()

    assert run(case) == "the agent process was killed by SIGKILL"


def test_close_and_kill_before_start_do_nothing(tmp_path: Path) -> None:
    async def case() -> tuple[int | None, str]:
        rpc = child(tmp_path, "pass")
        rpc.kill()
        await rpc.close()
        with pytest.raises(ProviderError, match="not running"):
            await rpc.notify("x")
        return rpc.returncode, rpc.exit_text()

    assert run(case) == (None, "the agent process closed its output")


def test_lines_that_are_not_json_or_nest_too_deep_are_events_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    body = """
sys.stdout.write("not json\\n")
sys.stdout.write("[" * 200 + "]" * 200 + "\\n")
sys.stdout.write("[1, 2]\\n")  # JSON, but not a message: skipped
sys.stdout.write('{"neither": "method nor id"}\\n')
send({"method": "after", "params": {"ok": True}})
"""

    async def case() -> list[Any]:
        rpc = child(tmp_path, body)
        await rpc.start()
        events = await drain(rpc)
        await rpc.close(grace_s=5)
        return events

    events = run(case)
    assert [(e.method, e.kind) for e in events] == [
        ("agc/invalidLine", "notification"),
        ("agc/invalidLine", "notification"),
        ("after", "notification"),
    ]
    assert events[0].params == {"bytes": 9, "problem": "syntax"}
    assert events[1].params["problem"] == "depth"


def test_a_line_over_the_size_limit_ends_the_session_with_that_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agc.serve._stdio as stdio  # noqa: PLC0415

    monkeypatch.setattr(stdio, "_LINE_LIMIT", 1024)

    async def case() -> tuple[str, ProviderError]:
        rpc = child(tmp_path, 'send({"method": "big", "params": {"x": "y" * 4096}})')
        await rpc.start()
        await rpc.wait_closed()
        with pytest.raises(ProviderError) as caught:
            await rpc.request("x", {}, timeout_s=10)
        await rpc.close(grace_s=5)
        return rpc.exit_text(), caught.value

    text, error = run(case)
    assert text == "the agent sent a line over the size limit"
    assert error.message == text


def test_a_request_of_the_child_is_answered_not_supported_without_a_handler(
    tmp_path: Path,
) -> None:
    body = """
send({"id": "a1", "method": "item/commandExecution/requestApproval", "params": {"cmd": "ls"}})
for message in requests():
    send({"method": "reply", "params": message})
    break
"""

    async def case() -> list[Any]:
        rpc = child(tmp_path, body)
        await rpc.start()
        events = await drain(rpc)
        await rpc.close(grace_s=5)
        return events

    asked, reply = run(case)
    unsupported = {
        "code": -32601,
        "message": "item/commandExecution/requestApproval is not supported",
    }
    assert asked.kind == "server-request"
    assert asked.params == {"cmd": "ls", "agcAnswer": unsupported}
    assert reply.params == {"id": "a1", "error": unsupported}


def test_a_request_of_the_child_gets_the_handlers_answer(tmp_path: Path) -> None:
    body = """
send({"id": 7, "method": "approve", "params": ["not", "an", "object"]})
for message in requests():
    send({"method": "reply", "params": message})
    break
"""
    seen: list[tuple[str, Any]] = []

    def handler(method: str, params: Any) -> tuple[Any, dict[str, Any] | None]:
        seen.append((method, dict(params)))
        return {"decision": "decline"}, None

    async def case() -> list[Any]:
        rpc = child(tmp_path, body, on_server_request=handler)
        await rpc.start()
        events = await drain(rpc)
        await rpc.close(grace_s=5)
        return events

    asked, reply = run(case)
    assert seen == [("approve", {})]  # params that are not an object are given as {}
    assert asked.params == {"agcAnswer": {"decision": "decline"}}
    assert reply.params == {"id": 7, "result": {"decision": "decline"}}


def test_stderr_is_counted_and_logged_redacted_only_when_asked(tmp_path: Path) -> None:
    body = f"""
sys.stderr.write("starting\\n")
sys.stderr.write("token {SECRET}\\n")
sys.stderr.flush()
"""
    log = tmp_path / "codex.log"

    async def case(with_log: bool) -> int:
        rpc = child(tmp_path, body, stderr_log=log if with_log else None)
        await rpc.start()
        await rpc.wait_closed()
        await rpc.close(grace_s=5)
        return rpc.stderr_lines

    assert run(lambda: case(False)) == 2
    assert not log.exists()
    assert run(lambda: case(True)) == 2
    text = log.read_text()
    assert text == "starting\ntoken [REDACTED:github-token]\n"


@pytest.mark.parametrize(
    ("error", "exists", "code", "message"),
    [
        (FileNotFoundError(errno.ENOENT, "gone"), False, "codex_cli_binary_missing",
         "codex was not found"),
        (FileNotFoundError(errno.ENOENT, "gone"), True, "codex_cli_native_dependency_missing",
         "codex exists but cannot be started: its loader or interpreter is missing"),
        (PermissionError(errno.EACCES, "denied"), True, "codex_cli_not_executable",
         "codex is not executable here"),
        (OSError(errno.ENOEXEC, "Exec format error"), True, "codex_cli_not_executable",
         "codex is not executable here"),
        (OSError(errno.EIO, "Input/output error"), True, "codex_cli_not_executable",
         "codex could not be started (Input/output error)"),
    ],
)  # fmt: skip
def test_a_failed_start_names_its_cause(
    tmp_path: Path, error: OSError, exists: bool, code: str, message: str
) -> None:
    binary = tmp_path / "codex"
    if exists:
        binary.write_text("")
    blocker = spawn_error(error, str(binary))
    assert (blocker.code, blocker.message) == (code, message)


def test_start_of_a_missing_binary_is_a_provider_error(tmp_path: Path) -> None:
    async def case() -> ProviderError:
        rpc = StdioRpc([str(tmp_path / "codex"), "app-server"], env={}, cwd=tmp_path)
        with pytest.raises(ProviderError) as caught:
            await rpc.start()
        return caught.value

    assert run(case).code == "codex_cli_binary_missing"
