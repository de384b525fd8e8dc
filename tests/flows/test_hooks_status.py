"""Tests for agc.flows.hooks_status: agc hooks status names the hook's last capture
failure, kept by ``agc hook`` for the store the installed command names."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from agc.capture import hook_command, install_hooks
from agc.cli.app import main
from agc.cli.hook import run as run_hook
from agc.flows import hooks_status


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {"HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "state")}
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME", "AGC_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def _event(session: str) -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "hook_event_name": "BeforeTool",
            "tool_name": "run_shell_command",
            "tool_input": {"command": "ls"},
            "cwd": "/work/app",
            "transcript_path": "/nowhere/session.json",
            "timestamp": "2026-12-06T20:00:00.000Z",
        }
    ).encode()


def test_status_names_the_last_failure_of_the_hooks_store(
    tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store-is-a-file"
    store.write_text("not a folder")
    install_hooks(
        "gemini",
        "user",
        command=hook_command("/opt/agc", "gemini", store=str(store)),
        environ=env,
    )
    assert hooks_status("gemini", "user", environ=env).last_failure is None

    for session in ("s1", "s2"):
        args = ["--client", "gemini", "--store", str(store)]
        assert run_hook(args, stdin=io.BytesIO(_event(session))) == 0

    failure = hooks_status("gemini", "user", environ=env).last_failure
    assert failure is not None
    assert failure["client"] == "gemini"
    assert failure["run_id"] == "gemini-s2"
    assert hooks_status("codex", "user", environ=env).last_failure is None  # not installed

    capsys.readouterr()
    main(["hooks", "status", "--client", "gemini", "--json"])
    (entry,) = json.loads(capsys.readouterr().out)["clients"]
    assert entry["last_failure"]["run_id"] == "gemini-s2"
    main(["hooks", "status", "--client", "gemini"])
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "last capture failure" in x]
    assert "(run gemini-s2, event BeforeTool, at 20" in line  # a UTC time, not milliseconds
    assert "None" not in line


def test_status_with_store_names_the_last_failure_kept_for_that_store(
    tmp_path: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    installed, other = tmp_path / "installed", tmp_path / "other"
    installed.mkdir()
    other.write_text("not a folder")  # a store whose failures go to the fallback file
    install_hooks(
        "gemini",
        "user",
        command=hook_command("/opt/agc", "gemini", store=str(installed)),
        environ=env,
    )
    assert (
        run_hook(["--client", "gemini", "--store", str(other)], stdin=io.BytesIO(_event("s9"))) == 0
    )

    def last(*args: str) -> Any:
        capsys.readouterr()
        main(["hooks", "status", "--client", "gemini", "--json", *args])
        (entry,) = json.loads(capsys.readouterr().out)["clients"]
        return entry["last_failure"]

    assert last() is None  # nothing failed in the store the hook writes to
    assert last("--store", str(other))["run_id"] == "gemini-s9"
    main(["hooks", "status", "--client", "gemini", "--store", str(other)])
    out = capsys.readouterr().out
    assert f"note: the hook writes to {installed}, not {other}" in out
    assert "last capture failure: " in out
