"""``agc serve`` launches the real Codex (``codex app-server`` 0.171.0 from npm) with the
enabled items of its extension store.

A plugin imported into the store holds a skill and a stdio MCP server written with the
MCP Python SDK (tests/e2e/mcp_echo_server.py). The served Codex must list the skill in
``skills/list`` (reported in ``/readyz``), start the MCP server before the first turn,
and call its tool in a turn (the scripted model asks for the call; the reply quotes the
tool's answer, and the server notes the call in a file). Disabling the skill changes
the extensions' fingerprint: the next turn restarts the Codex process, which no longer
lists it.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agc.cli.app import main
from tests.e2e.model_server import ModelServer, ReactiveScript
from tests.e2e.serve_harness import ServeProcess
from tests.extensions.builders import write_skill

ECHO_SERVER = Path(__file__).with_name("mcp_echo_server.py")


def _agc_ext(capsys: pytest.CaptureFixture[str], store: Path, *argv: str) -> Any:
    code = main(["ext", *argv, "--store", str(store), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _plugin(root: Path, calls: Path) -> Path:
    """A plugin with the skill ``pixel-art`` and the stdio MCP server ``echo``."""
    plugin = root / "echo-plugin"
    write_skill(plugin / "skills" / "pixel-art", "pixel-art", description="Draw pixel art.")
    (plugin / ".codex-plugin").mkdir()
    (plugin / ".codex-plugin" / "plugin.json").write_text(
        json.dumps(
            {
                "name": "echo-plugin",
                "version": "1.0.0",
                "skills": "./skills/",
                "mcpServers": "./.mcp.json",
            }
        )
    )
    shutil.copyfile(ECHO_SERVER, plugin / "server.py")
    (plugin / ".mcp.json").write_text(
        json.dumps({"echo": {"command": sys.executable, "args": ["./server.py", str(calls)]}})
    )
    return plugin


@pytest.fixture
def service(
    tmp_path: Path,
    codex_bin: Path,
    model_server: Callable[[ReactiveScript], ModelServer],
    capsys: pytest.CaptureFixture[str],
) -> Iterator[ServeProcess]:
    server = model_server(ReactiveScript())
    root = tmp_path / "serve"
    store = root / "store"
    calls = tmp_path / "calls.txt"
    _agc_ext(capsys, store, "import", str(_plugin(tmp_path / "in", calls)))
    started = ServeProcess.start(root, server, codex_bin)
    yield started
    started.stop()


def _trace_methods(service: ServeProcess, trace_id: str) -> list[str]:
    return [event["method"] for event in service.trace(trace_id)]


def test_served_codex_lists_the_imported_skill_and_calls_the_imported_mcp_tool(
    service: ServeProcess,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    e2e_figures: list[tuple[str, str]],
) -> None:
    accepted = service.chat("tool: echo_marker hello-from-agc")
    result = service.wait_result(accepted["traceId"])
    assert result["status"] == "completed", result
    assert "marker: hello-from-agc" in result["reply"]["content"]
    assert (tmp_path / "calls.txt").read_text().splitlines() == ["hello-from-agc"]

    ready = service.client.get("/readyz").json()
    section = ready["extensions"]
    reported = section["reported"]
    assert reported["fingerprint"] == section["current"]["fingerprint"]
    skills = reported["skills"]
    assert [skill["name"] for skill in skills["skills"]] == ["pixel-art"]
    assert skills["errors"] == []
    assert skills["failed"] is None
    mcp = reported["mcpServers"]
    assert mcp["servers"] == {"echo": {"status": "ready", "error": None}}
    assert mcp["timedOut"] is False
    started = [
        e for e in service.trace(accepted["traceId"]) if e["method"] == "serve.session.ready"
    ]
    assert started[0]["params"]["extensions"]["skills"]["skills"][0]["name"] == "pixel-art"

    # A change of the extensions restarts the conversation's Codex before its next turn.
    _agc_ext(capsys, service.store, "disable", "pixel-art")
    follow = service.chat("tool: echo_marker second", accepted["conversationId"])
    second = service.wait_result(follow["traceId"])
    assert second["status"] == "completed", second
    assert second["threadId"] == result["threadId"]  # the thread continues
    methods = _trace_methods(service, follow["traceId"])
    assert methods.index("serve.session.restarting") < methods.index("serve.session.ready")
    reported = service.client.get("/readyz").json()["extensions"]["reported"]
    assert reported["skills"] is None  # no skill left to register
    assert reported["mcpServers"]["servers"]["echo"]["status"] == "ready"
    e2e_figures.append(
        (
            "agc serve + extensions (real Codex)",
            f"skill listed; MCP tool answered; restart on a new fingerprint; MCP startup "
            f"awaited {mcp['waitedMs']} ms (first process), "
            f"{reported['mcpServers']['waitedMs']} ms (restarted)",
        )
    )
    assert (tmp_path / "calls.txt").read_text().splitlines() == ["hello-from-agc", "second"]
