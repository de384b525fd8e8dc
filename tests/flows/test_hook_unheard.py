"""Hook events a client sends to agc's HTTP listener are lost when it is not up: the
session's next synchronous event, captured with the reason, keeps a
``hook-events-unheard`` failure when a turn was running (so the run is never complete),
and a call the transcript holds that the hooks never saw then reads as unheard
(``hooks-stopped``), not as an edit (``transcript-diverges``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.capture import run_id_for
from agc.cli.verify_main import main as verify
from agc.flows import capture_failures, capture_hook_event
from tests.conftest import examples
from tests.flows.test_crosscheck_flow import CALLS, _lines

SESSION = "5a1c0b7e-0000-4000-8000-00000000cafe"
RUN = run_id_for("claude-code", SESSION)
WHY = "no listener was up"

# The events of a Claude Code session, and whether a tool event may fire after each
# before the next synchronous one (a turn is running).
IN_TURN = {
    "SessionStart": False,
    "UserPromptSubmit": True,
    "PreToolUse": True,
    "PostToolUse": True,
    "PreCompact": True,
    "Stop": False,
}
SYNC = {"SessionStart", "UserPromptSubmit", "PreCompact", "Stop"}


def _hook(name: str, transcript: Path | None = None, **members: Any) -> bytes:
    event = {"session_id": SESSION, "cwd": "/home/u/p", "hook_event_name": name, **members}
    if transcript is not None:
        event["transcript_path"] = str(transcript)
    if name in {"PreToolUse", "PostToolUse"}:
        event.setdefault("tool_name", "Bash")
        event.setdefault("tool_input", {"command": "true"})
        event.setdefault("tool_use_id", "toolu_1")
    return json.dumps(event).encode()


def _recorded(store: Path) -> list[dict[str, Any]]:
    path = store / "audit" / "tool-events" / f"{RUN}.jsonl"
    return [json.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "store").mkdir()
    return tmp_path / "store"


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(sorted(IN_TURN)), st.booleans()), min_size=1, max_size=8
    )
)
def test_an_unheard_gap_is_kept_exactly_when_a_turn_was_running(
    steps: list[tuple[str, bool]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Each synchronous event captured with a reason (``unheard``) keeps a failure iff
    the session's previous event left a turn running; a tool event never does (it is
    what may have been lost, not what tells)."""
    store = tmp_path_factory.mktemp("store")
    previous: str | None = None
    expected = 0
    for index, (name, unheard) in enumerate(steps):
        outcome = capture_hook_event(
            "claude-code",
            _hook(name, tool_use_id=f"toolu_{index}"),
            store=store,
            unheard=WHY if unheard else None,
        )
        gap = unheard and name in SYNC and previous is not None and IN_TURN[previous]
        expected += gap
        kept = [f for f in capture_failures(store) if f.code == "hook-events-unheard"]
        assert len(kept) == expected, (steps, index)
        if gap:
            assert WHY in kept[-1].message
        # A Stop here names no session file: that failure of its own is its outcome.
        if name != "Stop":
            assert (outcome.failure is not None) == gap, (steps, index)
        previous = name
    in_run = [
        r
        for r in _recorded(store)
        if r["event"] == "capture-failed" and r["failure"]["code"] == "hook-events-unheard"
    ]
    assert len(in_run) == expected  # written into the run, sealed with it


def _session(store: Path, session: Path, lost: bool) -> None:
    """A session with CALLS; when ``lost``, the hooks' events of the second call never
    arrive and the ``Stop`` says the listener was not up."""
    capture_hook_event("claude-code", _hook("SessionStart", session, source="startup"), store=store)
    capture_hook_event("claude-code", _hook("UserPromptSubmit", session), store=store)
    for index, (call_id, tool) in enumerate(CALLS):
        if lost and index == 1:
            continue
        for name in ("PreToolUse", "PostToolUse"):
            event = _hook(name, session, tool_name=tool, tool_input={}, tool_use_id=call_id)
            assert capture_hook_event("claude-code", event, store=store).failure is None
    session.write_text("".join(line + "\n" for line in _lines(CALLS)))
    stop = capture_hook_event(
        "claude-code", _hook("Stop", session), store=store, unheard=WHY if lost else None
    )
    assert (stop.failure is not None) == lost
    capture_hook_event("claude-code", _hook("SessionEnd", session), store=store)


def test_a_call_the_hooks_missed_while_unheard_is_a_capture_failure_not_an_edit(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _session(store, tmp_path / "s.jsonl", lost=True)
    assert verify([RUN, "--store", str(store), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    codes = {f["code"] for f in report["findings"]}
    assert "transcript-diverges" not in codes
    assert {"capture-failed", "hooks-stopped"} <= codes
    (failed,) = [f for f in report["findings"] if f["code"] == "capture-failed"]
    assert failed["actual"]["codes"] == ["hook-events-unheard"]
    (stopped,) = [f for f in report["findings"] if f["code"] == "hooks-stopped"]
    assert stopped["actual"]["call_id"] == CALLS[1][0]
    assert report["verdict_category"] == "unfinished"


def test_the_same_missing_call_without_a_gap_still_reads_as_an_edit(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: hooks that were heard throughout and miss a call the transcript
    holds say the transcript was edited."""
    session = tmp_path / "s.jsonl"
    capture_hook_event("claude-code", _hook("SessionStart", session, source="startup"), store=store)
    for call_id, tool in (CALLS[0], CALLS[2]):
        for name in ("PreToolUse", "PostToolUse"):
            event = _hook(name, session, tool_name=tool, tool_input={}, tool_use_id=call_id)
            capture_hook_event("claude-code", event, store=store)
    session.write_text("".join(line + "\n" for line in _lines(CALLS)))
    capture_hook_event("claude-code", _hook("Stop", session), store=store)
    assert verify([RUN, "--store", str(store), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["verdict_category"] == "tampered"
    assert "transcript-diverges" in {f["code"] for f in report["findings"]}


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    turns=st.integers(min_value=2, max_value=4),
    data=st.data(),
    told=st.sampled_from(["Stop", "PreCompact", "next prompt"]),
)
def test_only_calls_of_the_unheard_part_of_the_session_read_as_unheard(
    turns: int,
    data: st.DataObject,
    told: str,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A session of several turns, each sealed at its ``Stop``; in turn ``gap`` the
    hooks' events of a call are lost (agc's listener was down), which the ``Stop`` of
    that turn, a ``PreCompact`` after the call, or (the turn ending with no ``Stop``)
    the next turn's prompt finds; a call forged into the session file before the seal
    of turn ``forged`` (or none). The lost call reads as unheard (``hooks-stopped``);
    the forged one too when it lies among the lines sealed with the gap, and as an edit
    (``transcript-diverges``) when it lies in a turn sealed apart from it."""
    gap = data.draw(st.integers(0, turns - (2 if told == "next prompt" else 1)), label="gap")
    forged = data.draw(st.one_of(st.none(), st.integers(0, turns - 1)), label="forged")
    unheard_turns = {gap, gap + 1} if told == "next prompt" else {gap}
    tmp = tmp_path_factory.mktemp("session")
    store, session = tmp / "store", tmp / "s.jsonl"
    store.mkdir()
    written: list[str] = []
    capture_hook_event("claude-code", _hook("SessionStart", session, source="startup"), store=store)
    for turn in range(turns):
        calls = [(f"toolu_{turn}_{i}", tool) for i, tool in enumerate(("Bash", "Read"))]
        unheard = WHY if told == "next prompt" and turn == gap + 1 else None
        capture_hook_event(
            "claude-code", _hook("UserPromptSubmit", session), store=store, unheard=unheard
        )
        for index, (call_id, tool) in enumerate(calls):
            if turn == gap and index == 0:
                continue  # sent to a listener that was not up
            for name in ("PreToolUse", "PostToolUse"):
                event = _hook(name, session, tool_name=tool, tool_input={}, tool_use_id=call_id)
                assert capture_hook_event("claude-code", event, store=store).failure is None
            if turn == gap and told == "PreCompact":
                capture_hook_event(
                    "claude-code", _hook("PreCompact", session), store=store, unheard=WHY
                )
        in_file = calls + ([(f"toolu_forged_{turn}", "Bash")] if turn == forged else [])
        written += _lines(in_file)
        session.write_text("".join(line + "\n" for line in written))
        if turn == gap and told == "next prompt":
            continue  # the turn ended with no Stop (interrupted)
        unheard = WHY if told == "Stop" and turn == gap else None
        capture_hook_event("claude-code", _hook("Stop", session), store=store, unheard=unheard)
    capture_hook_event("claude-code", _hook("SessionEnd", session), store=store)
    assert verify([RUN, "--store", str(store), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    codes = {
        f["actual"]["call_id"]: f["code"]
        for f in report["findings"]
        if f["code"] in {"hooks-stopped", "transcript-diverges"}
    }
    expected = {f"toolu_{gap}_0": "hooks-stopped"}
    if forged is not None:
        expected[f"toolu_forged_{forged}"] = (
            "hooks-stopped" if forged in unheard_turns else "transcript-diverges"
        )
    assert codes == expected
    assert "capture-failed" in {f["code"] for f in report["findings"]}
