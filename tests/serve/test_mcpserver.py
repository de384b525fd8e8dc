"""The ``codex mcp-server`` session over the official MCP Python SDK, against an MCP
server built with the same SDK (tests/serve/mcp_double.py).

The pinned Codex build (0.171.0) has no ``mcp-server`` subcommand, so the real-client
suite runs the app-server protocol; this checks the MCP handshake rule (``initialize`` +
``tools/list`` naming ``codex`` and ``codex-reply``), the two tools and their
``structuredContent``, and the ``codex/event`` notifications.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agc.serve import ProviderError, ProviderEvent, tool_event
from agc.serve._mcpserver import McpServerOptions, McpServerSession
from agc.serve._trace import Trace
from tests.serve.helpers import run

REACHES_INSIDE = {
    "agc.serve._mcpserver": "the MCP-server session against a scripted peer",
    "agc.serve._trace": "the trace a session writes into",
}

DOUBLE = Path(__file__).with_name("mcp_double.py")


def _session(tmp_path: Path, mode: str) -> McpServerSession:
    options = McpServerOptions(
        binary=sys.executable,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        workspace=tmp_path,
        handshake_timeout_s=20.0,
        argv=(sys.executable, str(DOUBLE), mode),
    )
    return McpServerSession(options)


def test_two_turns_start_and_continue_one_thread(tmp_path: Path) -> None:
    session = _session(tmp_path, "full")
    events: list[ProviderEvent] = []

    async def collect(event: ProviderEvent) -> None:
        events.append(event)

    async def scenario() -> None:
        await session.start()
        assert session.tools == ("codex", "codex-reply")
        assert session.facts.agent_version == "codex-mcp-double 1"
        await session.open_thread(None)
        first = await session.run_turn("hello", collect, client_id="trc-1")
        assert first.status == "completed"
        assert first.reply == "turn 1: hello"
        thread = session.facts.thread_id
        assert thread is not None
        assert session.facts.model == "double-model"
        second = await session.run_turn("again", collect, client_id="trc-2")
        assert second.reply == "turn 2: again"  # codex-reply on the same thread
        assert session.facts.thread_id == thread
        await session.close()
        assert not session.alive()

    run(scenario())
    kinds = [event.params["msg"]["type"] for event in events]
    assert kinds == [
        "session_configured",
        "exec_command_begin",
        "exec_command_end",
        "exec_command_begin",
        "exec_command_end",
    ]
    trace = Trace("trc-x", "conv-x", 1, 0, 100)
    records = [tool_event(trace.add("codex", e.method, e.params, e.kind)) for e in events]
    assert [r["type"] if r else None for r in records] == [
        None,
        "tool.call",
        "tool.result",
        "tool.call",
        "tool.result",
    ]


def test_a_server_without_codex_reply_is_not_the_protocol(tmp_path: Path) -> None:
    session = _session(tmp_path, "no-reply")

    async def scenario() -> None:
        with pytest.raises(ProviderError) as raised:
            await session.start()
        assert raised.value.code == "stdio_protocol_not_wired"
        assert "codex-reply" in raised.value.message

    run(scenario())


def test_a_thread_of_an_ended_process_is_not_resumable(tmp_path: Path) -> None:
    session = _session(tmp_path, "full")

    async def scenario() -> None:
        await session.start()
        with pytest.raises(ProviderError) as raised:
            await session.open_thread("thr-gone")
        assert raised.value.code == "thread_not_resumable"
        await session.close()

    run(scenario())


def test_a_missing_server_binary_is_named(tmp_path: Path) -> None:
    options = McpServerOptions(
        binary="/nonexistent/codex",
        env={},
        workspace=tmp_path,
        argv=("/nonexistent/codex", "mcp-server"),
    )
    session = McpServerSession(options)

    async def scenario() -> None:
        with pytest.raises(ProviderError) as raised:
            await session.start()
        assert raised.value.code == "codex_cli_binary_missing"

    run(scenario())
