"""``agc resume FILE --in-place`` of a session file that agc's hooks are capturing: it
says how the captured run verifies from then on and what to do, and that is what
``agc-verify`` then says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agc.capture import run_id_for
from agc.cli.app import main
from agc.cli.verify_main import main as verify
from agc.flows import capture_hook_event

SESSION = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
RUN = run_id_for("claude-code", SESSION)
CALL = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
LINES = [
    {
        "type": "user",
        "sessionId": SESSION,
        "cwd": "/w",
        "uuid": "u1",
        "parentUuid": None,
        "message": {"role": "user", "content": "list the files"},
    },
    {
        "type": "assistant",
        "sessionId": SESSION,
        "cwd": "/w",
        "uuid": "u2",
        "parentUuid": "u1",
        "message": {"id": "m1", "role": "assistant", "content": [CALL]},
    },
]


def _write_session(path: Path) -> None:
    """A Claude Code session file whose last call never got its result (killed)."""
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in LINES))


@pytest.fixture
def captured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A Claude Code session killed in a tool call after one turn's seal, its hooks
    installed for the user and writing to a store: ``(session file, store)``."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.delenv("AGC_HOME", raising=False)
    store = tmp_path / "store"
    store.mkdir()
    assert main(["hooks", "install", "--client", "claude-code", "--store", str(store)]) == 0
    session = tmp_path / "claude" / "projects" / "-w" / f"{SESSION}.jsonl"
    _write_session(session)
    fire("SessionStart", session, store)
    fire("UserPromptSubmit", session, store)
    fire(
        "PreToolUse",
        session,
        store,
        tool_name="Bash",
        tool_input=CALL["input"],
        tool_use_id="toolu_1",
    )
    fire("Stop", session, store)
    return session, store


def fire(name: str, session: Path, store: Path, **members: object) -> None:
    event = {"session_id": SESSION, "hook_event_name": name, "transcript_path": str(session)}
    data = json.dumps(event | members).encode()
    assert capture_hook_event("claude-code", data, store=store).failure is None


def test_a_repair_that_changes_sealed_lines_warns_how_the_run_will_verify(
    captured: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    session, store = captured
    capsys.readouterr()
    # strip removes the unanswered call from a line the turn's seal took
    assert main(["resume", str(session), "--in-place", "--strategy", "strip"]) == 0
    err = capsys.readouterr().err
    (backup,) = session.parent.glob(f"{session.name}.agc-backup-*")
    (warning,) = [line for line in err.splitlines() if "agc's hooks capture" in line]
    assert warning.startswith("warning: ")
    assert f"is the session file of run {RUN}, which agc's hooks capture into store" in warning
    assert f"agc-verify {RUN} fails (transcript-diverges" in warning
    assert f"mv -- {backup} {session}" in warning
    # and so it does, from the session's next turn end on
    assert verify([RUN, "--store", str(store)]) == 0
    event = {"session_id": SESSION, "hook_event_name": "Stop", "transcript_path": str(session)}
    outcome = capture_hook_event("claude-code", json.dumps(event).encode(), store=store)
    assert outcome.failure is not None
    assert outcome.failure.code == "session-file-changed"
    capsys.readouterr()
    assert verify([RUN, "--store", str(store), "--json"]) == 1
    codes = {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "transcript-diverges" in codes


def test_the_undo_it_names_keeps_the_run_verifiable(
    captured: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    session, store = captured
    capsys.readouterr()
    assert main(["resume", str(session), "--in-place", "--strategy", "strip", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["captured_run"]["run_id"] == RUN
    assert report["captured_run"]["store"] == str(store)
    assert isinstance(report["captured_run"]["changed_line"], int)
    Path(report["backup"]).replace(session)  # mv -- BACKUP FILE
    fire("Stop", session, store)
    assert verify([RUN, "--store", str(store)]) == 0


def test_a_repair_that_only_adds_lines_says_the_run_still_verifies(
    captured: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    session, store = captured
    capsys.readouterr()
    # synthesize answers the call after the lines the seal took
    assert main(["resume", str(session), "--in-place", "--strategy", "synthesize"]) == 0
    err = capsys.readouterr().err
    (note,) = [line for line in err.splitlines() if "agc's hooks capture" in line]
    assert note.startswith("note: ")
    assert f"run {RUN}" in note
    assert "the run still verifies" in note
    fire("Stop", session, store)
    assert verify([RUN, "--store", str(store)]) == 0


def test_a_session_not_captured_says_nothing_of_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    session = tmp_path / "claude" / "projects" / "-w" / f"{SESSION}.jsonl"
    _write_session(session)
    assert main(["resume", str(session), "--in-place", "--strategy", "strip", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["captured_run"] is None


def test_a_gemini_cli_session_file_repaired_in_place_is_said_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same for the Gemini CLI: its real session file (a result recorded twice) is
    repaired where the client keeps it, a line its turn's seal took changes, and the
    run's next seal keeps session-file-changed, as the warning says."""
    real = Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / "gemini"
    session_id = "00000000-0000-4000-8000-000000000001"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("AGC_HOME", raising=False)
    store = tmp_path / "store"
    store.mkdir()
    assert main(["hooks", "install", "--client", "gemini", "--store", str(store)]) == 0
    chats = tmp_path / "home" / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text("/home/user/project")
    session = chats / "session-2026-12-06T20-59-00000000.jsonl"
    session.write_bytes((real / "session-file.jsonl").read_bytes())

    def fire(name: str) -> str | None:
        event = {"session_id": session_id, "hook_event_name": name, "transcript_path": str(session)}
        outcome = capture_hook_event("gemini", json.dumps(event).encode(), store=store)
        return None if outcome.failure is None else outcome.failure.code

    assert fire("SessionStart") is None
    assert fire("AfterAgent") is None  # the turn's end seals the file
    capsys.readouterr()
    argv = ["resume", str(session), "--in-place", "--strategy", "synthesize", "--json"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    captured = json.loads(out)["captured_run"]
    assert captured["run_id"] == run_id_for("gemini", session_id)
    assert isinstance(captured["changed_line"], int)
    assert f"agc-verify {captured['run_id']} fails (transcript-diverges" in err
    assert fire("AfterAgent") == "session-file-changed"
