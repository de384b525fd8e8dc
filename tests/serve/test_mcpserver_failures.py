"""A ``codex mcp-server`` session that cannot be had: a binary that is missing, a
process that is not an MCP server (it exits, or never answers), a thread to resume in
a process that has ended, and a turn asked of a session that never started. Each is a
:class:`ProviderError` (or a failed turn) with the reason a caller can act on. The
working protocol is tested in test_mcpserver.py against an MCP double."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from agc.serve import ProviderError
from agc.serve._mcpserver import McpServerOptions, McpServerSession

REACHES_INSIDE = {
    "agc.serve._mcpserver": "the mcp-server session's start and refusals on their own; "
    "the supervisor's use of sessions is tested with scripted ones",
}


def session_of(tmp_path: Path, argv: tuple[str, ...], *, timeout: float = 10.0) -> McpServerSession:
    return McpServerSession(
        McpServerOptions(
            binary=argv[0], env={}, workspace=tmp_path, handshake_timeout_s=timeout, argv=argv
        )
    )


def run(case: Any) -> Any:
    return asyncio.run(asyncio.wait_for(case(), 30))


def _start_error(session: McpServerSession) -> Any:
    async def case() -> tuple[ProviderError, bool]:
        with pytest.raises(ProviderError) as caught:
            await session.start()
        return caught.value, session.alive()

    return run(case)


def test_a_missing_binary_is_named(tmp_path: Path) -> None:
    error, alive = _start_error(session_of(tmp_path, (str(tmp_path / "codex"), "mcp-server")))
    assert (error.code, error.message) == ("codex_cli_binary_missing", "codex was not found")
    assert not alive


def test_a_process_that_is_not_an_mcp_server_fails_the_handshake(tmp_path: Path) -> None:
    argv = (sys.executable, "-S", "-c", "print('hello, not JSON-RPC')")
    error, alive = _start_error(session_of(tmp_path, argv))
    assert error.code == "stdio_protocol_not_wired"
    assert not alive


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_process_that_never_answers_times_the_handshake_out_and_is_ended(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pid"
    script = (
        f"import os, sys; open({str(pid_file)!r}, 'w').write(str(os.getpid())); sys.stdin.read()"
    )
    error, alive = _start_error(
        session_of(tmp_path, (sys.executable, "-S", "-c", script), timeout=1.0)
    )
    assert error.code == "stdio_protocol_not_wired"
    assert error.message == ("codex mcp-server did not finish initialize and tools/list within 1 s")
    assert not alive
    assert not _running(int(pid_file.read_text()))  # no process is left behind


def test_a_thread_cannot_be_resumed_and_a_turn_needs_a_started_session(tmp_path: Path) -> None:
    session = session_of(tmp_path, (sys.executable, "mcp-server"))

    async def case() -> tuple[ProviderError, Any]:
        with pytest.raises(ProviderError) as caught:
            await session.open_thread("th-0")
        await session.open_thread(None)  # a new thread is opened by the first turn

        async def ignore(event: Any) -> None:
            raise AssertionError(event)

        result = await session.run_turn("hi", ignore, client_id="c-1")
        await session.interrupt()  # no call running: nothing to do
        await session.close()
        return caught.value, result

    error, result = run(case)
    assert error.code == "thread_not_resumable"
    assert "start a new conversation" in error.message
    assert (result.status, result.error_code) == ("failed", "provider_exited")
    assert result.error_message == "codex mcp-server has ended"
