"""The app-server session and its JSON-RPC stdio connection, against a real child process
speaking the protocol (tests/serve/appserver_double.py); the real Codex runs in
tests/e2e/test_serve_codex.py."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from agc.serve import ProviderError, ProviderEvent
from agc.serve._appserver import AppServerOptions, AppServerSession, answer_server_request
from agc.serve._stdio import StdioRpc
from tests.serve.helpers import run

REACHES_INSIDE = {
    "agc.serve._appserver": "the app-server session against a scripted peer",
    "agc.serve._stdio": "the JSON-RPC stdio transport under the session",
}

DOUBLE = Path(__file__).with_name("appserver_double.py")


def _session(tmp_path: Path, mode: str, **options: object) -> AppServerSession:
    script = tmp_path / "codex"
    # The session runs `<binary> app-server`; this launcher drops that argument.
    script.write_text(f'#!/bin/sh\nshift\nexec {sys.executable} {DOUBLE} {mode} "$@"\n')
    script.chmod(0o755)
    settings: dict[str, object] = {
        "binary": str(script),
        "env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        "workspace": tmp_path,
        "handshake_timeout_s": 5.0,
        "request_timeout_s": 5.0,
        "stderr_log": tmp_path / "stderr.log",
    }
    settings.update(options)
    return AppServerSession(AppServerOptions(**settings))  # type: ignore[arg-type]


async def _turn(session: AppServerSession, text: str) -> tuple[object, list[ProviderEvent]]:
    events: list[ProviderEvent] = []

    async def collect(event: ProviderEvent) -> None:
        events.append(event)

    result = await session.run_turn(text, collect, client_id="trc-1")
    return result, events


def test_a_turn_runs_from_handshake_to_reply(tmp_path: Path) -> None:
    session = _session(tmp_path, "normal")

    async def scenario() -> None:
        await session.start()
        assert session.facts.agent_version == "double/1"
        await session.open_thread(None)
        assert (session.facts.thread_id, session.facts.session_id) == ("thr-1", "sess-thr-1")
        assert session.facts.model == "double-model"
        result, events = await _turn(session, "hello")
        assert result.status == "completed"  # type: ignore[attr-defined]
        assert result.reply == "reply: hello"  # type: ignore[attr-defined]
        methods = [event.method for event in events]
        assert methods == [
            "turn/started",
            "item/started",
            "item/completed",
            "item/completed",
            "turn/completed",
        ]
        second, _ = await _turn(session, "again")  # the same process, the same thread
        assert second.reply == "reply: again"  # type: ignore[attr-defined]
        await session.close()
        assert not session.alive()

    run(scenario())
    log = (tmp_path / "stderr.log").read_text()
    assert "[REDACTED:openai-key]" in log
    assert "Q" * 40 not in log


def test_resume_asks_for_the_thread_by_id(tmp_path: Path) -> None:
    session = _session(tmp_path, "normal")

    async def scenario() -> None:
        await session.start()
        await session.open_thread("thr-earlier")
        assert session.facts.thread_id == "thr-earlier"
        await session.close()

    run(scenario())


def test_an_approval_request_is_declined_and_recorded(tmp_path: Path) -> None:
    session = _session(tmp_path, "approval")

    async def scenario() -> None:
        await session.start()
        await session.open_thread(None)
        result, events = await _turn(session, "x")
        assert result.reply == "decision: decline"  # type: ignore[attr-defined]
        asked = [event for event in events if event.kind == "server-request"]
        assert len(asked) == 1
        assert asked[0].method == "item/commandExecution/requestApproval"
        assert asked[0].params["agcAnswer"] == {"decision": "decline"}
        await session.close()

    run(scenario())
    assert answer_server_request("execCommandApproval", {})[0]["decision"]["denied"]
    result, error = answer_server_request("account/chatgptAuthTokens/refresh", {})
    assert result is None
    assert error is not None
    assert error["code"] == -32601


def test_a_process_that_exits_mid_turn_ends_the_turn_as_failed(tmp_path: Path) -> None:
    session = _session(tmp_path, "exit")

    async def scenario() -> None:
        await session.start()
        await session.open_thread(None)
        started = time.monotonic()
        result, events = await _turn(session, "x")
        assert time.monotonic() - started < 5
        assert result.status == "failed"  # type: ignore[attr-defined]
        assert result.error_code == "provider_exited"  # type: ignore[attr-defined]
        assert result.error_message == "the agent process exited with code 3"  # type: ignore[attr-defined]
        assert [event.method for event in events] == ["turn/started", "item/started"]
        assert not session.alive()
        await session.close()

    run(scenario())


def test_interrupt_ends_a_running_turn_as_cancelled(tmp_path: Path) -> None:
    session = _session(tmp_path, "hang")

    async def scenario() -> None:
        await session.start()
        await session.open_thread(None)
        events: list[ProviderEvent] = []

        async def collect(event: ProviderEvent) -> None:
            events.append(event)

        turn = asyncio.create_task(session.run_turn("x", collect, client_id="trc-1"))
        while not any(event.method == "item/started" for event in events):
            await asyncio.sleep(0.01)
        await session.interrupt()
        result = await asyncio.wait_for(turn, 5)
        assert result.status == "cancelled"
        assert result.error_code == "turn_interrupted"
        assert session.alive()  # an interrupt keeps the process
        await session.close()

    run(scenario())


def test_a_silent_process_fails_the_handshake_in_time(tmp_path: Path) -> None:
    session = _session(tmp_path, "silent", handshake_timeout_s=0.5)

    async def scenario() -> None:
        started = time.monotonic()
        with pytest.raises(ProviderError) as raised:
            await session.start()
        assert raised.value.code == "stdio_protocol_not_wired"
        assert time.monotonic() - started < 4
        assert not session.alive()

    run(scenario())


def test_close_ends_the_whole_process_group(tmp_path: Path) -> None:
    session = _session(tmp_path, "spawn")

    async def scenario() -> None:
        await session.start()
        log = tmp_path / "stderr.log"
        for _ in range(200):
            if "child" in log.read_text():
                break
            await asyncio.sleep(0.01)
        child = int(log.read_text().split("child ")[1].split()[0])
        assert Path(f"/proc/{child}").exists()
        await session.close()
        for _ in range(100):
            state = Path(f"/proc/{child}/stat")
            if not state.exists() or state.read_text().split()[2] == "Z":
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"the tool process {child} outlived the session")

    run(scenario())


@pytest.mark.parametrize(
    ("binary", "code"),
    [
        ("/nonexistent/codex", "codex_cli_binary_missing"),
        ("/etc/hostname", "codex_cli_not_executable"),
    ],
)
def test_spawn_failures_name_the_blocker(tmp_path: Path, binary: str, code: str) -> None:
    rpc = StdioRpc([binary, "app-server"], env={}, cwd=tmp_path)

    async def scenario() -> None:
        with pytest.raises(ProviderError) as raised:
            await rpc.start()
        assert raised.value.code == code

    run(scenario())


def test_a_request_to_a_dead_process_fails_at_once(tmp_path: Path) -> None:
    rpc = StdioRpc(["/bin/sh", "-c", "exit 0"], env={}, cwd=tmp_path)

    async def scenario() -> None:
        await rpc.start()
        await rpc.wait_closed()
        with pytest.raises(ProviderError) as raised:
            await rpc.request("initialize", {}, timeout_s=5)
        assert raised.value.code == "provider_exited"
        assert await rpc.events.get() is None
        await rpc.close()

    run(scenario())


def test_a_line_nested_too_deep_is_an_invalid_line_not_the_end(
    tmp_path: Path,
) -> None:
    session = _session(tmp_path, "deep")

    async def scenario() -> None:
        await session.start()
        await session.open_thread(None)
        result, events = await _turn(session, "hello")
        assert result.status == "completed"  # type: ignore[attr-defined]
        assert result.reply == "reply: hello"  # type: ignore[attr-defined]
        invalid = [event.params for event in events if event.method == "agc/invalidLine"]
        assert invalid == [
            {"bytes": 10_046, "problem": "depth"},  # the whole line, its newline included
            {"bytes": 646, "problem": "depth"},
        ]
        assert session.alive()
        await session.close()

    run(scenario())
