"""A captured run's hooks held against its sealed session file: agc-verify finds every
tool call only one of them has (``transcript-diverges``), at its line, and nothing when
the two agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.capture import run_id_for
from agc.cli.verify_main import main as verify
from agc.flows import capture_hook_event, cross_check_capture
from agc.integrity import check_run
from tests.conftest import examples

SESSION = "5a1c0b7e-0000-4000-8000-00000000cafe"
RUN = run_id_for("claude-code", SESSION)


def _hook(name: str, transcript: Path, **members: Any) -> bytes:
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": str(transcript),
            "cwd": "/home/u/p",
            "hook_event_name": name,
            **members,
        }
    ).encode()


def _lines(calls: list[tuple[str, str]], refused: frozenset[str] = frozenset()) -> list[str]:
    """A Claude Code session file: a prompt, then each call and its result (an error
    for the ``refused`` call ids)."""
    lines = [{"type": "user", "sessionId": SESSION, "message": {"role": "user", "content": "go"}}]
    for call_id, tool in calls:
        lines.append(
            {
                "type": "assistant",
                "sessionId": SESSION,
                "message": {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": {}}],
                },
            }
        )
        lines.append(
            {
                "type": "user",
                "sessionId": SESSION,
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": call_id,
                            "content": "Blocked: standalone sleep" if call_id in refused else "ok",
                            "is_error": call_id in refused,
                        }
                    ],
                },
            }
        )
    return [json.dumps(line) for line in lines]


def _capture(store: Path, session: Path, calls: list[tuple[str, str]], written: list[str]) -> None:
    """The hooks see ``calls``; the session file holds ``written`` when it is sealed."""
    capture_hook_event("claude-code", _hook("SessionStart", session, source="startup"), store=store)
    for call_id, tool in calls:
        for name in ("PreToolUse", "PostToolUse"):
            event = _hook(name, session, tool_name=tool, tool_input={}, tool_use_id=call_id)
            assert capture_hook_event("claude-code", event, store=store).failure is None
    session.write_text("".join(line + "\n" for line in written))
    for name in ("Stop", "SessionEnd"):
        assert capture_hook_event("claude-code", _hook(name, session), store=store).failure is None


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "store").mkdir()
    return tmp_path / "store"


CALLS = [("toolu_1", "Bash"), ("toolu_2", "Read"), ("toolu_3", "Bash")]


def test_a_session_file_that_agrees_with_the_hooks_verifies_complete(
    store: Path, tmp_path: Path
) -> None:
    _capture(store, tmp_path / "s.jsonl", CALLS, _lines(CALLS))
    assert verify([RUN, "--store", str(store)]) == 0
    assert cross_check_capture(check_run(RUN, store), store).complete


def test_a_call_removed_from_the_session_file_before_its_seal_is_found(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _capture(store, tmp_path / "s.jsonl", CALLS, _lines([CALLS[0], CALLS[2]]))
    assert check_run(RUN, store).complete  # the seal itself is intact
    assert verify([RUN, "--store", str(store), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    (finding,) = [f for f in report["findings"] if f["code"] == "transcript-diverges"]
    assert finding["actual"] == {"witness": "hooks", "tool": "Read", "call_id": "toolu_2"}
    assert (report["verdict_word"], report["verdict_category"]) == (
        "transcript-diverges",
        "tampered",
    )


def test_a_call_added_to_the_session_file_before_its_seal_is_found_at_its_line(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    forged = [*CALLS[:2], ("toolu_x", "Write"), CALLS[2]]
    _capture(store, tmp_path / "s.jsonl", CALLS, _lines(forged))
    assert verify([RUN, "--store", str(store)]) == 1
    out = capsys.readouterr().out
    assert "transcript-diverges" in out
    assert "Write call with id toolu_x; the hooks never saw it (line 6)" in out
    assert verify(["--all", "--store", str(store)]) == 1


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    calls=st.lists(st.sampled_from(["Bash", "Read", "Edit"]), min_size=1, max_size=6),
    data=st.data(),
)
def test_every_edit_of_the_calls_is_found_and_only_an_edit(
    calls: list[str], data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("x")
    store = folder / "store"
    store.mkdir()
    seen = [(f"toolu_{i}", tool) for i, tool in enumerate(calls)]
    written = data.draw(
        st.sampled_from(["same", "drop", "add"]).flatmap(
            lambda how: st.tuples(st.just(how), st.integers(0, len(seen) - 1))
        )
    )
    how, at = written
    file_calls = list(seen)
    if how == "drop":
        del file_calls[at]
    elif how == "add":
        file_calls.insert(at, ("toolu_forged", "Bash"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(folder / "state"))
        _capture(store, folder / "s.jsonl", seen, _lines(file_calls))
    report = cross_check_capture(check_run(RUN, store), store)
    diverges = [f for f in report.findings if f.code == "transcript-diverges"]
    assert len(diverges) == (0 if how == "same" else 1)
    assert report.complete == (how == "same")


def test_a_run_imported_without_hooks_is_not_cross_checked(store: Path, tmp_path: Path) -> None:
    # one witness only: nothing to hold it against, whatever the file holds
    from agc.cli.app import main  # noqa: PLC0415

    session = tmp_path / f"{SESSION}.jsonl"
    session.write_text("".join(line + "\n" for line in _lines(CALLS)))
    assert main(["import", str(session), "--store", str(store)]) == 0
    assert verify([RUN, "--store", str(store)]) == 0


def test_a_call_the_client_refused_before_its_hooks_is_said_but_not_held_against_the_run(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Claude Code blocks a bare `sleep` before any hook runs, and writes the call and its
    # error into the session file: the hooks never saw a call that never ran.
    blocked = [*CALLS[:2], ("toolu_sleep", "Bash"), CALLS[2]]
    _capture(store, tmp_path / "s.jsonl", CALLS, _lines(blocked, frozenset({"toolu_sleep"})))
    assert verify([RUN, "--store", str(store), "--json"]) == 0
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert (finding["code"], finding["severity"]) == ("transcript-diverges", "warning")
    assert "refused before the hooks ran" in finding["message"]
    assert finding["lines"] == [6, 6]


@pytest.mark.parametrize(
    "command",
    [
        ["resume", RUN, "--check"],
        ["export", RUN, "--out", "exported.jsonl"],
    ],
    ids=["resume", "export"],
)
@pytest.mark.parametrize("edited", [False, True], ids=["agrees", "edited"])
def test_what_reads_a_captured_run_back_refuses_it_when_agc_verify_fails_it(
    store: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
    edited: bool,
) -> None:
    """A session file edited before its seal (a call removed) is tampered evidence to
    agc-verify; agc resume RUN and agc export read nothing back from it."""
    from agc.cli.app import main  # noqa: PLC0415

    _capture(store, tmp_path / "s.jsonl", CALLS, _lines(CALLS[:2] if edited else CALLS))
    monkeypatch.chdir(tmp_path)
    code = main([*command, "--store", str(store)])
    err = capsys.readouterr().err
    if edited:
        assert code == 1
        assert "does not verify" in err
        assert "the hooks saw the Bash call with id toolu_3" in err
        assert not (tmp_path / "exported.jsonl").exists()
    else:
        assert code == 0, err
