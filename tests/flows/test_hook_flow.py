"""A client session captured hook by hook (:func:`agc.flows.capture_hook_event`): each
event appended and vouched for by a checkpoint, the run sealed at the session's end,
and every failure of the store kept while the client is never stopped."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.capture import run_id_for
from agc.flows import capture_failures, capture_hook_event
from agc.integrity import (
    ToolEventWriter,
    check_run,
    read_run_manifest,
    recover_run,
)
from tests.conftest import examples, sampled
from tests.faults import failing_disk, kill_at_step

SESSION = "0199a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"
RUN = run_id_for("claude-code", SESSION)


def _event(name: str, transcript: Path | None = None, **members: Any) -> bytes:
    payload = {
        "session_id": SESSION,
        "transcript_path": None if transcript is None else str(transcript),
        "cwd": "/home/u/project",
        "hook_event_name": name,
        **members,
    }
    return json.dumps(payload).encode()


def _call(index: int) -> bytes:
    return _event(
        "PreToolUse",
        tool_name="Bash",
        tool_input={"command": f"echo {index}"},
        tool_use_id=f"toolu_{index}",
    )


def _result(index: int, *, failed: bool = False) -> bytes:
    name = "PostToolUseFailure" if failed else "PostToolUse"
    extra = {"error": "exit 1"} if failed else {"tool_response": {"stdout": f"{index}\n"}}
    return _event(name, tool_name="Bash", tool_input={}, tool_use_id=f"toolu_{index}", **extra)


def _session_file(folder: Path, lines: int) -> Path:
    path = folder / "session.jsonl"
    path.write_text("".join(json.dumps({"type": "user", "n": n}) + "\n" for n in range(lines)))
    return path


def _records(store: Path, run: str = RUN) -> list[dict[str, Any]]:
    path = store / "audit/tool-events" / f"{run}.jsonl"
    return [json.loads(line) for line in path.read_bytes().splitlines()]


_OWN = frozenset({"sealed", "capture-failed"})  # agc's own records, not the client's events


def _events(store: Path, run: str = RUN) -> list[dict[str, Any]]:
    """The records of the client's events (without agc's ``sealed`` and
    ``capture-failed`` records)."""
    return [record for record in _records(store, run) if record["event"] not in _OWN]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    folder = tmp_path / "volume" / "store"
    folder.mkdir(parents=True)
    return folder


def test_a_session_becomes_a_sealed_complete_run_with_its_facts(
    store: Path, tmp_path: Path
) -> None:
    session = _session_file(tmp_path, 5)
    outcomes = [
        capture_hook_event("claude-code", data, store=store)
        for data in (
            _event("SessionStart", source="startup"),
            _call(1),
            _result(1),
            _call(2),
            _result(2, failed=True),
            _event("Stop", session),
            _event("SessionEnd", session, reason="exit"),
        )
    ]
    assert [o.failure for o in outcomes] == [None] * 7
    assert all(o.appended for o in outcomes)
    assert [o.sealed for o in outcomes] == [False] * 5 + [True, True]  # Stop, SessionEnd
    report = check_run(RUN, store)
    assert report.complete, report.missing
    events = _events(store)
    assert [e["event"] for e in _records(store)] == [
        "session-start", "call", "result", "call", "result", "stop", "sealed", "session-end",
        "sealed",
    ]  # fmt: skip
    # Each seal names the prefix of the session file the transcript holds.
    data = session.read_bytes()
    last = _records(store)[-1]["sealed"]
    assert last == {
        "lines": 5,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    assert [e["call_id"] for e in events if e["event"] == "call"] == ["toolu_1", "toolu_2"]
    manifest = read_run_manifest(RUN, store)
    assert manifest is not None
    assert manifest.artifacts["transcript"].records == 5
    attributes = dict(manifest.attributes or {})
    assert attributes["client"] == "claude-code"
    assert attributes["session_id"] == SESSION
    assert (attributes["tool_calls"], attributes["tool_failures"]) == (2, 1)
    assert attributes["project"].startswith("sha256:")
    assert "/home/u/project" not in json.dumps(attributes)


def test_before_its_end_the_run_is_unsealed_and_every_event_is_vouched_for(
    store: Path,
) -> None:
    for index in range(3):
        capture_hook_event("claude-code", _call(index), store=store)
        capture_hook_event("claude-code", _result(index), store=store)
    report = check_run(RUN, store)
    assert not report.complete
    assert {f.code for f in report.findings} >= {"unsealed"}
    recovery = recover_run(RUN, store)
    events = next(a for a in recovery.artifacts if a.kind == "tool-events")
    assert (events.records, events.verified_bytes) == (6, events.bytes)
    assert check_run(RUN, store).complete is False  # an empty transcript: never complete
    assert len(_events(store)) == 6


def test_a_resumed_session_continues_its_sealed_run_as_a_new_segment(
    store: Path, tmp_path: Path
) -> None:
    session = _session_file(tmp_path, 2)
    for data in (_call(1), _result(1), _event("SessionEnd", session)):
        capture_hook_event("claude-code", data, store=store)
    with session.open("a") as handle:
        handle.write(json.dumps({"type": "user", "n": "resumed"}) + "\n")
    for data in (_event("SessionStart", source="resume"), _event("SessionEnd", session)):
        outcome = capture_hook_event("claude-code", data, store=store)
        assert outcome.failure is None
    report = check_run(RUN, store)
    assert report.complete, report.missing
    manifest = read_run_manifest(RUN, store)
    assert manifest is not None
    transcript = manifest.artifacts["transcript"]
    assert (transcript.records, len(transcript.segments)) == (3, 1)
    assert len(_events(store)) == 5


@pytest.mark.parametrize("hook", ["SessionEnd", "Stop"])
@pytest.mark.parametrize("transcript", ["none", "gone"])
def test_a_session_or_turn_end_without_its_session_file_keeps_the_failure_and_stays_unsealed(
    store: Path, tmp_path: Path, transcript: str, hook: str
) -> None:
    capture_hook_event("claude-code", _call(1), store=store)
    path = None if transcript == "none" else tmp_path / "gone.jsonl"
    outcome = capture_hook_event("claude-code", _event(hook, path), store=store)
    assert outcome.appended
    assert not outcome.sealed
    assert outcome.failure is not None
    # A session file named but gone has its own code; an event naming none is invalid.
    expected = "input-invalid" if transcript == "none" else "session-file-missing"
    assert outcome.failure.code == expected
    assert outcome.kept_at == store / "capture/failures.jsonl"
    assert [f.run_id for f in capture_failures(store)] == [RUN]
    assert not check_run(RUN, store).complete
    # The failure is in the run itself too (its file was free: written at once).
    (recorded,) = [r for r in _records(store) if r["event"] == "capture-failed"]
    assert (recorded["hook"], recorded["failure"]["code"]) == (hook, expected)
    assert not (store / "capture" / "pending").exists() or not any(
        (store / "capture" / "pending").iterdir()
    )


def test_hooks_firing_in_parallel_append_every_event_once(store: Path) -> None:
    threads = [
        threading.Thread(
            target=lambda i=index: [
                capture_hook_event("claude-code", data, store=store, lock_wait_ms=5000)
                for data in (_call(i), _result(i))
            ]
        )
        for index in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = _events(store)
    assert [e["seq"] for e in events] == list(range(16))
    assert sorted(e["call_id"] for e in events if e["event"] == "call") == sorted(
        f"toolu_{i}" for i in range(8)
    )
    assert capture_failures(store) == []
    recovery = recover_run(RUN, store)
    assert all(a.verified_bytes == a.bytes for a in recovery.artifacts)


def _fail_store(store: Path, how: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    if how == "missing":
        store.rmdir()
        store.parent.rmdir()  # its folder is gone too: not made (an unmounted volume)
    elif how == "file":
        store.rmdir()
        store.write_text("not a store")
    elif how in {"full", "read-only"}:
        err = errno.ENOSPC if how == "full" else errno.EROFS
        return failing_disk(monkeypatch, store, err)
    elif how == "locked":
        capture_hook_event("claude-code", _call(0), store=store)
        return ToolEventWriter(RUN, store=store, resume=True)
    return None


@pytest.mark.parametrize("how", ["missing", "file", "full", "read-only", "locked"])
def test_a_store_that_cannot_take_the_event_keeps_the_failure_and_never_raises(
    store: Path, tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _fail_store(store, how, monkeypatch)
    fault = held.__enter__() if hasattr(held, "__enter__") and how != "locked" else None
    try:
        outcome = capture_hook_event("claude-code", _call(1), store=store, lock_wait_ms=50)
    finally:
        if fault is not None:
            held.__exit__(None, None, None)
        if how == "locked":
            held.abort()
    assert outcome.failure is not None
    assert not outcome.appended
    assert outcome.failure.run_id == RUN
    assert outcome.kept_at is not None
    in_store = how in {"locked"}
    expected = store / "capture/failures.jsonl" if in_store else None
    if expected is not None:
        assert outcome.kept_at == expected
    else:
        assert outcome.kept_at == tmp_path / "state/agc/capture-failures.jsonl"
    assert [f.code for f in capture_failures(store)] == [outcome.failure.code]
    if how != "file":
        assert not check_run(RUN, store).complete


def test_a_sealed_run_that_missed_an_event_is_never_complete(store: Path, tmp_path: Path) -> None:
    session = _session_file(tmp_path, 3)
    capture_hook_event("claude-code", _call(1), store=store)
    held = ToolEventWriter(RUN, store=store, resume=True)
    missed = capture_hook_event("claude-code", _result(1), store=store, lock_wait_ms=20)
    held.abort()
    assert missed.failure is not None
    assert missed.failure.code == "run-locked"
    sealed = capture_hook_event("claude-code", _event("SessionEnd", session), store=store)
    assert sealed.sealed
    report = check_run(RUN, store)
    assert not report.complete
    assert [f.code for f in report.findings if f.severity == "error"] == ["capture-failed"]
    assert report.verdict.word == "capture-failed"


def test_a_missing_store_whose_folder_exists_is_made_by_the_first_event(
    store: Path,
) -> None:
    store.rmdir()
    outcome = capture_hook_event("claude-code", _call(1), store=store)
    assert outcome.failure is None
    assert outcome.appended
    assert len(_events(store)) == 1


def test_an_unreadable_event_is_kept_as_a_failure_without_a_run(store: Path) -> None:
    outcome = capture_hook_event("gemini", b"{not json", store=store)
    assert outcome.failure is not None
    assert (outcome.failure.code, outcome.run_id) == ("hook-event-invalid", None)
    assert [f.code for f in capture_failures(store)] == ["hook-event-invalid"]
    assert not (store / "audit").exists()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    payload=st.one_of(
        st.binary(max_size=64),
        st.dictionaries(
            st.sampled_from(["session_id", "hook_event_name", "tool_name", "tool_input"]),
            st.one_of(st.none(), st.text(max_size=12), st.integers(), st.lists(st.integers())),
        ).map(lambda d: json.dumps(d).encode()),
    )
)
def test_any_event_is_appended_or_kept_as_a_failure(store: Path, payload: bytes) -> None:
    before = len(capture_failures(store))
    outcome = capture_hook_event("codex", payload, store=store)
    assert outcome.appended != (outcome.failure is not None)
    assert len(capture_failures(store)) == before + (outcome.failure is not None)


def _hook_in_child(store: Path, step: int, data: bytes) -> int:
    """Fork; the child captures one event, killed at its ``step``-th mutating call."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        calls = kill_at_step(step)
        try:
            capture_hook_event("claude-code", data, store=store)
        finally:
            os._exit(min(calls(), 250) if step > 10**6 else 0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.real_fsync
@pytest.mark.parametrize("killed", ["call", "stop"])
def test_a_hook_killed_at_any_step_loses_no_earlier_event_and_the_next_one_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, killed: str
) -> None:
    """Crash points between the append and its checkpoint, and inside a turn's seal,
    included: the run's earlier events stay, the next hook still appends (recovering
    what no checkpoint vouched for, which the gate then reports), and `agc recover`
    seals the rest."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    session = _session_file(tmp_path, 3)
    data = _call(99) if killed == "call" else _event("Stop", session)
    probe = tmp_path / "probe"
    probe.mkdir()
    capture_hook_event("claude-code", _call(0), store=probe)
    steps = _hook_in_child(probe, 10**9, data)
    assert 2 <= steps < 250, steps
    for step in sampled(range(1, steps + 1), keep=12, seed=29):
        store = tmp_path / f"s{step}"
        store.mkdir()
        capture_hook_event("claude-code", _call(0), store=store)
        assert _hook_in_child(store, step, data) == 9, f"step {step}"
        outcome = capture_hook_event("claude-code", _result(0), store=store)
        assert outcome.appended, (step, outcome.failure)
        calls = [e for e in _events(store) if e["event"] == "call"]
        assert calls[0]["call_id"] == "toolu_0", step
        assert _events(store)[-1]["event"] == "result", step
        recover_run(RUN, store)
        report = check_run(RUN, store, allow_recovered=True)
        errors = {f.code for f in report.findings if f.severity == "error"}
        assert errors <= {"empty", "capture-failed"}, (step, report.missing)
        ids = [e["call_id"] for e in _events(store)]
        assert ids.count("toolu_99") <= 1, (step, ids)  # never twice, never torn


def test_a_run_is_sealed_at_each_stop_and_continued_by_the_next_turn(
    store: Path, tmp_path: Path
) -> None:
    """Each Stop seals the run with the session file's complete lines (a line the
    client is still writing waits for the next seal), without facts; the session end
    seals the rest and sets them."""
    run = run_id_for("codex", SESSION)
    session = tmp_path / "rollout.jsonl"
    session.write_bytes(b'{"type":"session_meta"}\n{"type":"response_item"}\n{"type":"ev')

    def fire(name: str, **members: Any) -> bool:
        outcome = capture_hook_event(
            "codex", _event(name, session, model="gpt-5-codex", **members), store=store
        )
        assert outcome.failure is None, outcome.failure
        return outcome.sealed

    assert not fire("PreToolUse", tool_name="shell", tool_input={}, tool_use_id="c1")
    assert fire("Stop")
    assert check_run(run, store).complete
    first = read_run_manifest(run, store)
    assert first is not None
    assert first.artifacts["transcript"].records == 2  # the torn third line waits
    assert first.attributes is None
    with session.open("ab") as handle:
        handle.write(b'ent_msg"}\n{"type":"turn_context"}\n')
    assert not fire("UserPromptSubmit", prompt="again")
    assert not check_run(run, store).complete  # re-opened for the next turn
    assert fire("Stop")
    with session.open("ab") as handle:
        handle.write(b'{"type":"last"}')  # no newline: the session's end takes it whole
    assert fire("SessionEnd", reason="exit")
    report = check_run(run, store)
    assert report.complete, report.missing
    manifest = read_run_manifest(run, store)
    assert manifest is not None
    transcript = manifest.artifacts["transcript"]
    assert (transcript.records, len(transcript.segments)) == (5, 2)
    assert dict(manifest.attributes or {})["model"] == "gpt-5-codex"
    assert dict(manifest.attributes or {})["tool_calls"] == 1
    lines = (store / f"audit/transcripts/{run}.jsonl").read_bytes().splitlines()
    assert json.loads(lines[2])["payload"] == {"type": "event_msg"}


HOOK_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
# What each recorded session did (tests/fixtures/hooks/README.md): two shell calls, the
# second exits 3. A Codex result carries the output text alone, so its failure is not
# seen in the hook event.
RECORDED = {"claude-code": (2, 1), "codex": (2, 0), "gemini": (2, 1)}


@pytest.mark.parametrize("client", sorted(RECORDED))
def test_a_recorded_real_session_becomes_a_complete_run(
    store: Path, tmp_path: Path, client: str
) -> None:
    """The payloads the real clients sent their hooks, replayed in their order."""
    folder = HOOK_FIXTURES / client
    if not (folder / "sequence.json").is_file():
        pytest.skip(f"no recorded {client} hook payloads in {folder}")
    session = tmp_path / "session.jsonl"
    session.write_bytes((folder / "session-file.jsonl").read_bytes())
    names = json.loads((folder / "sequence.json").read_text())
    outcomes = []
    for name in names:
        payload = json.loads((folder / f"{name}.json").read_text())
        payload["transcript_path"] = str(session)
        outcome = capture_hook_event(client, json.dumps(payload).encode(), store=store)  # type: ignore[arg-type]
        outcomes.append(outcome)
        assert outcome.failure is None, (name, outcome.failure)
    assert outcomes[-1].sealed
    run = outcomes[-1].run_id
    assert run is not None
    report = check_run(run, store)
    assert report.complete, report.missing
    events = _events(store, run)
    assert len(events) == len(names)  # every event kept, the unknown ones as "other"
    manifest = read_run_manifest(run, store)
    assert manifest is not None
    facts = dict(manifest.attributes or {})
    assert (facts["tool_calls"], facts["tool_failures"]) == RECORDED[client]
    # What the hooks do not say, the session file does: the model and the agent's times.
    assert {"model", "first_agent_ts", "last_agent_ts"} <= set(facts), facts
    assert manifest.artifacts["transcript"].records == len(session.read_bytes().splitlines())


_STEPS = st.lists(
    st.sampled_from(["call", "result", "failed", "stop", "grow", "torn", "end", "start"]),
    max_size=14,
)


@settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    deadline=None,
    max_examples=examples(60),
)
@given(steps=_STEPS)
def test_any_sequence_of_events_ends_in_a_complete_run_holding_each_once(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str]
) -> None:
    """Turns, resumed sessions, session ends in any order, a session file growing
    (with a line still being written) between them: after a last session end the run
    is complete, holds every event once in order and every line of the session file."""
    root = tmp_path_factory.mktemp("seq")
    store = root / "store"
    store.mkdir()
    session = root / "session.jsonl"
    session.write_bytes(b'{"n":0}\n')
    fired: list[str] = []
    torn = False
    for index, step in enumerate([*steps, "end"]):
        if torn and step in {"grow", "torn", "end"}:
            with session.open("ab") as handle:
                handle.write(b"2}\n")  # the client finishes the line it was writing
            torn = False
        if step in {"grow", "torn"}:
            with session.open("ab") as handle:
                handle.write(b'{"n":1}\n' if step == "grow" else b'{"n":')
            torn = step == "torn"
            continue
        data = {
            "call": _call(index),
            "result": _result(index),
            "failed": _result(index, failed=True),
            "stop": _event("Stop", session),
            "end": _event("SessionEnd", session),
            "start": _event("SessionStart", session, source="resume"),
        }[step]
        outcome = capture_hook_event("claude-code", data, store=store)
        assert outcome.failure is None, (step, outcome.failure)
        fired.append(outcome.event or "")
    report = check_run(RUN, store)
    assert report.complete, report.missing
    assert [e["event"] for e in _events(store)] == fired
    transcript = (store / f"audit/transcripts/{RUN}.jsonl").read_bytes().splitlines()
    kept = [json.loads(line).get("payload") for line in transcript]
    assert kept == [json.loads(line) for line in session.read_bytes().splitlines()]


def test_a_retried_turn_end_whose_seal_was_written_is_not_appended_again(
    store: Path, tmp_path: Path
) -> None:
    """A turn's end taken (and sealed) by a resident capture process that stopped before
    it answered is captured again by its hook with ``retry``: the seal's own records
    after it do not make it look new."""
    session = _session_file(tmp_path, 2)
    capture_hook_event("claude-code", _call(1), store=store)
    stop = _event("Stop", session)
    assert capture_hook_event("claude-code", stop, store=store).sealed
    assert capture_hook_event("claude-code", stop, store=store, retry=True).failure is None
    assert [e["event"] for e in _events(store)] == ["call", "stop"]
    assert check_run(RUN, store).complete
