"""``agc hook``: exit 0 and nothing on stdout, whatever the arguments, event or store."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agc.cli import agc_main
from agc.cli.app import main
from agc.flows import capture_failures
from tests.conftest import feed_stdin, write_run

EVENT = {
    "session_id": "s-1",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ls"},
    "tool_use_id": "toolu_1",
    "cwd": "/w",
    "transcript_path": None,
}


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.mark.parametrize("entry", [main, agc_main], ids=["typer", "fast-path"])
def test_an_event_is_captured_silently(
    entry: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    feed_stdin(monkeypatch, json.dumps(EVENT).encode())
    assert entry(["hook", "--client", "claude-code", "--store", str(store)]) == 0  # type: ignore[operator]
    out, err = capsys.readouterr()
    assert (out, err) == ("", "")
    lines = (store / "audit/tool-events/claude-code-s-1.jsonl").read_bytes().splitlines()
    assert json.loads(lines[0])["call_id"] == "toolu_1"


@pytest.mark.parametrize(
    "args",
    [
        ["--client", "cursor"],
        [],
        ["--client"],
        ["--client", "codex", "--verbose"],
    ],
    ids=["unknown-client", "no-client", "no-value", "unknown-option"],
)
@pytest.mark.parametrize("entry", [main, agc_main], ids=["typer", "fast-path"])
def test_bad_arguments_exit_0_and_keep_the_failure(
    entry: object,
    args: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    feed_stdin(monkeypatch, json.dumps(EVENT).encode())
    assert entry(["hook", "--store", str(store), *args]) == 0  # type: ignore[operator]
    out, err = capsys.readouterr()
    assert out == ""
    assert "not captured" in err
    assert [f.code for f in capture_failures(store)] == ["usage"]


def test_a_store_that_is_a_file_exits_0_with_one_line_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    store.write_text("a file")
    feed_stdin(monkeypatch, json.dumps(EVENT).encode())
    assert main(["hook", "--client", "gemini", "--store", str(store)]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert "is not a folder" in err
    assert "capture-failures.jsonl" in err


def test_the_installed_command_exits_0_with_stdin_closed(tmp_path: Path) -> None:
    """As a client runs it: a process of its own, here with no stdin at all."""
    store = tmp_path / "store"
    store.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from agc.cli import agc_main; sys.exit(agc_main())",
         "hook", "--client", "codex", "--store", str(store)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env={"XDG_STATE_HOME": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, b"")
    assert [f.code for f in capture_failures(store)] == ["hook-event-invalid"]


def test_runs_json_names_the_client_session_before_and_after_the_seal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    session_file = tmp_path / "session.jsonl"
    session_file.write_text('{"type":"user"}\n')
    odd = "not/a run id"  # hashed into the run id: read back from the record
    for session, name in ((odd, "PreToolUse"), ("s-2", "PreToolUse"), ("s-2", "SessionEnd")):
        event = {**EVENT, "session_id": session, "hook_event_name": name}
        event["transcript_path"] = str(session_file)
        feed_stdin(monkeypatch, json.dumps(event).encode())
        assert main(["hook", "--client", "codex", "--store", str(store)]) == 0
    write_run(store, "plain")
    capsys.readouterr()
    assert main(["runs", "--store", str(store), "--json"]) == 0
    runs = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    sessions = {run_id: (r["state"], r["client"], r["session_id"]) for run_id, r in runs.items()}
    assert sessions == {
        "codex-s-2": ("sealed", "codex", "s-2"),
        next(r for r in runs if r.startswith("codex-h")): ("unsealed", "codex", odd),
        "plain": ("sealed", None, None),
    }


@pytest.mark.parametrize(("port", "taken"), [("23456", True), ("web", False), ("70000", False)])
def test_the_http_port_of_the_installed_command_is_read_and_checked(
    port: str, taken: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--http PORT`` (Claude Code's synchronous events, whose tool events go to agc's
    HTTP listener) is accepted when it is a TCP port; anything else is a usage failure."""
    store = tmp_path / "store"
    store.mkdir()
    feed_stdin(monkeypatch, json.dumps(EVENT).encode())
    assert (
        agc_main(["hook", "--client", "claude-code", "--store", str(store), f"--http={port}"]) == 0
    )
    failures = capture_failures(store)
    if taken:
        assert failures == []
    else:
        assert [f.code for f in failures] == ["usage"]
        assert "is not a TCP port" in failures[0].message


class _Terminal(io.BytesIO):
    """A standard input that is a terminal: a person typed the command."""

    def isatty(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        raise AssertionError("a terminal is not read for an event when the arguments are bad")

    @property
    def buffer(self) -> _Terminal:
        return self


@pytest.mark.parametrize("args", [[], ["--client", "cursor"], ["--client"], ["--verbose"]])
@pytest.mark.parametrize("entry", [main, agc_main], ids=["typer", "fast-path"])
def test_bad_arguments_typed_at_a_terminal_are_a_usage_error(
    entry: object,
    args: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # No client runs it (a client sends the event on a pipe): exit 2, the usage, nothing
    # kept as a capture failure.
    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.setenv("AGC_HOME", str(store))
    monkeypatch.setattr(sys, "stdin", _Terminal())
    assert entry(["hook", *args]) == 2  # type: ignore[operator]
    out, err = capsys.readouterr()
    assert out == ""
    problem, usage = err.splitlines()
    assert problem.startswith("agc hook: ")
    assert usage == "usage: agc hook --client claude-code|codex|gemini [--store S] < event.json"
    assert capture_failures(store) == []


def test_the_failure_of_a_hook_without_arguments_reads_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # run by a client (a pipe): exit 0, and the failure names the command as typed
    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.setenv("AGC_HOME", str(store))
    feed_stdin(monkeypatch, json.dumps(EVENT).encode())
    assert agc_main(["hook"]) == 0
    err = capsys.readouterr().err
    assert "agc hook: --client is required" in err
    assert "agc hook :" not in err
    (failure,) = capture_failures(store)
    assert failure.message == "agc hook: --client is required"
